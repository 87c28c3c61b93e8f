"""Time making releases and comparing them at 10,000 segments: ``make bench-releases``.

Recreates its own PostgreSQL database (``BENCH_RELEASES_DATABASE_URL``, default
``promptadmin_bench_releases``), seeds the API benchmark's game (one entry of 60 segments,
six NPCs, and 10,000 segments of 120 other entries, 40 worlds and 200 NPCs), saves 50
scenarios with expectations, and prints medians of ``--rounds`` runs (default 5) of:

- making a release of the working copy (every segment, texts deduplicated);
- making one more after 20 segments changed (what a publish costs day to day);
- comparing the release with the working copy over 50 scenarios (loading both sides,
  diffing objects and the segments of the bundles that differ, assembling twice each
  scenario whose bundles differ);
- the full report the studio and the API serve (every saved scenario plus each entry's
  first and later turn).

Targets (issue 15): a release under 2 s; 50 scenarios compared under 5 s. Each is printed
with ``met`` or ``MISSED`` (by the median wall time).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.bench_api import recreate_database, seed  # noqa: E402

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/promptadmin_bench_releases"

# Issue 15's targets, in wall seconds (median of the rounds), by what is timed.
RELEASE_TARGET = 2.0  # a release of 10,000 segments
COMPARE_TARGET = 5.0  # 50 scenarios compared over 10,000 segments

Timing = tuple[float, float]  # wall and CPU seconds


def table(rows: list[tuple[str, list[Timing], float | None]]) -> list[str]:
    """The results, one line per operation (median and max wall, median CPU), each with a
    target followed by whether its median met it, as ``make bench`` reports its own."""
    lines = [f"{'operation':<58} {'median s':>9} {'max s':>7} {'CPU s':>7}", "-" * 84]
    for name, values, target in rows:
        walls = [wall for wall, _cpu in values]
        cpu = median(cpu for _wall, cpu in values)
        lines.append(f"{name:<58} {median(walls):>9.2f} {max(walls):>7.2f} {cpu:>7.2f}")
        if target is not None:
            verdict = "met" if median(walls) < target else "MISSED"
            lines.append(f"  target: under {target:.0f} s (median): {verdict}")
    return lines


def timed(function, *args, **kwargs):  # type: ignore[no-untyped-def]
    """Wall seconds and this process's CPU seconds (PostgreSQL's own CPU is not in it:
    on a shared machine, the wall time is what others' load distorts)."""
    started, cpu = time.perf_counter(), time.process_time()
    value = function(*args, **kwargs)
    return (time.perf_counter() - started, time.process_time() - cpu), value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    database_url = os.environ.get("BENCH_RELEASES_DATABASE_URL", DEFAULT_DATABASE_URL)
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
    from promptadmin.content.models import Entry, Segment
    from promptadmin.content.services import segments
    from promptadmin.releases import impact, selectors, services
    from promptadmin.releases.bundles import content_version, release_version
    from promptadmin.releases.scenarios import scenarios_for
    from promptadmin.releases.snapshot import working_content

    seed()
    entries = list(Entry.objects.order_by("slug").values_list("slug", flat=True))
    for index in range(50):
        services.scenario_create(
            actor=None,
            name=f"bench scenario {index}",
            entry=entries[index % len(entries)],
            first_turn=index % 2 == 0,
            token_budget=[800, 2000, 8000][index % 3],
            expectations=[{"kind": "fits"}, {"kind": "max_tokens", "tokens": 1500}],
        )
    total = Segment.objects.filter(active=True).count()
    print(f"bench: {total} active segments, {len(entries)} entries, 50 saved scenarios")

    first, changed, fifty, full = [], [], [], []
    for number in range(args.rounds):
        seconds, release = timed(services.release_create, actor=None, name=f"bench-a-{number}")
        first.append(seconds)
        for segment in Segment.objects.filter(scope="world").order_by("id")[number * 20 :][:20]:
            segments.segment_update(actor=None, segment=segment, content=segment.content + " More.")
        seconds, _ = timed(services.release_create, actor=None, name=f"bench-b-{number}")
        changed.append(seconds)

        def compare_fifty(release=release):  # type: ignore[no-untyped-def]
            old, new = release_version(release), content_version(working_content())
            specs = scenarios_for(())[:50]
            return impact.compare(old, new, specs)

        seconds, report = timed(compare_fifty)
        fifty.append(seconds)
        seconds, report_all = timed(selectors.compare_report, release.name, "working")
        full.append(seconds)
        print(f"bench: round {number + 1} of {args.rounds}", flush=True)
    print()
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    rows = [
        (f"release of {total} segments", first, RELEASE_TARGET),
        ("release after 20 segments changed", changed, None),
        ("compare release vs working, 50 scenarios", fifty, COMPARE_TARGET),
        (f"full report, {len(report_all['scenarios'])} scenarios", full, None),
    ]
    print("\n".join(table(rows)))
    changed_segments = len(report["segments"]["changed"])
    print(f"\nlast compare: {changed_segments} segments changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
