"""``make bench-scale`` cannot rot unseen: its seed and one pass of every measurement run
here on a game of 50 segments (pages in process and through gunicorn, a fresh process,
a publish under load), and every row of its table gets a value. The times themselves are
the benchmark's business, never asserted here."""

from __future__ import annotations

import pytest
from django.conf import settings

from promptadmin.content.models import NPC, Entry, Segment, World
from promptadmin.conversations.models import Conversation, Message
from promptadmin.lore.models import LoreEntry
from promptadmin.releases.models import Release, ReleaseLabel, Scenario
from scripts import bench_scale
from tests.conftest import database_url
from tests.servers import free_port

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


def test_a_smaller_game_scales_every_count_and_keeps_at_least_two() -> None:
    full = bench_scale.plan_for(100_000)
    assert (full.entries, full.worlds, full.npcs, full.releases) == (1000, 250, 2000, 50)
    assert (full.scenarios, full.conversations, full.long_messages) == (200, 10_000, 100_000)
    assert full.lore == 10_000
    tenth = bench_scale.plan_for(10_000)
    assert (tenth.entries, tenth.worlds, tenth.npcs, tenth.long_messages) == (100, 25, 200, 10_000)
    assert tenth.lore == 1000
    tiny = bench_scale.plan_for(50)
    assert min(tiny.entries, tiny.worlds, tiny.npcs, tiny.releases, tiny.conversations) == 2
    assert sum(count for _, count in bench_scale._segment_kinds(tiny)) == 50


def test_the_table_gives_each_target_its_verdict_at_the_largest_size() -> None:
    small = {"dashboard.process": 0.08, "dashboard.html": 150_000, "compare_one": 0.5}
    large = {"dashboard.process": 0.12, "dashboard.html": 250_000, "compare_one": 0.9}
    lines = bench_scale.table({10_000: small, 100_000: large})
    assert (
        lines[0]
        == "| operation | target | 10,000 segments | 100,000 segments | ratio | at 100,000 |"
    )
    rows = {line.split(" | ")[0].lstrip("| "): line for line in lines[2:]}
    assert rows["dashboard, warm, in process (p50)"].endswith(
        "| < 100 ms | 80.0 ms | 120 ms | 1.5 | MISSED |"
    )
    assert rows["dashboard, warm, HTML"].endswith("| < 200 KB | 150 KB | 250 KB | 1.7 | MISSED |")
    assert rows["compare two releases one segment apart"].endswith(
        "| 0.50 s | 0.90 s | 1.8 | met |"
    )
    # Rows nobody measured (gunicorn skipped) are left out, not shown empty.
    assert len(lines) == 2 + 3


def test_a_request_stuck_through_the_window_after_a_publish_counts() -> None:
    # Three clients stuck from before the window to after it (a stall), one that started
    # and ended before it, and one quick request in it.
    samples = [(9.0, 30.0, 200), (9.5, 29.0, 200), (9.9, 31.0, 200), (1.0, 0.5, 200)]
    samples.append((12.0, 0.02, 200))
    assert sorted(bench_scale.waited_on(samples, 10.0, 20.0)) == [0.02, 29.0, 30.0, 31.0]


@pytest.mark.django_db(transaction=True)
def test_the_bench_seeds_a_game_and_measures_every_operation_once() -> None:
    plan = bench_scale.plan_for(50)
    seeded = bench_scale.seed(plan, log=lambda line: None)

    assert Segment.objects.count() == 50
    assert (Entry.objects.count(), World.objects.count(), NPC.objects.count()) == (2, 2, 2)
    assert Scenario.objects.count() == plan.scenarios
    lore = LoreEntry.objects.filter(world__slug=bench_scale.LORE_WORLD)
    assert (
        lore.count() == plan.lore
        and Entry.objects.get(slug=bench_scale.PREVIEWED).world.slug == bench_scale.LORE_WORLD
    )
    assert LoreEntry.history.count() == plan.lore  # type: ignore[attr-defined]
    assert Conversation.objects.count() == plan.conversations
    long = Conversation.objects.get(key=seeded.long_conversation)
    assert Message.objects.filter(conversation=long).count() == plan.long_messages
    assert list(Release.objects.order_by("id").values_list("name", flat=True)) == seeded.releases
    assert ReleaseLabel.objects.get(name="production").release.name == seeded.releases[-1]
    # A release is a manifest of content-addressed bundles (one per entry, world, ...),
    # so even the first one writes rows per bundle, not per segment.
    assert seeded.first_release_rows is not None
    assert 0 < seeded.first_release_rows < Segment.objects.count()
    found = Segment.objects.filter(content__contains=bench_scale.SEARCH.split()[0])
    assert found.filter(content__contains=bench_scale.SEARCH.split()[1]).exists()

    options = bench_scale.Options(repeat=1, rounds=1, clients=1, load_seconds=1, workers=1)
    env = {
        **bench_scale.server_env(database_url(), settings.REDIS_URL),
        "DEBUG": "true",  # static files as they are, without collectstatic
        "SECRET_KEY": settings.SECRET_KEY,  # the session signed here is read there
    }
    with bench_scale.servers(env, free_port(), workers=1, celery=False) as base:
        results = bench_scale.measure(seeded, options, env=env, base=base)

    measured = {row.key for row in bench_scale.rows()}
    missing = sorted(key for key in measured if results.get(key) is None)
    assert missing == []
    assert results["assemble.errors"] == 0
    assert results["release_one.rows"] and results["release_one.rows"] > 0
    lines = bench_scale.table({50: results}, load_seconds=1)
    assert len(lines) == 2 + len(measured)
    assert all(line.endswith(("| met |", "| MISSED |", "|  |")) for line in lines[2:])
