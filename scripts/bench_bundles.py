"""Time releases at a real game's size: ``make bench-bundles``.

Recreates its own PostgreSQL database (``BENCH_BUNDLES_DATABASE_URL``, default
``promptadmin_bench_bundles``), seeds a game in bulk (``--segments``, default 100,000, over
``--entries`` 1,000 entries, ``--worlds`` 250 worlds and ``--npcs`` 2,000 NPCs, each entry
with three rulesets of 40 and a cast of two; 200 saved scenarios), then prints:

- making the first release (every bundle written), then one after a one-segment change
  (wall seconds, and the rows written);
- the first assemble of that new release in a fresh process (its bundle memory empty;
  the tokenizer loaded, as after any request), then in a process that served the
  release before it (the bundles it shares are in memory), with the memory each took;
- comparing the two releases one segment apart (the full report the API serves), and
  the release against the working copy (which reads the whole working copy);
- with ``--core``, comparing after a change to the core: every scenario assembled again.

Targets (issue 22): the first assemble of a new release in a fresh process under 50 ms; a
one-segment change's full report under 1 s; a change to the core's under 20 s.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.bench_api import prose, recreate_database  # noqa: E402

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/promptadmin_bench_bundles"

FIRST_ASSEMBLE_TARGET = 0.050
ONE_SEGMENT_REPORT_TARGET = 1.0
CORE_REPORT_TARGET = 20.0


def seed(args: argparse.Namespace) -> None:
    """The game, in bulk (history and per-row services would only make seeding slow)."""
    from django.core.management import call_command

    from promptadmin.content.models import (
        NPC,
        Entry,
        EntryNpc,
        EntryRuleset,
        Ruleset,
        Segment,
        World,
    )
    from promptadmin.core.tokens import tokenizer
    from promptadmin.releases.models import Scenario

    call_command("migrate", verbosity=0)
    rng = random.Random(22)
    tok = tokenizer()
    pool = [prose(rng, rng.randrange(30, 120)) for _ in range(3000)]
    counts = [tok.count(text) for text in pool]
    worlds = World.objects.bulk_create(
        [World(slug=f"world-{i}", name=f"World {i}") for i in range(args.worlds)]
    )
    rulesets = Ruleset.objects.bulk_create(
        [Ruleset(slug=f"rules-{i}", name=f"Rules {i}") for i in range(40)]
    )
    npcs = NPC.objects.bulk_create(
        [NPC(slug=f"npc-{i}", name=f"NPC {i}") for i in range(args.npcs)]
    )
    entries = Entry.objects.bulk_create(
        [
            Entry(slug=f"entry-{i}", name=f"Entry {i}", world=worlds[i % len(worlds)])
            for i in range(args.entries)
        ]
    )
    EntryRuleset.objects.bulk_create(
        [
            EntryRuleset(entry=entry, ruleset=rulesets[(i + k * 7) % 40], position=k)
            for i, entry in enumerate(entries)
            for k in range(3)
        ]
    )
    EntryNpc.objects.bulk_create(
        [
            EntryNpc(entry=entry, npc=npcs[(2 * i + k) % len(npcs)], position=k, tier=k)
            for i, entry in enumerate(entries)
            for k in range(2)
        ]
    )
    # Where the segments go: 10 core, 6 per ruleset, then worlds 10%, NPCs 40% and
    # entries 50% (a fifth of those entry_start) of the rest.
    owners = [("core", {})] * 10 + [("ruleset", {"ruleset": r}) for r in rulesets for _ in range(6)]
    rest = args.segments - len(owners)
    owners += [("world", {"world": worlds[i % len(worlds)]}) for i in range(rest // 10)]
    owners += [("npc", {"npc": npcs[i % len(npcs)], "tier": i % 3}) for i in range(rest * 4 // 10)]
    left = args.segments - len(owners)
    owners += [
        ("entry_start" if i % 5 == 0 else "entry", {"entry": entries[i % len(entries)]})
        for i in range(left)
    ]
    rows = []
    for order, (scope, ref) in enumerate(owners):
        pick = rng.randrange(len(pool))
        rows.append(
            Segment(
                scope=scope,
                content=pool[pick],
                token_count=counts[pick],
                token_encoding=tok.name,
                sort_order=order,
                **ref,
            )
        )
    Segment.objects.bulk_create(rows, batch_size=2000)
    Scenario.objects.bulk_create(
        [
            Scenario(
                name=f"scenario {i}",
                entry=entries[(i * 5) % len(entries)].slug,
                first_turn=i % 2 == 0,
                npcs=[{"npc": npcs[(i * 3) % len(npcs)].slug, "tier": 1}],
                token_budget=[4000, 8000, 16000][i % 3],
                expectations=[{"kind": "fits"}],
            )
            for i in range(200)
        ]
    )


def rss_mb() -> float:
    """This process's resident memory now (Linux), in MB."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 1e6


CPU: list[float] = [0.0]  # this process's CPU seconds in the last timed call


def timed(function, *args, **kwargs):  # type: ignore[no-untyped-def]
    """Wall seconds (and, in CPU[0], this process's CPU seconds: PostgreSQL's are not in
    it; on a busy shared machine the wall time is what others' load distorts)."""
    started, cpu = time.perf_counter(), time.process_time()
    value = function(*args, **kwargs)
    CPU[0] = time.process_time() - cpu
    return time.perf_counter() - started, value


def verdict(seconds: float, target: float) -> str:
    return "met" if seconds < target else "MISSED"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--segments", type=int, default=100_000)
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--worlds", type=int, default=250)
    parser.add_argument("--npcs", type=int, default=2000)
    parser.add_argument("--core", action="store_true", help="also time a change to the core")
    args = parser.parse_args()
    database_url = os.environ.get("BENCH_BUNDLES_DATABASE_URL", DEFAULT_DATABASE_URL)
    os.environ.update(
        {
            "DATABASE_URL": database_url,
            "DEBUG": "false",
            "SECRET_KEY": "bench-only-" + "x" * 40,
            "LOG_LEVEL": "WARNING",
            "DJANGO_SETTINGS_MODULE": "promptadmin.settings",
        }
    )
    os.environ.pop("REDIS_URL", None)
    print(f"bench: recreating {database_url} and seeding", flush=True)
    recreate_database(database_url)
    import django

    django.setup()
    from django.core.cache import cache
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from promptadmin.content.assembly import AssembleParams, assemble_prompt
    from promptadmin.content.models import Segment
    from promptadmin.content.services import segments
    from promptadmin.releases import bundles, selectors, services, serving
    from promptadmin.releases.models import Release, ReleaseBundle
    from promptadmin.releases.working import working_version

    started = time.perf_counter()
    seed(args)
    print(f"bench: seeded in {time.perf_counter() - started:.0f} s", flush=True)
    total = Segment.objects.count()
    lines: list[str] = []

    def say(line: str) -> None:
        lines.append(line)
        print(line, flush=True)

    say(f"{total} segments, {args.entries} entries, {args.worlds} worlds, {args.npcs} NPCs")
    seconds, _ = timed(
        services.release_create, actor=None, name="r-base", labels=["production"], confirm=True
    )
    say(
        f"first release (and 200 saved scenarios checked): {seconds:.2f} s "
        f"({CPU[0]:.2f} s CPU), {ReleaseBundle.objects.count()} bundles written"
    )

    segment = Segment.objects.filter(scope="world", world__slug="world-7").order_by("id").first()
    assert segment is not None
    segments.segment_update(actor=None, segment=segment, content=segment.content + " Fog.")
    bundles_before = ReleaseBundle.objects.count()
    with CaptureQueriesContext(connection) as captured:
        seconds, _ = timed(services.release_create, actor=None, name="r-next")
    inserts = sum(q["sql"].lstrip().upper().startswith("INSERT") for q in captured.captured_queries)
    written = ReleaseBundle.objects.count() - bundles_before
    say(
        f"release after a one-segment change: {seconds:.2f} s ({CPU[0]:.2f} s CPU); "
        f"rows written: 1 release, "
        f"{written} bundle(s) ({inserts} INSERT statements)"
    )

    # A game server: the entry of the changed world, with its cast.
    params = AssembleParams(entry="entry-7", first_turn=True, npcs=(("npc-14", 2), ("npc-15", 1)))
    assemble_prompt(params)  # the tokenizer and Django loaded, as after any first request

    def first_assemble(name: str) -> tuple[float, float, int]:
        cache.delete(serving.LABELS_KEY)  # read once, as a worker does after a publish
        before_rss, loaded = rss_mb(), len(bundles.memory)
        seconds, _ = timed(lambda: assemble_prompt(params, load=serving.resolve(name).load))
        return seconds, rss_mb() - before_rss, len(bundles.memory) - loaded

    serving.forget()
    seconds, grown, read = first_assemble("r-next")
    say(
        f"first assemble of r-next in a fresh process: {seconds * 1000:.1f} ms "
        f"({CPU[0] * 1000:.1f} ms CPU), "
        f"{read} bundles read, +{grown:.1f} MB RSS  target < 50 ms: "
        f"{verdict(seconds, FIRST_ASSEMBLE_TARGET)}"
    )
    serving.forget()
    first_assemble("r-base")
    seconds, grown, read = first_assemble("r-next")
    say(
        f"first assemble of r-next after r-base served: {seconds * 1000:.1f} ms "
        f"({CPU[0] * 1000:.1f} ms CPU), "
        f"{read} bundle(s) read"
    )
    # Memory grows with the bundles served: serve 100 entries of r-next.
    serving.forget()
    base_rss = rss_mb()
    for i in range(0, args.entries, max(1, args.entries // 100)):
        entry = AssembleParams(entry=f"entry-{i}", npcs=((f"npc-{2 * i % args.npcs}", 1),))
        assemble_prompt(entry, load=serving.resolve("r-next").load)
    say(
        f"100 entries of r-next served: {len(bundles.memory)} bundles, "
        f"{bundles.memory.size / 1e6:.1f} MB counted, +{rss_mb() - base_rss:.1f} MB RSS"
    )

    seconds, report = timed(selectors.compare_report, "r-base", "r-next")
    assembled = sum(row["assembled"] for row in report["scenarios"])
    say(
        f"compare r-base -> r-next (one segment): {seconds:.2f} s ({CPU[0]:.2f} s CPU), "
        f"{len(report['scenarios'])} scenarios, {assembled} assembled  target < 1 s: "
        f"{verdict(seconds, ONE_SEGMENT_REPORT_TARGET)}"
    )
    seconds, _ = timed(selectors.compare_report, "r-base", "r-next")
    say(
        f"  again (kept by the pair of content hashes): {seconds * 1000:.0f} ms "
        f"({CPU[0] * 1000:.0f} ms CPU)"
    )
    segments.segment_update(actor=None, segment=segment, content=segment.content + " Rain.")
    seconds, report = timed(selectors.compare_report, "r-next", "working")
    assembled = sum(row["assembled"] for row in report["scenarios"])
    say(
        f"compare r-next -> working (one segment): {seconds:.2f} s ({CPU[0]:.2f} s CPU), "
        f"{assembled} assembled  target < 1 s: {verdict(seconds, ONE_SEGMENT_REPORT_TARGET)}"
    )
    seconds, _ = timed(working_version)
    say(f"  of which reading the working copy: {seconds:.2f} s ({CPU[0]:.2f} s CPU)")
    if args.core:
        core = Segment.objects.filter(scope="core").order_by("id").first()
        assert core is not None
        segments.segment_update(actor=None, segment=core, content=core.content + " Be terse.")
        services.release_create(actor=None, name="r-core")
        seconds, report = timed(selectors.compare_report, "r-next", "r-core")
        assembled = sum(row["assembled"] for row in report["scenarios"])
        say(
            f"compare after a change to the core: {seconds:.2f} s ({CPU[0]:.2f} s CPU), "
            f"{assembled} assembled  "
            f"target < 20 s: {verdict(seconds, CORE_REPORT_TARGET)}"
        )
    say(f"releases: {Release.objects.count()}, bundles stored: {ReleaseBundle.objects.count()}")
    print(f"\nload average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
