"""Impact reports are kept under a key made of what they follow from: the two versions'
content and the scenarios judged, which PostgreSQL stamps (the saved scenarios; the
casts, and the slugs naming them), so that finding a kept report reads none of them."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from promptadmin.content.models import NPC, Entry, Segment
from promptadmin.content.services import catalog, segments
from promptadmin.releases import reports, selectors, services, serving
from promptadmin.releases.bundles import release_version
from promptadmin.releases.models import Release, Scenario, WorkingStamp
from promptadmin.releases.scenarios import JUDGED_STAMPS
from tests.factories import NPCFactory, RulesetFactory, WorldFactory, make_segment

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def game() -> None:
    cache.clear()
    serving.forget()
    world, ruleset = WorldFactory(slug="harbour"), RulesetFactory(slug="d6")
    npcs = [NPCFactory(slug=slug) for slug in ("marta", "cobb")]
    for slug in ("docks", "quay"):
        catalog.entry_create(
            actor=None,
            slug=slug,
            name=slug,
            world=world,
            rulesets=[ruleset],
            cast=[catalog.CastMember(npcs[0], tier=1)],
        )
    make_segment(scope="core", content="You narrate.")
    make_segment(scope="world", ref=world, content="Fog on the harbour.")
    for npc in npcs:
        make_segment(scope="npc", ref=npc, content=f"{npc.slug} watches.")
    services.scenario_create(
        actor=None, name="night", entry="docks", expectations=[{"kind": "fits"}]
    )
    services.release_create(actor=None, name="r-one", labels=["production"])
    segments.segment_update(
        actor=None, segment=Segment.objects.get(scope="world"), content="Rain on the harbour."
    )
    services.release_create(actor=None, name="r-two")


def key() -> str:
    """The key of the comparison of the two releases (their content never changes)."""
    one, two = (release_version(Release.objects.get(name=name)) for name in ("r-one", "r-two"))
    return reports.report_key(one, two, selectors._judged(one, two))


@pytest.mark.postgres
def test_a_kept_report_is_found_without_reading_a_scenario_or_a_cast() -> None:
    selectors.compare_started("production", "working")
    with CaptureQueriesContext(connection) as captured:
        again = selectors.compare_started("production", "working")
    read = " ".join(query["sql"] for query in captured.captured_queries)
    assert '"releases_scenario"' not in read and '"promptadmin_entrynpc"' not in read
    assert [row["scenario"] for row in again["scenarios"]] == [
        "night",
        "docks: first turn",
        "docks: later turn",
        "quay: first turn",
        "quay: later turn",
    ]


@pytest.mark.postgres
def test_the_report_key_follows_the_scenarios_and_the_casts_alone() -> None:
    keys = [key()]

    def changes(write: Any) -> bool:
        write()
        keys.append(key())
        return keys[-1] != keys[-2]

    marta = NPC.objects.get(slug="marta")
    docks = Entry.objects.get(slug="docks")
    cobb = NPC.objects.get(slug="cobb")
    assert not changes(lambda: catalog.catalog_update(actor=None, obj=marta, name="Marta"))
    assert not changes(
        lambda: segments.segment_update(
            actor=None, segment=Segment.objects.get(npc=cobb), content="Cobb sleeps."
        )
    )
    assert changes(
        lambda: services.scenario_update(
            actor=None, scenario=Scenario.objects.get(name="night"), token_budget=900
        )
    )
    assert changes(
        lambda: catalog.entry_update(actor=None, entry=docks, cast=[catalog.CastMember(cobb)])
    )
    marta.refresh_from_db()
    # The other entry's cast names Marta by her slug.
    assert changes(lambda: catalog.catalog_update(actor=None, obj=marta, slug="marta-vell"))
    assert not changes(lambda: None)


@pytest.mark.postgres
def test_without_the_stamps_the_scenarios_themselves_make_the_key() -> None:
    one = release_version(Release.objects.get(name="r-one"))
    judged = selectors._judged(one, one)
    assert judged.identity() == [
        str(WorkingStamp.objects.get(kind=kind, owner=0).stamp) for kind in JUDGED_STAMPS
    ]
    WorkingStamp.objects.filter(kind__in=JUDGED_STAMPS).delete()
    assert judged.identity() == [spec.identity() for spec in selectors._scenarios(one, one)]


def test_a_summary_counts_every_scenario_and_lists_those_that_changed() -> None:
    services.scenario_create(
        actor=None, name="tight", entry="quay", token_budget=5, expectations=[{"kind": "fits"}]
    )
    full = selectors.compare_report("r-one", "working")
    summary = reports.summary(full)
    rows = full["scenarios"]
    assert summary["scenarios"] == [row for row in rows if row["changed"]]
    assert summary["judged_count"] == len(rows) == 6
    assert summary["assembled_count"] == sum(row["assembled"] for row in rows) == 6
    assert summary["failing_count"] + summary["still_failing_count"] == 1  # "tight" fails
    assert {k: v for k, v in summary.items() if k not in reports.summary({"scenarios": []})} == {
        k: v for k, v in full.items() if k != "scenarios"
    }
