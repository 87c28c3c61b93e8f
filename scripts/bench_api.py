"""Benchmark the REST API's hot path under load: ``make bench``.

1. Recreates its own PostgreSQL database (``BENCH_DATABASE_URL``, default
   ``promptadmin_bench``) and seeds a realistic game: one entry with 60 segments across
   core, two rulesets, world, entry and entry_start, six NPCs with tiers, and a dynamic
   state; about 8,000 tokens before truncation. 10,000 unrelated segments (other worlds,
   entries and NPCs) sit in the same tables.
2. Starts gunicorn against that database and Redis (``BENCH_REDIS_URL``, default DB 12),
   with persistent database connections and DEBUG off, configured as the Dockerfile runs
   it: three sync workers, one request at a time each. (Measured here: threads cost more
   than they bring on two cores; the GIL serialises them and the kept-alive connections
   they serve wait behind one another, tripling p99.)
3. Drives it from a separate process over loopback with wrk (16 connections; Lua scripts
   send the POST bodies and the ``Api-Key`` header) and prints requests/s, p50 and p99 for
   ``POST /api/v1/assemble`` without and with truncation, from a release named in the
   request and from a label's release, for fetching a registered prompt by label (native
   and Langfuse-compatible paths, each also revalidated with ``If-None-Match``: a 304) and
   rendering it with an adapter, for a conversation's history (a state fetched before,
   and a new state right after each append) and assembling with it, for assembling in a
   world of 10,000 lore entries with 4 KB of text scanned (from the working copy, from
   a release, and the same turn with lore off, to compare with), and for
   ``GET /api/v1/me``, the cheapest authenticated DRF endpoint, measured in the same run
   as the baseline; also the server's CPU time per request, which is what to compare on a
   busy machine.

Each scenario runs ``--rounds`` times (default 3), the rounds interleaving the scenarios,
and the table shows medians; the ratio is taken within each round, against the baseline
measured moments before. Options: ``--duration`` seconds per run (default 15),
``--connections`` (16), and for gunicorn ``--workers`` (3), ``--worker-class`` (sync)
and ``--threads`` (1, for gthread).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from assembler import get_tokenizer
from benchmarks import data as assembler_bench

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/promptadmin_bench"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/12"
# BENCH_PORT: engineers sharing a machine each bench on their own port.
PORT = int(os.environ.get("BENCH_PORT", "8799"))

NPCS = [("Marra", 2), ("Old Tobin", 2), ("Sister Vell", 1), ("Kest", 2), ("Ivo", 1), ("Dun", 0)]


def prose(rng: random.Random, tokens: int) -> str:
    """Deterministic English prose of about ``tokens`` tokens (the assembler bench's)."""
    return assembler_bench.prose(rng, get_tokenizer(), tokens)


@dataclass(frozen=True)
class Measurement:
    rps: float
    p50: float
    p99: float
    cpu_ms: float
    errors: int


@dataclass(frozen=True)
class Scenario:
    name: str
    method: str
    path: str
    body: dict[str, Any] | None = None
    # "basic": HTTP Basic with the key's prefix and the key (the Langfuse-compatible API).
    auth: str = "api-key"
    # Send If-None-Match with the ETag a first request returned (the answer is a 304).
    revalidate: bool = False
    # Every request (a POST) is followed by a GET of this path, on the same connection:
    # a read right after a write, whose answer no process can have remembered.
    then_get: str | None = None
    # Sent with a write key (the others with a read key).
    write: bool = False


TURN_MARK = "__TURN__"
BENCH_CONVERSATION = "bench-conversation"
# The same state, for the scenario that appends to it (the one above must stay unchanged).
APPENDED_CONVERSATION = "bench-conversation-appended"
CONVERSATION_MESSAGES = 200
SUMMARIZED_THROUGH = 150


def assemble_body(token_budget: int, npc_budget: int) -> dict[str, Any]:
    rng = random.Random(11)
    return {
        "entry": "bench-entry",
        "world": "bench-world",
        "first_turn": True,
        "token_budget": token_budget,
        "npc_budget": npc_budget,
        "npcs": [{"npc": f"bench-npc-{i}", "tier": tier} for i, (_, tier) in enumerate(NPCS)],
        "state": {
            "game_state": {
                "day": 3,
                "hour": "dusk",
                "weather": "fog",
                "quests": {"salt_archive": "open", "black_wax_letter": "found"},
                "location": "customs house, second floor",
            },
            "player": {
                "name": "Aster",
                "hp": 14,
                "inventory": ["rope", "lantern", "forged permit", "3 silver"],
                "reputation": {"watch": -1, "dockers": 2},
            },
            "rng": "d20: 13, d20: 4, d6: 5",
            "input": prose(rng, 300) + f" (turn {TURN_MARK})",
        },
    }


LORE_WORLD = "bench-lore"
LORE_ENTRY = "bench-lore-entry"


def lore_body() -> dict[str, Any]:
    """The untruncated turn, in a world with 10,000 lore entries and 30,000 keys (the
    assembler bench's, :func:`benchmarks.data.lore_entries`), its input made 4 KB long and
    naming six entries (a turn's text is all that is scanned: no conversation)."""
    body = assemble_body(token_budget=12000, npc_budget=3000)
    rng = random.Random(5)
    names = [
        entry.keys[0]
        for index, entry in enumerate(assembler_bench.lore_entries(get_tokenizer()))
        if index in (40, 400, 1200, 3000, 6000, 9000)
    ]
    asked = f" You ask about {', '.join(names[:-1])} and {names[-1]} (turn {TURN_MARK})."
    text = prose(rng, assembler_bench.LORE_SCANNED // 3)
    state = dict(body["state"])
    state["input"] = text[: assembler_bench.LORE_SCANNED - len(asked)].rstrip() + asked
    return {**body, "entry": LORE_ENTRY, "world": LORE_WORLD, "state": state}


LORE_OFF = "lore turn, lore off"
# The lore scenarios, also compared with the same turn with lore off.
LORE_SCENARIOS = ("assemble, lore (10k entries)", "assemble, lore from a release")

PROMPT = "/api/v1/prompts/bench/judge/"
RENDER_BODY = {
    "task_type": "rubric",
    "label": "production",
    "template": "default",
    "variables": {
        "subject": "essay",
        "trait": "rigour",
        "response": f"The essay argues its point with two cited sources (turn {TURN_MARK}).",
    },
    "interface": "langchain",
    "user_instructions": "Be strict.",
    "instruction_context": {"json_schema": {"type": "object", "properties": {"score": {}}}},
    "format": "messages",
}

# The lore turn's body, made once (it reads the 10,000 entries of the assembler bench).
LORE_BODY = lore_body()

SCENARIOS = [
    Scenario("baseline: GET /api/v1/me", "GET", "/api/v1/me"),
    Scenario(
        "assemble, no truncation",
        "POST",
        "/api/v1/assemble",
        assemble_body(token_budget=12000, npc_budget=3000),
    ),
    Scenario(
        "assemble, with truncation",
        "POST",
        "/api/v1/assemble",
        assemble_body(token_budget=5000, npc_budget=600),
    ),
    Scenario("prompt by label", "GET", PROMPT + "?task_type=rubric&label=production"),
    Scenario(
        "prompt by label, 304",
        "GET",
        PROMPT + "?task_type=rubric&label=production",
        revalidate=True,
    ),
    Scenario(
        "langfuse prompt by label",
        "GET",
        "/api/public/v2/prompts/bench%2Fjudge%2Frubric?label=production",
        auth="basic",
    ),
    Scenario(
        "langfuse prompt, 304",
        "GET",
        "/api/public/v2/prompts/bench%2Fjudge%2Frubric?label=production",
        auth="basic",
        revalidate=True,
    ),
    Scenario("render with an adapter", "POST", PROMPT + "render", RENDER_BODY),
    Scenario(
        "history (summary + 200 msgs)",
        "GET",
        f"/api/v1/conversations/{BENCH_CONVERSATION}/history?budget=2000",
    ),
    # The scenario above fetches one unchanging state, fitted once per gunicorn worker and
    # remembered: this one measures the cold path, a new state (one more message) per fetch.
    # Its req/s and latencies count the appends and the fetches alike. The conversation
    # grows meanwhile, by one short message per pair; a fetch with budget 2000 reads at most
    # the newest 667 messages after the summary, so its cost grows only that far. No worker
    # runs: the summary asked for on the first append stays pending.
    Scenario(
        "history after an append",
        "POST",
        f"/api/v1/conversations/{APPENDED_CONVERSATION}/messages",
        {"messages": [{"role": "user", "content": f"Turn {TURN_MARK}: the scouts report in."}]},
        then_get=f"/api/v1/conversations/{APPENDED_CONVERSATION}/history?budget=2000",
        write=True,
    ),
    Scenario(
        "assemble, history layer",
        "POST",
        "/api/v1/assemble",
        {
            **assemble_body(token_budget=12000, npc_budget=3000),
            "conversation": BENCH_CONVERSATION,
            "history_budget": 1500,
        },
    ),
    # The lore turn (its 4 KB input) with lore off: what the turn costs without lore.
    Scenario(
        LORE_OFF,
        "POST",
        "/api/v1/assemble",
        {**LORE_BODY, "lore": {"enabled": False}},
    ),
    # The same turn in a world whose lore (10,000 entries) the working copy serves.
    Scenario("assemble, lore (10k entries)", "POST", "/api/v1/assemble", LORE_BODY),
    # The same turn served from the release the label "staging" names (its lore bundles).
    Scenario(
        "assemble, lore from a release",
        "POST",
        "/api/v1/assemble",
        {**LORE_BODY, "release": "staging"},
    ),
    # The seed publishes the working copy as BENCH_RELEASE under the label "staging" (not
    # "production", so the two scenarios above keep serving the working copy).
    Scenario(
        "assemble, release by name",
        "POST",
        "/api/v1/assemble",
        {**assemble_body(token_budget=12000, npc_budget=3000), "release": "bench-release"},
    ),
    Scenario(
        "assemble, by label",
        "POST",
        "/api/v1/assemble",
        {**assemble_body(token_budget=12000, npc_budget=3000), "release": "staging"},
    ),
]
# The issues' targets: (ratio to the baseline's req/s in the same round, p99 in ms).
TARGETS = {
    "assemble, no truncation": (0.40, 30.0),
    "assemble, with truncation": (0.40, 30.0),
    "prompt by label": (0.85, 15.0),
    "prompt by label, 304": (0.85, 15.0),
    "langfuse prompt by label": (0.85, 15.0),
    "langfuse prompt, 304": (0.85, 15.0),
    "render with an adapter": (0.70, 30.0),
    "history (summary + 200 msgs)": (0.60, 30.0),
    "assemble, history layer": (0.45, 30.0),
    "assemble, lore (10k entries)": (0.60, 25.0),
    "assemble, release by name": (0.70, 20.0),
    "assemble, by label": (0.55, 30.0),
}
BENCH_RELEASE = "bench-release"


def database_url_for(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def recreate_database(url: str) -> None:
    import psycopg

    name = urlsplit(url).path.lstrip("/")
    if not re.fullmatch(r"[a-z0-9_]+", name):
        raise SystemExit(f"bench: refusing to recreate a database named {name!r}")
    admin = database_url_for(url, "postgres").replace("postgres://", "postgresql://", 1)
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{name}"')


def seed() -> str:
    """Seed the bench database (Django is set up by the caller); return a read API key."""
    from django.core.management import call_command

    from promptadmin.content.models import NPC, Entry, Ruleset, Segment, World
    from promptadmin.content.services import catalog, segments
    from promptadmin.content.services.api_keys import api_key_create
    from promptadmin.core.tokens import tokenizer

    call_command("migrate", verbosity=0)
    rng = random.Random(7)
    world = catalog.catalog_create(actor=None, model=World, slug="bench-world", name="Varn")
    rulesets = [
        catalog.catalog_create(actor=None, model=Ruleset, slug=f"bench-rules-{i}", name=name)
        for i, name in enumerate(("Narration", "Combat"))
    ]
    entry = catalog.entry_create(
        actor=None, slug="bench-entry", name="Salt and Wax", world=world, rulesets=rulesets
    )

    def add(scope: str, ref: Any, count: int, tokens: tuple[int, int], **extra: Any) -> None:
        for order in range(count):
            content = (
                " ".join(rng.sample(assembler_bench.RULES, 3))
                if scope == "ruleset"
                else prose(rng, rng.randrange(*tokens))
            )
            segments.segment_create(
                actor=None, scope=scope, ref=ref, content=content, sort_order=order, **extra
            )

    # 60 segments for the entry: 8 core, 2 x 8 ruleset, 14 world, 16 entry, 6 entry_start.
    add("core", None, 8, (90, 120))
    for ruleset in rulesets:
        add("ruleset", ruleset, 8, (0, 1))
    add("world", world, 14, (70, 100))
    add("entry", entry, 16, (50, 80))
    add("entry_start", entry, 6, (50, 80))
    for i, (name, _tier) in enumerate(NPCS):
        npc = catalog.catalog_create(actor=None, model=NPC, slug=f"bench-npc-{i}", name=name)
        for tier in (0, 0, 1, 1, 2, 2):
            add("npc", npc, 1, (12, 28), tier=tier)

    # 10,000 unrelated segments. Bulk-created: they are there to be skipped by the
    # queries, and going through the service (with history) would only make seeding slow.
    tok = tokenizer()
    others_w = [World.objects.create(slug=f"other-world-{i}", name=f"W{i}") for i in range(40)]
    others_e = [
        Entry.objects.create(slug=f"other-entry-{i}", name=f"E{i}", world=others_w[i % 40])
        for i in range(120)
    ]
    others_n = [NPC.objects.create(slug=f"other-npc-{i}", name=f"N{i}") for i in range(200)]
    rows = []
    for i in range(10_000):
        content = prose(rng, rng.randrange(30, 120))
        kind = i % 3
        ref: dict[str, Any] = (
            {"scope": "world", "world": others_w[i % len(others_w)]}
            if kind == 0
            else {"scope": "entry", "entry": others_e[i % len(others_e)]}
            if kind == 1
            else {"scope": "npc", "npc": others_n[i % len(others_n)], "tier": i % 3}
        )
        rows.append(
            Segment(
                content=content,
                token_count=tok.count(content),
                token_encoding=tok.name,
                sort_order=i,
                **ref,
            )
        )
    Segment.objects.bulk_create(rows, batch_size=1000)
    seed_lore(world, entry, rulesets)
    seed_prompts()
    seed_conversation(rng, BENCH_CONVERSATION)
    seed_conversation(rng, APPENDED_CONVERSATION)
    from promptadmin.releases.services import release_create

    release_create(actor=None, name=BENCH_RELEASE, labels=["staging"])
    return api_key_create(actor=None, name="bench", scope="read")[1]


def seed_lore(world: Any, entry: Any, rulesets: list[Any]) -> None:
    """A second world and entry like the bench's (the same segments), whose world holds the
    assembler bench's 10,000 lore entries: the other scenarios' world has no lore."""
    from django.db.models import Q

    from promptadmin.content.models import Segment, World
    from promptadmin.content.services import catalog
    from promptadmin.lore.models import LoreEntry
    from scripts.bench_scale import lore_rows

    lore_world = catalog.catalog_create(actor=None, model=World, slug=LORE_WORLD, name="Varn lore")
    lore_entry = catalog.entry_create(
        actor=None, slug=LORE_ENTRY, name="Salt and Wax, with lore", world=lore_world,
        rulesets=rulesets,
    )  # fmt: skip
    copies = []
    for segment in Segment.objects.filter(Q(world=world) | Q(entry=entry)):
        segment.pk = None
        if segment.world_id is not None:
            segment.world = lore_world
        else:
            segment.entry = lore_entry
        copies.append(segment)
    Segment.objects.bulk_create(copies)
    # The assembler bench's 10,000 entries, seeded as make bench-scale seeds them.
    LoreEntry.objects.bulk_create(lore_rows(lore_world), batch_size=1000)


def seed_prompts() -> None:
    """The registered prompt the fetch and render scenarios use (bench/judge, task type
    rubric, labels production and staging), 50 unrelated prompts, and the demo
    interfaces and adapter instructions."""
    from django.core.management import call_command

    from promptadmin.prompts.services.prompts import prompt_create, prompt_version_create

    call_command("seed_prompts", verbosity=0)
    rng = random.Random(5)
    prompt_create(actor=None, component="bench", agent="judge")
    rubric = prompt_create(actor=None, component="bench", agent="judge", task_type="rubric")
    for labels in (["staging"], ["production"]):
        prompt_version_create(
            actor=None,
            prompt=rubric,
            labels=labels,
            task="rubric",
            system="You grade {{ subject }} responses against one rubric trait. " + prose(rng, 250),
            user_templates={
                "default": "Trait: {{ trait }}\n\nResponse:\n{{ response }}",
                "batch": "Traits: {{ trait }}\n\n" + prose(rng, 100) + "\n{{ response }}",
            },
        )
    for i in range(50):
        other = prompt_create(actor=None, component="other", agent=f"agent-{i}")
        prompt_version_create(
            actor=None, prompt=other, labels=["production"], user_templates={"default": "x"}
        )


def authorization(scenario: Scenario, key: str) -> str:
    if scenario.auth == "basic":
        pair = f"{key.partition('.')[0]}:{key}".encode()
        return "Basic " + base64.b64encode(pair).decode()
    return f"Api-Key {key}"


def seed_conversation(rng: random.Random, key: str) -> None:
    """A conversation of 200 messages (40-120 tokens each) with a done summary of the first
    150, as the workers would have left it. Appended through the service with a budget too
    large to trigger a summary (no worker runs during the bench); the summary is stored
    directly, like the unrelated segments."""
    from django.utils import timezone

    from promptadmin.conversations.models import Conversation, Summary, SummaryStatus
    from promptadmin.conversations.services import conversation_append
    from promptadmin.core.tokens import tokenizer

    for start in range(0, CONVERSATION_MESSAGES, 50):
        conversation_append(
            actor=None,
            key=key,
            history_budget=1_000_000,
            messages=[
                {
                    "role": "user" if index % 2 == 0 else "assistant",
                    "content": prose(rng, rng.randrange(40, 120)),
                }
                for index in range(start, start + 50)
            ],
        )
    conversation = Conversation.objects.get(key=key)
    content = prose(rng, 400)
    now = timezone.now()
    summary = Summary.objects.create(
        conversation=conversation,
        requested_through=SUMMARIZED_THROUGH,
        covers_through=SUMMARIZED_THROUGH,
        content=content,
        token_count=tokenizer().count(content),
        token_encoding=tokenizer().name,
        backend="extractive",
        model="bench",
        status=SummaryStatus.DONE,
        attempts=1,
        created_at=now,
        started_at=now,
        finished_at=now,
    )
    Conversation.objects.filter(pk=conversation.pk).update(
        history_budget=2000, summarized_through=SUMMARIZED_THROUGH, current_summary=summary
    )


def lua_script(scenario: Scenario, key: str, directory: Path, etag: str | None = None) -> Path:
    path = directory / f"{abs(hash(scenario.name))}.lua"
    lines = [
        f'wrk.method = "{scenario.method}"',
        f'wrk.headers["Authorization"] = "{authorization(scenario, key)}"',
    ]
    if etag is not None:
        lines.append(f'wrk.headers["If-None-Match"] = [==[{etag}]==]')
    if scenario.body is not None:
        body = json.dumps(scenario.body)
        assert "]==]" not in body and TURN_MARK in body, scenario.name
        # Every request brings new player input, as every turn of a game does, so no
        # server-side memory of an earlier request can answer for the input block.
        lines += [
            'wrk.headers["Content-Type"] = "application/json"',
            f"local template = [==[{body}]==]",
            "local count = 0",
            "local threads = 0",
            'function setup(thread) threads = threads + 1; thread:set("tid", threads) end',
            "function request()",
            "  count = count + 1",
        ]
        if scenario.then_get is not None:
            assert "]==]" not in scenario.then_get, scenario.name
            # Odd requests write, even ones read what was just written.
            lines += [
                "  if count % 2 == 0 then",
                f'    return wrk.format("GET", [==[{scenario.then_get}]==], nil, nil)',
                "  end",
            ]
        lines += [
            f'  local body = string.gsub(template, "{TURN_MARK}", tid .. "." .. count)',
            "  return wrk.format(nil, nil, nil, body)",
            "end",
        ]
    path.write_text("\n".join(lines) + "\n")
    return path


_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def parse_wrk(output: str) -> tuple[float, float, float, int]:
    """Requests/s, p50 ms, p99 ms and the count of non-2xx responses from ``wrk --latency``."""

    def latency(percent: str) -> float:
        match = re.search(rf"^\s+{percent}%\s+([\d.]+)(us|ms|s)\s*$", output, re.M)
        if match is None:
            raise ValueError(f"no {percent}% latency in wrk output:\n{output}")
        return float(match[1]) * _UNITS[match[2]]

    rps = re.search(r"^Requests/sec:\s+([\d.]+)", output, re.M)
    if rps is None:
        raise ValueError(f"no Requests/sec in wrk output:\n{output}")
    errors = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", output)
    return float(rps[1]), latency("50"), latency("99"), int(errors[1]) if errors else 0


def cpu_seconds(pid: int) -> float:
    """CPU time used so far by the gunicorn workers (children of ``pid``)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:  # ppid
            total += (int(fields[11]) + int(fields[12])) / ticks  # utime + stime
    return total


def run_wrk(url: str, script: Path, seconds: int, connections: int) -> str:
    command = [
        "wrk",
        f"-t{min(2, connections)}",
        f"-c{connections}",
        f"-d{seconds}s",
        "--latency",
        "-s",
        str(script),
        url,
    ]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


def wait_until_up(url: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=1)
            return
        except urllib.error.HTTPError:
            return  # it answers
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"bench: gunicorn did not answer at {url}")


def sample(url: str, key: str, scenario: Scenario) -> dict[str, Any]:
    return sample_with_etag(url, key, scenario)[0]


def sample_with_etag(url: str, key: str, scenario: Scenario) -> tuple[dict[str, Any], str | None]:
    data = json.dumps(scenario.body).encode() if scenario.body is not None else None
    request = urllib.request.Request(
        url + scenario.path,
        data=data,
        method=scenario.method,
        headers={
            "Authorization": authorization(scenario, key),
            "Content-Type": "application/json",
        },
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return dict(json.load(response)), response.headers.get("ETag")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--worker-class", default="sync")
    parser.add_argument("--port", type=int, default=PORT, help="where gunicorn listens")
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="TEXT",
        help="run only the scenarios whose name holds TEXT (repeatable; the baseline always "
        "runs), e.g. --only lore",
    )
    args = parser.parse_args()
    scenarios = [
        scenario
        for index, scenario in enumerate(SCENARIOS)
        if index == 0 or not args.only or any(text in scenario.name for text in args.only)
    ]
    if shutil.which("wrk") is None:
        raise SystemExit("bench: wrk is not installed (apt-get install wrk)")

    database_url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE_URL)
    redis_url = os.environ.get("BENCH_REDIS_URL", DEFAULT_REDIS_URL)
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "DEBUG": "false",
        "SECRET_KEY": "bench-only-" + "x" * 40,
        "ALLOWED_HOSTS": "127.0.0.1",
        "DB_CONN_MAX_AGE": "600",
        "LOG_LEVEL": "WARNING",
        "DJANGO_SETTINGS_MODULE": "promptadmin.settings",
        # No collectstatic for a benchmark: whitenoise would warn about it in every worker.
        "PYTHONWARNINGS": "ignore:No directory at",
    }
    print(f"bench: recreating {database_url} and seeding", flush=True)
    recreate_database(database_url)
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.cache import cache

    key = seed()
    from promptadmin.content.services.api_keys import api_key_create

    write_key = api_key_create(actor=None, name="bench-write", scope="write")[1]
    cache.clear()

    base = f"http://127.0.0.1:{args.port}"
    gunicorn = [
        str(Path(sys.executable).with_name("gunicorn")),
        "promptadmin.wsgi:application",
        f"--bind=127.0.0.1:{args.port}",
        f"--workers={args.workers}",
        f"--worker-class={args.worker_class}",
        f"--threads={args.threads}",
        "--keep-alive=30",
        "--log-level=warning",
    ]
    print(f"bench: {' '.join(gunicorn[1:])}", flush=True)
    server = subprocess.Popen(gunicorn, cwd=ROOT, env=env, start_new_session=True)
    try:
        wait_until_up(base + "/healthz")
        untruncated = sample(base, key, SCENARIOS[1])["meta"]
        truncated = sample(base, key, SCENARIOS[2])["meta"]
        print(
            f"bench: {untruncated['tokens_estimated']} tokens before truncation; "
            f"no truncation: {untruncated['tokens']} tokens, "
            f"{len(untruncated['truncated'])} steps; with truncation: {truncated['tokens']} "
            f"tokens, {len(truncated['truncated'])} steps",
            flush=True,
        )
        # rounds[r][i]: scenario i in round r. Rounds interleave the scenarios, so a noisy
        # spell on a shared machine hits them all, and medians over rounds are reported.
        rounds: list[list[Measurement]] = []
        with tempfile.TemporaryDirectory() as directory:
            scripts = []
            for scenario in scenarios:
                etag = sample_with_etag(base, key, scenario)[1] if scenario.revalidate else None
                if scenario.revalidate and etag is None:
                    raise SystemExit(f"bench: {scenario.name}: no ETag to revalidate with")
                scenario_key = write_key if scenario.write else key
                scripts.append(lua_script(scenario, scenario_key, Path(directory), etag))
            for scenario, script in zip(scenarios, scripts, strict=True):
                run_wrk(base + scenario.path, script, 3, args.connections)  # warm up
            for number in range(args.rounds):
                print(f"bench: round {number + 1} of {args.rounds}", flush=True)
                measured = []
                for scenario, script in zip(scenarios, scripts, strict=True):
                    cpu_before = cpu_seconds(server.pid)
                    output = run_wrk(base + scenario.path, script, args.duration, args.connections)
                    cpu = cpu_seconds(server.pid) - cpu_before
                    rps, p50, p99, errors = parse_wrk(output)
                    cpu_ms = cpu * 1000 / max(1.0, rps * args.duration)
                    measured.append(Measurement(rps, p50, p99, cpu_ms, errors))
                rounds.append(measured)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)

    print()
    print(
        f"{args.connections} connections, {args.rounds} rounds of {args.duration}s per scenario "
        f"(medians), gunicorn {args.workers} {args.worker_class} workers"
        + (f" x {args.threads} threads" if args.worker_class == "gthread" else "")
        + f", {os.cpu_count()} CPUs (shared with wrk)"
    )
    header = f"{'scenario':<28} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'vs baseline':>12}"
    print(f"{header} {'CPU ms/req':>11} {'errors':>7}")
    print("-" * 87)
    failed = False
    for index, scenario in enumerate(scenarios):
        runs = [measured[index] for measured in rounds]
        ratio = median(m.rps / measured[0].rps for m, measured in zip(runs, rounds, strict=True))
        errors = sum(m.errors for m in runs)
        print(
            f"{scenario.name:<28} {median(m.rps for m in runs):>8.1f} "
            f"{median(m.p50 for m in runs):>8.2f} {median(m.p99 for m in runs):>8.2f} "
            f"{ratio:>12.2f} {median(m.cpu_ms for m in runs):>11.2f} {errors:>7}"
        )
        failed = failed or errors > 0
        if scenario.name in TARGETS:
            target, target_p99 = TARGETS[scenario.name]
            p99 = median(m.p99 for m in runs)
            verdict = "met" if ratio >= target and p99 < target_p99 else "MISSED"
            print(f"  target: {target:.2f} of the baseline, p99 < {target_p99:.0f} ms: {verdict}")
    print()
    print("each round, p99 ms and vs baseline:")
    for index, scenario in enumerate(scenarios[1:], start=1):
        cells = ", ".join(
            f"{measured[index].p99:.1f} ms {measured[index].rps / measured[0].rps:.2f}"
            for measured in rounds
        )
        print(f"  {scenario.name:<26} {cells}")
    names = [scenario.name for scenario in scenarios]
    for name in LORE_SCENARIOS if LORE_OFF in names else ():
        if name not in names:
            continue
        off, index = names.index(LORE_OFF), names.index(name)
        ratio = median(measured[index].rps / measured[off].rps for measured in rounds)
        cpu = median(measured[index].cpu_ms for measured in rounds)
        cpu_off = median(measured[off].cpu_ms for measured in rounds)
        print(
            f"{name}: {ratio:.2f} of the same turn with lore off (req/s), "
            f"CPU {cpu:.2f} vs {cpu_off:.2f} ms/req"
        )
    print(
        "CPU ms/req: server CPU time (all gunicorn workers) per request served; unlike "
        "req/s it hardly depends on what else the machine is doing."
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
