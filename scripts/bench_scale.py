"""Time every page and operation at the size of a large game: ``make bench-scale``.

For each size in ``--sizes`` (default 10,000 and 100,000 segments), a child process
recreates its own PostgreSQL database (``BENCH_SCALE_DATABASE_URL``, default
``promptadmin_bench_scale``) and seeds a game through bulk paths (``bulk_create``, with
history rows; no service call per row). At 100,000 segments: 1,000 entries, 250 worlds,
40 rulesets, 2,000 NPCs, 200 saved scenarios, 10,000 conversations (one of 100 messages,
one of 100,000), 10,000 lore entries in the first entry's world (the assembler bench's:
30,000 keys, groups, constant and recursive entries), then 50 releases made through the
release service, one segment changed between each two, the last one published as
``production``. A smaller size scales every count with it (10,000 segments: 100 entries,
25 worlds, 5 releases, a conversation of 10,000 messages, 1,000 lore entries...), so the
table shows how cost grows with the game.

Then, on that database (with Redis, ``BENCH_SCALE_REDIS_URL``, as the shared cache):

- the studio pages (dashboard right after an edit and warm, segment list page 1 and last
  page (its "Last" link), a search, the entry and NPC lists, the publish page after a
  one-segment change, the preview empty and with an entry chosen (with its cast and its
  world's lore), the new-entry form, whose choices of entries, NPCs and worlds are
  pickers, and the lore page of that world, as it opens and searched),
  each in this process (Django's test client) and through gunicorn (``--workers``, a
  Celery worker beside it), the p50 of ``--repeat`` requests and its HTML size;
- making a release after a one-segment change (time and rows written, read from
  PostgreSQL's statistics, whatever the tables), and the first release (during the seed);
- the first assemble of a release in a fresh process (time and memory growth), then of
  the next release, one segment apart, for an entry that segment is not in;
- comparing two releases one segment apart, and two around a change to ``core``;
- appending to a conversation and reading its history, at 100 messages and at the long
  conversation's;
- ``POST /api/v1/assemble`` by label under load (``--clients`` HTTP clients, each one
  request at a time), its p99 over ``--load-seconds`` (default 10) after a publish: every
  request waited on in that window, those stuck in it since before included.

The seed makes the releases through the release service (its storage is its own): with
storage that writes every segment per release, that is most of the seed's time.

It prints one markdown table: each operation, its target (issue 22), the value at each
size, the ratio of the largest size to the smallest, and ``met`` or ``MISSED`` at the
largest. ``ARGS="--sizes 10000"`` for a quick run; ``--skip-gunicorn`` times the pages in
process only and leaves out the publish under load. Servers listen on ``--port``
(``BENCH_PORT``, default 8798). The table goes to stdout; ``--json`` also writes it.
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from pathlib import Path
from statistics import median
from typing import Any
from urllib.parse import urlencode, urlsplit

# Imports beyond the standard library are made where needed: the load clients (new
# processes importing this module) start at once, and the parent process needs no Django.
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/promptadmin_bench_scale"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/13"
PORT = int(os.environ.get("BENCH_PORT", "8798"))

FULL = 100_000
"""Segments of a real-size game; the counts below are at that size and scale with it."""
AT_FULL = {
    "entries": 1000,
    "worlds": 250,
    "rulesets": 40,
    "npcs": 2000,
    "releases": 50,
    "scenarios": 200,
    "conversations": 10_000,
    "lore": 10_000,
}
SHORT_MESSAGES = 100
CAST = 4  # NPCs in each entry's cast
RULESETS_PER_ENTRY = 2
SEARCH = "lantern oath"
LORE_WORLD = "world-0000"  # the first entry's world: its lore is in the preview
LORE_SEARCH = "salt archive"  # words in many lore entries' content
PREVIEWED = "entry-0000"  # the seed's first entry (with its cast of CAST NPCs)
# Shares of the segments by kind (entry segments take the rest): besides what entries,
# worlds, rulesets and NPCs assemble, inactive rows and deprecated ones, as a game that
# has lived has.
SHARES = {
    "ruleset": 0.02,
    "world": 0.10,
    "entry_start": 0.08,
    "npc": 0.25,
    "inactive": 0.08,
    "deprecated": 0.02,
}
CORE_AT_FULL = 20
# Each kind of segment: its scope and the foreign key naming its owner (None: no owner).
LAYOUT: dict[str, tuple[str, str | None]] = {
    "core": ("core", None),
    "ruleset": ("ruleset", "ruleset"),
    "world": ("world", "world"),
    "entry_start": ("entry_start", "entry"),
    "npc": ("npc", "npc"),
    "inactive": ("entry", "entry"),
    "deprecated": ("game_state", None),  # and player, rng, input in turn
    "entry": ("entry", "entry"),
}
DEPRECATED = ("game_state", "player", "rng", "input")


@dataclass(frozen=True)
class Plan:
    """How much of everything a game of ``segments`` segments has."""

    segments: int
    entries: int
    worlds: int
    rulesets: int
    npcs: int
    releases: int
    scenarios: int
    conversations: int
    lore: int
    long_messages: int


def plan_for(segments: int) -> Plan:
    """The counts of a game of ``segments`` segments: those of a real-size game, scaled.

    >>> plan_for(10_000).entries, plan_for(10_000).long_messages
    (100, 10000)
    """
    factor = segments / FULL

    def scaled(count: int, minimum: int = 2) -> int:
        return max(minimum, round(count * factor))

    return Plan(
        segments=segments,
        **{name: scaled(count) for name, count in AT_FULL.items()},
        long_messages=max(2 * SHORT_MESSAGES, segments),
    )


@dataclass
class Seeded:
    """What the measurements need to know of the seed."""

    plan: Plan
    seconds: float = 0.0
    releases: list[str] = field(default_factory=list)
    entries: list[str] = field(default_factory=list)
    casts: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    # One entry segment (of the first entry) edited for every "one-segment change".
    edited_segment: int = 0
    core_segment: int = 0
    short_conversation: str = "scale-short"
    long_conversation: str = "scale-long"
    username: str = "bench-scale"
    api_key: str = ""
    release_seconds: float = 0.0  # of ``seconds``, making the releases
    first_release_seconds: float = 0.0
    first_release_rows: int | None = None


# -- seeding ---------------------------------------------------------------------------


def _texts(rng: random.Random, count: int) -> list[str]:
    """Paragraphs of deterministic prose (about 20 to 60 tokens each), combined below."""
    from assembler import get_tokenizer
    from benchmarks import data as assembler_bench

    tok = get_tokenizer()
    return [assembler_bench.prose(rng, tok, rng.randrange(12, 40)) for _ in range(count)]


def _segment_kinds(plan: Plan) -> list[tuple[str, int]]:
    """(kind, count) for every kind of segment, adding up to ``plan.segments``."""
    core = max(1, round(CORE_AT_FULL * plan.segments / FULL))
    kinds = [("core", core)] + [
        (kind, max(1, int(plan.segments * share))) for kind, share in SHARES.items()
    ]
    rest = plan.segments - sum(count for _, count in kinds)
    if rest < 1:
        raise SystemExit(f"bench: {plan.segments} segments are too few (at least 20)")
    return [*kinds, ("entry", rest)]


def seed(plan: Plan, *, log: Callable[[str], None] = print) -> Seeded:
    """Seed the game of ``plan`` in the (migrated, empty) database Django is set up on."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.utils import timezone
    from simple_history.utils import bulk_create_with_history

    from assembler import get_tokenizer
    from benchmarks import data as assembler_bench
    from promptadmin.content.models import NPC, Entry, EntryNpc, EntryRuleset, Ruleset, Segment
    from promptadmin.content.models import World as WorldModel
    from promptadmin.content.services.api_keys import api_key_create
    from promptadmin.lore.models import LoreEntry
    from promptadmin.releases.models import Scenario

    started = time.perf_counter()
    rng = random.Random(22)
    tok = get_tokenizer()
    seeded = Seeded(plan=plan)
    now = timezone.now()
    batch = 2000

    def bulk(model: Any, rows: list[Any]) -> list[Any]:
        return list(bulk_create_with_history(rows, model, batch_size=batch, default_date=now))

    worlds = bulk(
        WorldModel,
        [
            WorldModel(slug=f"world-{i:04d}", name=f"World {i}", description=f"Land {i}.")
            for i in range(plan.worlds)
        ],
    )
    rulesets = bulk(
        Ruleset, [Ruleset(slug=f"rules-{i:03d}", name=f"Rules {i}") for i in range(plan.rulesets)]
    )
    npcs = bulk(NPC, [NPC(slug=f"npc-{i:05d}", name=f"NPC {i}") for i in range(plan.npcs)])
    entries = bulk(
        Entry,
        [
            Entry(slug=f"entry-{i:04d}", name=f"Entry {i}", world=worlds[i % len(worlds)])
            for i in range(plan.entries)
        ],
    )
    bulk(
        EntryRuleset,
        [
            EntryRuleset(entry=entry, ruleset=rulesets[(i + k) % len(rulesets)], position=k)
            for i, entry in enumerate(entries)
            for k in range(min(RULESETS_PER_ENTRY, len(rulesets)))
        ],
    )
    bulk(
        EntryNpc,
        [
            EntryNpc(entry=entry, npc=npcs[(i * CAST + k) % len(npcs)], position=k, tier=k % 3)
            for i, entry in enumerate(entries)
            for k in range(min(CAST, len(npcs)))
        ],
    )
    seeded.entries = [entry.slug for entry in entries]
    seeded.casts = {
        entry.slug: [
            (npcs[(i * CAST + k) % len(npcs)].slug, k % 3) for k in range(min(CAST, len(npcs)))
        ]
        for i, entry in enumerate(entries)
    }
    log(f"bench: {plan.entries} entries, {plan.worlds} worlds, {plan.npcs} NPCs; segments...")

    owners: dict[str, list[Any]] = {
        "ruleset": rulesets,
        "world": worlds,
        "entry": entries,
        "npc": npcs,
    }
    texts = _texts(rng, 800)
    number = 0
    rows: list[Segment] = []
    for kind, count in _segment_kinds(plan):
        scope, owner_field = LAYOUT[kind]
        for index in range(count):
            number += 1
            if kind == "ruleset":
                content = " ".join(rng.sample(assembler_bench.RULES, 2))
            else:
                content = "\n".join(rng.sample(texts, rng.randrange(1, 3)))
            if number % 200 == 7:
                content += " They swore the lantern oath at dusk."
            elif number % 50 == 3:
                content += " An oath binds them."
            content += f" (Note {number}.)"
            values: dict[str, Any] = {"sort_order": index}
            if owner_field is not None:
                owned = owners[owner_field]
                values = {owner_field: owned[index % len(owned)], "sort_order": index // len(owned)}
            if kind == "deprecated":
                scope = DEPRECATED[index % len(DEPRECATED)]
            when = now - timedelta(minutes=plan.segments - number)
            rows.append(
                Segment(
                    scope=scope,
                    title=f"{kind.replace('_', ' ').title()} note {number}" if number % 3 else "",
                    content=content,
                    active=kind not in ("inactive", "deprecated"),
                    tier=(index // len(npcs)) % 3 if kind == "npc" else 0,
                    token_count=tok.count(content),
                    token_encoding=tok.name,
                    created_at=when,
                    updated_at=when,
                    **values,
                )
            )
            if len(rows) == 10 * batch:
                bulk(Segment, rows)
                rows = []
    bulk(Segment, rows)
    first_entry = Entry.objects.get(slug=seeded.entries[0])
    seeded.edited_segment = (
        Segment.objects.filter(scope="entry", entry=first_entry, active=True).order_by("id")[0].pk
    )
    seeded.core_segment = Segment.objects.filter(scope="core").order_by("id")[0].pk

    _seed_scenarios(plan, seeded, Scenario)
    _seed_conversations(plan, seeded)
    log(f"bench: {plan.lore} lore entries in {LORE_WORLD}...")
    bulk(LoreEntry, lore_rows(worlds[0], plan.lore))
    user = get_user_model().objects.create_superuser(seeded.username, "bench@example.com", None)
    seeded.api_key = api_key_create(actor=None, name="bench-scale", scope="read")[1]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    log(f"bench: {plan.releases} releases, one segment changed between each two...")
    releases_started = time.perf_counter()
    _seed_releases(plan, seeded, user)
    seeded.release_seconds = time.perf_counter() - releases_started
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            # As autovacuum keeps a live database (it may be off where the bench runs):
            # the visibility map set, so the index-only scans production runs are timed.
            cursor.execute("ANALYZE" if connection.in_atomic_block else "VACUUM (ANALYZE)")
    seeded.seconds = time.perf_counter() - started
    return seeded


def lore_rows(world: Any, count: int | None = None) -> list[Any]:
    """The assembler bench's lore entries (the first ``count``; None: all 10,000) as
    unsaved lore entry rows of ``world``: what both API and scale benches seed."""
    from assembler import get_tokenizer
    from benchmarks import data as assembler_bench
    from promptadmin.lore.models import LoreEntry

    tok = get_tokenizer()
    return [
        LoreEntry(
            world=world,
            title=entry.title,
            content=entry.content,
            keys=list(entry.keys),
            priority=entry.priority,
            group=entry.group or "",
            constant=entry.constant,
            recursive=entry.recursive,
            token_count=entry.token_count,
            token_encoding=tok.name,
        )
        for entry in assembler_bench.lore_entries(tok)[:count]
    ]


def _seed_scenarios(plan: Plan, seeded: Seeded, model: Any) -> None:
    from simple_history.utils import bulk_create_with_history

    budgets = (800, 2000, 8000)
    bulk_create_with_history(
        [
            model(
                name=f"scale scenario {i}",
                entry=seeded.entries[i % len(seeded.entries)],
                first_turn=i % 2 == 0,
                npcs=[
                    {"npc": slug, "tier": tier}
                    for slug, tier in seeded.casts[seeded.entries[i % len(seeded.entries)]]
                ],
                token_budget=budgets[i % 3],
                expectations=[{"kind": "fits"}, {"kind": "max_tokens", "tokens": 1500}],
            )
            for i in range(plan.scenarios)
        ],
        model,
        batch_size=2000,
    )


def _seed_conversations(plan: Plan, seeded: Seeded) -> None:
    """The short and the long conversation (as ``make bench-conversations`` makes them),
    and the others, of four messages each."""
    from promptadmin.conversations.models import Conversation, Message
    from promptadmin.core.tokens import tokenizer
    from scripts.bench_conversations import make_conversation

    make_conversation(seeded.short_conversation, SHORT_MESSAGES)
    make_conversation(seeded.long_conversation, plan.long_messages)
    encoding = tokenizer().name
    others = Conversation.objects.bulk_create(
        [
            Conversation(key=f"player-{i:05d}", last_position=4, unsummarized_tokens=48)
            for i in range(plan.conversations - 2)
        ],
        batch_size=2000,
    )
    Message.objects.bulk_create(
        (
            Message(
                conversation=conversation,
                position=position,
                role="user" if position % 2 else "assistant",
                content=f"Turn {position}: the caravan reaches the well at dusk.",
                token_count=12,
                token_encoding=encoding,
            )
            for conversation in others
            for position in range(1, 5)
        ),
        batch_size=5000,
    )


def _seed_releases(plan: Plan, seeded: Seeded, user: Any) -> None:
    """``plan.releases`` releases through the release service, one entry segment changed
    between each two; the last one published as ``production``. The first is timed."""
    from promptadmin.content.models import Segment
    from promptadmin.content.services.segments import segment_update
    from promptadmin.releases.services import release_create

    for number in range(1, plan.releases + 1):
        if number > 1:
            entry = seeded.entries[number % len(seeded.entries)]
            segment = Segment.objects.filter(scope="entry", entry__slug=entry, active=True)[0]
            segment_update(actor=user, segment=segment, content=f"{segment.content} Rev {number}.")
        last = number == plan.releases
        name = f"scale-{number:03d}"
        with rows_written() as rows:
            started = time.perf_counter()
            release_create(
                actor=user, name=name, labels=["production"] if last else [], confirm=True
            )
        if number == 1:
            seeded.first_release_seconds = time.perf_counter() - started
            seeded.first_release_rows = rows()
        seeded.releases.append(name)


@contextmanager
def rows_written() -> Iterator[Callable[[], int | None]]:
    """Rows inserted, updated and deleted in every table while the block ran, read from
    PostgreSQL's statistics (whatever the tables; None elsewhere). Only this process
    should write meanwhile."""
    from django.db import connection

    def total() -> int | None:
        if connection.vendor != "postgresql":
            return None
        with connection.cursor() as cursor:
            # This backend's pending counts are flushed as this statement's transaction
            # ends (before its answer comes back), and read afresh by the next.
            cursor.execute("SELECT pg_stat_force_next_flush()")
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute(
                "SELECT COALESCE(SUM(n_tup_ins + n_tup_upd + n_tup_del), 0)"
                " FROM pg_stat_user_tables"
            )
            return int(cursor.fetchone()[0])

    before = total()
    result: list[int | None] = [None]
    yield lambda: result[0]
    after = total()
    if before is not None and after is not None:
        result[0] = after - before


# -- measuring -------------------------------------------------------------------------

Results = dict[str, float | None]


def p50(values: list[float]) -> float:
    return median(values)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


@dataclass(frozen=True)
class Page:
    """A studio page timed: by URL name and query, as a person opens it."""

    key: str
    label: str
    target: float  # p50, seconds
    url_name: str
    query: str = ""
    edit_first: bool = False  # each timed request follows an edit
    last: bool = False  # the list's last page

    def url(self) -> str:
        from django.urls import reverse

        return reverse(self.url_name) + (f"?{self.query}" if self.query else "")


PAGES = [
    Page(
        "dashboard_edit",
        "dashboard right after an edit",
        0.150,
        "studio:dashboard",
        edit_first=True,
    ),
    Page("dashboard", "dashboard, warm", 0.100, "studio:dashboard"),
    Page("segments_first", "segment list, page 1", 0.100, "studio:segment_list"),
    Page("segments_last", "segment list, last page", 0.100, "studio:segment_list", last=True),
    Page(
        "search",
        f'segment search "{SEARCH}"',
        0.100,
        "studio:segment_list",
        urlencode({"q": SEARCH}),
    ),
    Page("entries", "entry list", 0.100, "studio:entry_list"),
    Page("npcs", "NPC list", 0.100, "studio:npc_list"),
    Page("publish", "publish page (one segment changed)", 0.100, "studio:release_publish"),
    Page("preview", "preview page", 0.100, "studio:preview"),
    Page(
        "preview_entry",
        "preview page, an entry chosen",
        0.100,
        "studio:preview",
        # As the entry list's "Preview" link opens it: the entry's cast at its tiers.
        urlencode({"entry": PREVIEWED, "first_turn": "on"}),
    ),
    Page("entry_new", "new entry form", 0.100, "studio:entry_create"),
    Page(
        "lore", "lore page, a world's", 0.100, "studio:lore_list", urlencode({"world": LORE_WORLD})
    ),
    Page(
        "lore_search",
        f'lore search "{LORE_SEARCH}"',
        0.100,
        "studio:lore_list",
        urlencode({"world": LORE_WORLD, "q": LORE_SEARCH}),
    ),
]
"""Issue 22's targets: every studio page p50 under 100 ms, the dashboard right after an
edit under 150 ms, search under 100 ms."""


HTML_TARGET = 200_000  # bytes of HTML a studio page may send
SLOW_PAGE = 20.0  # seconds: past this, a page is timed three times, not --repeat times


class Editor:
    """Makes the one-segment change (the first entry's segment), a new text each time."""

    def __init__(self, seeded: Seeded) -> None:
        self.seeded = seeded
        self.count = 0

    def __call__(self) -> None:
        from django.contrib.auth import get_user_model

        from promptadmin.content.models import Segment
        from promptadmin.content.services.segments import segment_update

        self.count += 1
        segment = Segment.objects.get(pk=self.seeded.edited_segment)
        user = get_user_model().objects.get(username=self.seeded.username)
        base = segment.content.split(" [edit ")[0]
        segment_update(actor=user, segment=segment, content=f"{base} [edit {self.count}]")


Fetch = Callable[[str], tuple[float, int, bytes]]


def time_pages(fetch: Fetch, edit: Callable[[], None], repeat: int, where: str) -> Results:
    """p50 seconds (``<page>.<where>``) and HTML bytes (``<page>.html``) of every page."""
    results: Results = {}
    for page in PAGES:
        url = _last_page_url(fetch, page.url()) if page.last else page.url()
        samples: list[float] = []
        size = 0
        if not page.edit_first:
            size = fetch(url)[1]  # warm up (a new gunicorn worker may take it)
        spent = 0.0
        while len(samples) < repeat and not (len(samples) >= 3 and spent > SLOW_PAGE):
            if page.edit_first:
                edit()
            seconds, size, _ = fetch(url)
            samples.append(seconds)
            spent += seconds
        results[f"{page.key}.{where}"] = p50(samples)
        results[f"{page.key}.html"] = size
        print(
            f"bench: {where}: {page.label}: {p50(samples) * 1000:.0f} ms, {size} bytes", flush=True
        )
    return results


def _last_page_url(fetch: Fetch, url: str) -> str:
    """The list's last page, as a person reaches it: the "Last" link of its first page
    (``?page=last`` when the list is too long to count, read from its end), else its
    highest numbered link. Refuses to time page 1 (or an empty page) under the last
    page's name."""
    from django.urls import reverse

    first = fetch(url)[2]
    found = re.search(rb'href="\?([^"]*)" [^>]*rel="last"', first)
    numbers = [int(n) for n in re.findall(rb"[?&;]page=(\d+)", first)]
    if found:
        last = f"{url.split('?')[0]}?{found.group(1).decode().replace('&amp;', '&')}"
    elif numbers:
        last = f"{url}?page={max(numbers)}"
    else:
        raise SystemExit(f"bench: {url} links to no other page: is the list that short?")
    link = re.escape(reverse("studio:segment_edit", args=[0]).encode()).replace(b"0", rb"(\d+)")
    shown = set(re.findall(link, fetch(last)[2]))
    if not shown or shown == set(re.findall(link, first)):
        raise SystemExit(f"bench: {last} shows no segment, or the first page's: how does it page?")
    return last


def process_fetch(seeded: Seeded) -> Fetch:
    """GET a studio page through Django's test client, signed in as the seed's admin."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.get(username=seeded.username))

    def fetch(url: str) -> tuple[float, int, bytes]:
        started = time.perf_counter()
        response = client.get(url)
        seconds = time.perf_counter() - started
        if response.status_code != 200:
            raise SystemExit(f"bench: GET {url} answered {response.status_code}")
        return seconds, len(response.content), response.content

    return fetch


def session_cookie(seeded: Seeded) -> str:
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.get(username=seeded.username))
    name = settings.SESSION_COOKIE_NAME
    return f"{name}={client.cookies[name].value}"


def http_fetch(base: str, cookie: str) -> Fetch:
    """GET a studio page from the server at ``base`` (a new connection each time, as a
    sync gunicorn worker closes it)."""
    parts = urlsplit(base)

    def fetch(url: str) -> tuple[float, int, bytes]:
        connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=900)
        try:
            started = time.perf_counter()
            connection.request("GET", url, headers={"Cookie": cookie})
            response = connection.getresponse()
            body = response.read()
            seconds = time.perf_counter() - started
        finally:
            connection.close()
        if response.status != 200:
            raise SystemExit(f"bench: GET {base}{url} answered {response.status}")
        return seconds, len(body), body

    return fetch


def make_release(seeded: Seeded, name: str) -> tuple[float, int | None]:
    """Seconds and rows written by the release service making ``name``."""
    from django.contrib.auth import get_user_model

    from promptadmin.releases.services import release_create

    user = get_user_model().objects.get(username=seeded.username)
    with rows_written() as rows:
        started = time.perf_counter()
        release_create(actor=user, name=name)
        seconds = time.perf_counter() - started
    return seconds, rows()


def compare(before: str, after: str) -> float:
    from promptadmin.releases.selectors import compare_report

    started = time.perf_counter()
    compare_report(before, after)
    return time.perf_counter() - started


def probe_entries(seeded: Seeded, count: int) -> list[str]:
    """Entries the one-segment change is not in (the first entry's segment)."""
    return seeded.entries[1 : count + 1] or seeded.entries[:1]


def assemble_body(seeded: Seeded, entry: str, release: str, turn: int | str) -> dict[str, Any]:
    return {
        "entry": entry,
        "first_turn": False,
        "token_budget": 8000,
        "npc_budget": 2000,
        "npcs": [{"npc": slug, "tier": tier} for slug, tier in seeded.casts[entry]],
        "state": {"input": f"I ask about the lantern oath (turn {turn})."},
        "release": release,
    }


def fresh_assemble(
    seeded: Seeded, releases: list[str], env: dict[str, str]
) -> list[dict[str, float]]:
    """In a new Python process: after warming up on the working copy, assemble one entry
    from each of ``releases`` in turn through the API; the seconds each took and the
    process's memory growth since the warm-up (resident set, bytes)."""
    entry = probe_entries(seeded, 1)[0]
    spec = {
        "key": seeded.api_key,
        "warm": assemble_body(seeded, seeded.entries[-1], "working", "warm"),
        "bodies": [assemble_body(seeded, entry, name, name) for name in releases],
    }
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(spec, handle)
    try:
        output = subprocess.run(
            [sys.executable, __file__, "--fresh-assemble", handle.name],
            env={**env, "ALLOWED_HOSTS": "testserver"},  # Django's test client's host
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        os.unlink(handle.name)
    if output.returncode != 0:
        raise SystemExit(f"bench: the fresh process failed:\n{output.stderr[-3000:]}")
    return list(json.loads(output.stdout.strip().splitlines()[-1]))


def _resident() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def _fresh_assemble_main(spec_path: str) -> int:
    """The new process of :func:`fresh_assemble`."""
    import gc

    import django

    django.setup()
    from django.test import Client

    spec = json.loads(Path(spec_path).read_text())
    client = Client(HTTP_AUTHORIZATION=f"Api-Key {spec['key']}")

    def post(body: dict[str, Any]) -> float:
        started = time.perf_counter()
        response = client.post("/api/v1/assemble", body, content_type="application/json")
        seconds = time.perf_counter() - started
        if response.status_code != 200:
            raise SystemExit(
                f"assemble answered {response.status_code}: {response.content[:500]!r}"
            )
        return seconds

    post(spec["warm"])
    gc.collect()
    before = _resident()
    measured = []
    for body in spec["bodies"]:
        seconds = post(body)
        measured.append({"seconds": seconds, "memory": _resident() - before})
    print(json.dumps(measured))
    return 0


def conversations(seeded: Seeded, rounds: int) -> Results:
    """Median seconds to append one message and to read the history block just after."""
    from promptadmin.conversations import selectors, services

    times: dict[str, list[float]] = {}
    message = [{"role": "user", "content": "We make camp by the well and count the water."}]
    for _ in range(rounds):
        for size, key in (("short", seeded.short_conversation), ("long", seeded.long_conversation)):
            started = time.perf_counter()
            services.conversation_append(actor=None, key=key, messages=message)
            middle = time.perf_counter()
            selectors.history_block(key)
            times.setdefault(f"append.{size}", []).append(middle - started)
            times.setdefault(f"history.{size}", []).append(time.perf_counter() - middle)
    results: Results = {name: p50(values) for name, values in times.items()}
    for operation in ("append", "history"):
        short, long = results[f"{operation}.short"], results[f"{operation}.long"]
        results[f"{operation}.ratio"] = long / short if short and long is not None else None
    return results


# -- assembling under load -------------------------------------------------------------


def _load_client_main(spec_path: str, samples_path: str) -> int:
    """One game server's connection (a process of its own, started by
    :func:`publish_under_load`): POST /api/v1/assemble, one request at a time, each turn
    with new player input, until SIGTERM; one line per request, ``start seconds status``
    (``time.monotonic()``, the same clock in every process)."""
    spec = json.loads(Path(spec_path).read_text())
    parts = urlsplit(spec["base"])
    headers = {"Authorization": f"Api-Key {spec['key']}", "Content-Type": "application/json"}
    stopping: list[bool] = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    turn = 0
    with open(samples_path, "w", buffering=1) as samples:
        while not stopping:
            body = dict(spec["bodies"][turn % len(spec["bodies"])])
            body["state"] = {"input": f"I ask about the lantern oath (turn {os.getpid()}.{turn})."}
            turn += 1
            payload = json.dumps(body).encode()
            started = time.monotonic()
            connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=120)
            try:
                connection.request("POST", "/api/v1/assemble", payload, headers)
                response = connection.getresponse()
                response.read()
                status = response.status
            except OSError:
                status = 0
            finally:
                connection.close()
            samples.write(f"{started} {time.monotonic() - started} {status}\n")
    return 0


Sample = tuple[float, float, int]  # start (time.monotonic()), seconds, HTTP status


def waited_on(samples: list[Sample], begin: float, end: float) -> list[float]:
    """The seconds of every request waited on between ``begin`` and ``end``, those
    started before included: a client stuck in a stall starts no new request, and a stall
    holding every client must not leave the window empty, or count as one among many.

    >>> waited_on([(0.0, 0.1, 200), (0.5, 9.0, 200), (2.0, 0.1, 200), (3.0, 0.1, 200)], 1, 2.5)
    [9.0, 0.1]
    """
    return [took for start, took, _ in samples if start < end and start + took > begin]


def publish_under_load(
    seeded: Seeded, base: str, *, clients: int, seconds: float, publish: Callable[[], None]
) -> Results:
    """p99 of ``/assemble`` by label (``production``) in a steady window, then over the
    ``seconds`` after ``publish()`` returns, with ``clients`` connections at work all along
    (each waiting for its answer before asking again, as a game server's turn does).
    """
    entries = probe_entries(seeded, 20)
    with tempfile.TemporaryDirectory(prefix="bench-scale-load-") as directory:
        processes, outputs = [], []
        for number in range(clients):
            spec, output = Path(directory, f"{number}.json"), Path(directory, f"{number}.txt")
            bodies = [assemble_body(seeded, e, "production", 0) for e in entries[number::clients]]
            spec.write_text(
                json.dumps(
                    {
                        "base": base,
                        "key": seeded.api_key,
                        "bodies": bodies or [assemble_body(seeded, entries[0], "production", 0)],
                    }
                )
            )
            command = [sys.executable, __file__, "--load-client", str(spec), str(output)]
            processes.append(subprocess.Popen(command, cwd=ROOT))
            outputs.append(output)

        def answered() -> int:
            """The fewest requests a client has had answered."""
            return min(p.read_text().count("\n") if p.exists() else 0 for p in outputs)

        try:
            # Warm up: every client has been answered, so every worker has loaded the
            # production release (each took a first request; one worker answering fast
            # while the others load would not do).
            deadline = time.monotonic() + 600
            while answered() < 10 and time.monotonic() < deadline:
                time.sleep(0.1)
            steady = time.monotonic()
            time.sleep(min(5.0, seconds))
            publishing = time.monotonic()
            publish()
            published = time.monotonic()
            time.sleep(seconds)
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                process.wait(timeout=300)
        samples = [
            (float(start), float(took), int(status))
            for output in outputs
            for start, took, status in (line.split() for line in output.read_text().splitlines())
        ]
    before = waited_on(samples, steady, publishing)
    after = waited_on(samples, published, published + seconds)
    errors = sum(1 for start, took, status in samples if start + took > steady and status != 200)
    return {
        "assemble.steady": percentile(before, 0.99) if before else None,
        "assemble.publish_seconds": published - publishing,
        "assemble.publish": percentile(after, 0.99) if after else None,
        "assemble.slowest": max(after, default=None),
        "assemble.requests": len(after),
        "assemble.errors": errors,
    }


# -- servers ---------------------------------------------------------------------------


def server_env(database_url: str, redis_url: str) -> dict[str, str]:
    """The environment of gunicorn and its Celery worker: production-like."""
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "DEBUG": "false",
        "SECRET_KEY": "bench-only-" + "x" * 40,
        "ALLOWED_HOSTS": "127.0.0.1",
        "DB_CONN_MAX_AGE": "600",
        "LOG_LEVEL": "WARNING",
        "DJANGO_SETTINGS_MODULE": "promptadmin.settings",
        "CELERY_TASK_ALWAYS_EAGER": "false",
        "PYTHONWARNINGS": "ignore:No directory at",
    }


@contextmanager
def servers(env: dict[str, str], port: int, workers: int, *, celery: bool = True) -> Iterator[str]:
    """gunicorn (``workers`` sync workers, as the Dockerfile runs it) and a Celery worker
    (unless not ``celery``) on the bench database; the base URL."""
    bin_dir = Path(sys.executable).parent
    commands = [
        [
            str(bin_dir / "gunicorn"),
            "promptadmin.wsgi:application",
            f"--bind=127.0.0.1:{port}",
            f"--workers={workers}",
            "--timeout=900",  # pages that take minutes before the fix are timed, not killed
            "--log-level=warning",
        ],
        [
            sys.executable,
            *("-m", "celery", "-A", "promptadmin", "worker", "--loglevel", "WARNING"),
            *("--concurrency", "1", "-n", f"bench-scale-{os.getpid()}@%h"),
            *("--without-gossip", "--without-mingle", "--without-heartbeat"),
        ],
    ][: 2 if celery else 1]
    log = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed below
        "w+", prefix="bench-scale-servers-", suffix=".log", delete=False
    )
    print(f"bench: gunicorn and a Celery worker on port {port}, output in {log.name}")
    from scripts.bench_api import wait_until_up

    started = [
        subprocess.Popen(c, cwd=ROOT, env=env, stdout=log, stderr=log, start_new_session=True)
        for c in commands
    ]
    try:
        base = f"http://127.0.0.1:{port}"
        wait_until_up(base + "/healthz", timeout=60)
        yield base
    except BaseException:
        log.seek(0)
        sys.stdout.write(log.read()[-3000:])
        raise
    else:
        os.unlink(log.name)  # kept when something failed
    finally:
        log.close()
        for process in started:
            os.killpg(process.pid, signal.SIGINT)  # quick shutdown: nothing left to serve
        for process in started:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


# -- one size --------------------------------------------------------------------------


@dataclass
class Options:
    repeat: int = 5
    rounds: int = 20  # conversation appends
    clients: int = 4
    load_seconds: float = 10.0
    workers: int = 3
    gunicorn: bool = True
    port: int = PORT
    reuse: Path | None = None  # a --seed-only file: measure that database, do not seed


def measure(
    seeded: Seeded,
    options: Options,
    *,
    env: dict[str, str],
    base: str | None = None,
) -> Results:
    """Every operation on the seeded game. ``env``: a fresh process's environment;
    ``base``: the server to time pages and the publish under load through (None: none)."""
    from django.contrib.auth import get_user_model
    from django.core.cache import cache

    from promptadmin.content.models import Segment
    from promptadmin.content.services.segments import segment_update
    from promptadmin.releases.services import release_create

    results: Results = {
        "release_first.time": seeded.first_release_seconds,
        "release_first.rows": seeded.first_release_rows,
    }
    user = get_user_model().objects.get(username=seeded.username)
    edit = Editor(seeded)
    cache.clear()
    edit()  # the working copy is one segment away from production from here on
    results.update(time_pages(process_fetch(seeded), edit, options.repeat, "process"))
    if base is not None:
        fetch = http_fetch(base, session_cookie(seeded))
        results.update(time_pages(fetch, edit, options.repeat, "gunicorn"))

    production = seeded.releases[-1]
    seconds, rows = make_release(seeded, "scale-one")
    results["release_one.time"], results["release_one.rows"] = seconds, rows
    results["compare_one"] = compare(production, "scale-one")
    print(f"bench: release after one change {seconds:.2f} s, {rows} rows", flush=True)

    first, following = fresh_assemble(seeded, [production, "scale-one"], env)
    results["fresh_first.time"], results["fresh_first.memory"] = first["seconds"], first["memory"]
    results["fresh_next.time"] = following["seconds"]
    results["fresh_next.memory"] = following["memory"]

    core = Segment.objects.get(pk=seeded.core_segment)
    segment_update(actor=user, segment=core, content=core.content + " The core changed.")
    release_create(actor=user, name="scale-core")
    results["compare_core"] = compare("scale-one", "scale-core")
    print(f"bench: compared {results['compare_one']:.2f} / {results['compare_core']:.2f} s")

    results.update(conversations(seeded, options.rounds))

    if base is not None:

        def publish() -> None:
            edit()
            release_create(actor=user, name="scale-published", labels=["production"], confirm=True)

        results.update(
            publish_under_load(
                seeded, base, clients=options.clients, seconds=options.load_seconds, publish=publish
            )
        )
    return results


def run_size(segments: int, options: Options, out: Path, *, seeded_json: Path | None = None) -> int:
    """The child process of one size: recreate the database, seed, measure, write JSON.

    With ``seeded_json`` (``--seed-only``), stop after the seed and write what the
    measurements need to know of it there; with ``options.reuse`` (``--reuse``), measure
    the database that file describes (seeded before, perhaps copied with ``createdb -T``)
    without seeding it again."""
    from scripts.bench_api import recreate_database

    database_url = os.environ.get("BENCH_SCALE_DATABASE_URL", DEFAULT_DATABASE_URL)
    redis_url = os.environ.get("BENCH_SCALE_REDIS_URL", DEFAULT_REDIS_URL)
    env = server_env(database_url, redis_url)
    if options.reuse is None:
        print(f"bench: {segments} segments: recreating {database_url}", flush=True)
        recreate_database(database_url)
    os.environ.update(
        {**env, "ALLOWED_HOSTS": "127.0.0.1,testserver", "CELERY_TASK_ALWAYS_EAGER": "true"}
    )
    import django

    django.setup()
    from django.core.cache import cache
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    # DEBUG is off: pages name their static files from the manifest, as in production.
    call_command("collectstatic", interactive=False, verbosity=0)
    cache.clear()
    if options.reuse is not None:
        seeded = _seeded_from(json.loads(options.reuse.read_text()))
        plan = seeded.plan
    else:
        plan = plan_for(segments)
        seeded = seed(plan)
        print(
            f"bench: seeded {segments} segments in {seeded.seconds:.0f} s "
            f"({seeded.release_seconds:.0f} s of it making the releases)",
            flush=True,
        )
    if seeded_json is not None:
        seeded_json.write_text(json.dumps(asdict(seeded)))
        return 0
    if options.gunicorn:
        with servers(env, options.port, options.workers) as base:
            results = measure(seeded, options, env=env, base=base)
    else:
        results = measure(seeded, options, env=env)
    out.write_text(
        json.dumps(
            {
                "plan": asdict(plan),
                "seed_seconds": seeded.seconds,
                "release_seconds": seeded.release_seconds,
                "load": os.getloadavg()[0],
                "results": results,
            }
        )
    )
    return 0


def _seeded_from(data: dict[str, Any]) -> Seeded:
    """The ``Seeded`` a ``--seed-only`` run wrote (JSON turned tuples into lists)."""
    casts = {name: [(slug, pk) for slug, pk in cast] for name, cast in data["casts"].items()}
    return Seeded(**{**data, "plan": Plan(**data["plan"]), "casts": casts})


# -- the table -------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    key: str
    label: str
    unit: str  # ms, s, KB, MB, rows, x (a ratio), n (a count)
    target: float | None = None  # in the unit's base: seconds, bytes, a ratio, a count
    at_most: bool = False  # the target is "at most" (else "under")


def rows(load_seconds: float = 10.0) -> list[Row]:
    window = f"{load_seconds:g} s"
    table: list[Row] = []
    for page in PAGES:
        table += [
            Row(f"{page.key}.process", f"{page.label}, in process (p50)", "ms", page.target),
            Row(f"{page.key}.gunicorn", f"{page.label}, through gunicorn (p50)", "ms", page.target),
            Row(f"{page.key}.html", f"{page.label}, HTML", "KB", HTML_TARGET),
        ]
    return [
        *table,
        Row("release_first.time", "making the first release (all content)", "s"),
        Row("release_first.rows", "making the first release: rows written", "rows"),
        Row("release_one.time", "making a release after a one-segment change", "s"),
        Row("release_one.rows", "after a one-segment change: rows written", "rows"),
        Row("fresh_first.time", "first assemble of a release in a fresh process", "ms", 0.050),
        Row("fresh_first.memory", "first assemble in a fresh process: memory growth", "MB"),
        Row("fresh_next.time", "then of the next release (one segment changed)", "ms", 0.050),
        Row("fresh_next.memory", "then of the next release: memory growth in all", "MB"),
        Row("compare_one", "compare two releases one segment apart", "s", 1.0),
        Row("compare_core", "compare two releases around a core change", "s", 20.0),
        Row("append.short", f"append a message, {SHORT_MESSAGES} messages", "ms"),
        Row("append.long", "append a message, long conversation", "ms"),
        Row("append.ratio", "append: long / short", "x", 1.5, at_most=True),
        Row("history.short", f"history read, {SHORT_MESSAGES} messages", "ms"),
        Row("history.long", "history read, long conversation", "ms"),
        Row("history.ratio", "history read: long / short", "x", 1.5, at_most=True),
        Row("assemble.steady", "/assemble by label p99, steady load", "ms"),
        Row("assemble.publish_seconds", "publishing under load (release + label)", "s"),
        Row("assemble.publish", f"/assemble by label p99, {window} after a publish", "ms", 0.050),
        Row("assemble.slowest", f"slowest /assemble in those {window}", "ms"),
        Row("assemble.requests", f"requests waited on in those {window}", "n"),
        Row("assemble.errors", "failed requests under load", "n", 0, at_most=True),
    ]


_SCALE = {"ms": 1000.0, "s": 1.0, "KB": 1 / 1000, "MB": 1 / 1_000_000, "rows": 1, "x": 1, "n": 1}


def shown(value: float | None, unit: str) -> str:
    """``value`` (in seconds, bytes, rows...) as the table shows it in ``unit``.

    >>> shown(0.0123, "ms"), shown(1234567, "KB"), shown(12345, "rows"), shown(1.234, "x")
    ('12.3 ms', '1,235 KB', '12,345', '1.23')
    """
    if value is None:
        return "n/a"
    number = value * _SCALE[unit]
    if unit in ("rows", "n"):
        return f"{number:,.0f}"
    if unit == "x":
        return f"{number:.2f}"
    digits = ",.0f" if number >= 100 else ".1f" if number >= 10 else ".2f"
    return f"{number:{digits}} {unit}"


def verdict(row: Row, value: float | None) -> str:
    if row.target is None:
        return ""
    if value is None:
        return "n/a"
    met = value <= row.target if row.at_most else value < row.target
    return "met" if met else "MISSED"


def target_text(row: Row) -> str:
    if row.target is None:
        return "—"
    return f"{'≤' if row.at_most else '<'} {shown(row.target, row.unit)}"


def table(by_size: dict[int, Results], load_seconds: float = 10.0) -> list[str]:
    """The markdown table: every row, its target, its value at each size, the ratio of
    the largest size to the smallest, and the verdict at the largest."""
    sizes = sorted(by_size)
    largest = sizes[-1]
    head = ["operation", "target", *(f"{size:,} segments" for size in sizes)]
    if len(sizes) > 1:
        head.append("ratio")
    head.append(f"at {largest:,}")
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for row in rows(load_seconds):
        values = [by_size[size].get(row.key) for size in sizes]
        if all(value is None for value in values):
            continue
        cells = [row.label, target_text(row)]
        cells += [shown(value, row.unit) for value in values]
        if len(sizes) > 1:
            low, high = values[0], values[-1]
            cells.append(f"{high / low:.1f}" if low and high is not None else "")
        cells.append(verdict(row, values[-1]))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


# -- entry point -----------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, FULL])
    parser.add_argument("--repeat", type=int, default=5, help="requests per page (p50)")
    parser.add_argument("--rounds", type=int, default=20, help="conversation appends")
    parser.add_argument("--clients", type=int, default=4, help="connections under load")
    parser.add_argument("--load-seconds", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--port", type=int, default=PORT)
    parser.add_argument("--skip-gunicorn", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the results there")
    parser.add_argument(
        "--seed-only",
        type=Path,
        metavar="FILE",
        help="with one size: seed its database, write what was seeded to FILE and stop",
    )
    parser.add_argument(
        "--reuse",
        type=Path,
        metavar="FILE",
        help="with one size: measure the database a --seed-only run described in FILE "
        "(BENCH_SCALE_DATABASE_URL; a copy made with createdb -T will do) without seeding",
    )
    parser.add_argument("--run-size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--fresh-assemble", help=argparse.SUPPRESS)
    parser.add_argument("--load-client", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.fresh_assemble:
        return _fresh_assemble_main(args.fresh_assemble)
    if args.load_client:
        return _load_client_main(*args.load_client)
    options = Options(
        repeat=args.repeat,
        rounds=args.rounds,
        clients=args.clients,
        load_seconds=args.load_seconds,
        workers=args.workers,
        gunicorn=not args.skip_gunicorn,
        port=args.port,
        reuse=args.reuse,
    )
    if args.run_size:
        return run_size(args.run_size, options, args.out, seeded_json=args.seed_only)
    if (args.seed_only or args.reuse) and len(set(args.sizes)) != 1:
        parser.error("--seed-only and --reuse take one size (--sizes N)")
    if args.seed_only:
        command = [sys.executable, __file__, "--run-size", str(args.sizes[0])]
        command += ["--out", os.devnull, "--seed-only", str(args.seed_only.resolve())]
        return subprocess.run(command, check=False, cwd=ROOT).returncode

    runs: dict[int, dict[str, Any]] = {}
    for size in sorted(set(args.sizes)):
        with tempfile.TemporaryDirectory() as directory:
            out = Path(directory) / "results.json"
            command = [
                sys.executable,
                __file__,
                *("--run-size", str(size), "--out", str(out)),
                *("--repeat", str(options.repeat), "--rounds", str(options.rounds)),
                *("--clients", str(options.clients), "--workers", str(options.workers)),
                *("--load-seconds", str(options.load_seconds), "--port", str(options.port)),
                *(["--skip-gunicorn"] if not options.gunicorn else []),
                *(["--reuse", str(options.reuse.resolve())] if options.reuse else []),
            ]
            subprocess.run(command, check=True, cwd=ROOT)
            runs[size] = json.loads(out.read_text())
    print()
    print(
        f"make bench-scale: {os.cpu_count()} CPUs; load average at the end of each size: "
        + ", ".join(f"{size:,}: {run['load']:.1f}" for size, run in runs.items())
    )
    for size, run in runs.items():
        plan = run["plan"]
        print(
            f"- {size:,} segments: {plan['entries']:,} entries, {plan['worlds']:,} worlds, "
            f"{plan['rulesets']:,} rulesets, {plan['npcs']:,} NPCs, {plan['releases']} releases, "
            f"{plan['scenarios']} saved scenarios, {plan['conversations']:,} conversations "
            f"(long one: {plan['long_messages']:,} messages), {plan['lore']:,} lore entries; "
            f"seeded in {run['seed_seconds']:.0f} s, {run['release_seconds']:.0f} s of it "
            "making the releases through the service"
        )
    print()
    by_size = {size: run["results"] for size, run in runs.items()}
    print("\n".join(table(by_size, options.load_seconds)))
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
