"""Scenarios: an entry's implicit scenarios play its cast, saved ones what authors kept."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.core.management import call_command

from promptadmin.content.models import NPC, Entry, Segment
from promptadmin.content.services import catalog, segments
from promptadmin.releases import selectors, services, serving
from promptadmin.releases.models import Scenario
from promptadmin.releases.scenarios import scenarios_for
from tests.factories import NPCFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def demo() -> None:
    cache.clear()
    serving.forget()
    call_command("seed_demo", stdout=StringIO())


def cast_marta(tier: int = 2, *others: NPC) -> None:
    marta = NPC.objects.get(slug="marta-vell")
    catalog.entry_update(
        actor=None,
        entry=Entry.objects.get(slug="drowned-bell"),
        cast=[catalog.CastMember(npc=marta, tier=tier), *(catalog.CastMember(n) for n in others)],
    )


def implicit(report: dict[str, Any], turn: str) -> dict[str, Any]:
    return next(s for s in report["scenarios"] if s["scenario"] == f"drowned-bell: {turn}")


def test_implicit_scenarios_play_the_entrys_cast_at_its_tiers() -> None:
    cast_marta(tier=2)
    specs = {spec.name: spec for spec in scenarios_for(["drowned-bell", "drowned-bell"])}
    assert specs["drowned-bell: first turn"].npcs == (("marta-vell", 2),)
    assert specs["drowned-bell: later turn"].npcs == (("marta-vell", 2),)
    assert not specs["drowned-bell: first turn"].expectations


def test_a_change_to_a_cast_npc_shows_in_the_entrys_implicit_scenarios() -> None:
    cast_marta(tier=2)
    services.release_create(actor=None, name="r-one")
    line = Segment.objects.filter(scope="npc", npc__slug="marta-vell", tier=0).first()
    assert line is not None
    segments.segment_update(
        actor=None, segment=line, content=line.content + " She counts every ship twice."
    )

    report = selectors.compare_report("r-one", "working")

    for turn in ("first turn", "later turn"):
        scenario = implicit(report, turn)
        assert scenario["changed"] and scenario["error_before"] is None
        assert scenario["tokens_after"] > scenario["tokens_before"]


def test_a_cast_npc_a_release_lacks_is_left_out_of_that_side_only() -> None:
    services.release_create(actor=None, name="r-one")
    newcomer = NPCFactory(slug="newcomer")
    segments.segment_create(actor=None, scope="npc", ref=newcomer, content="A stranger.")
    cast_marta(0, newcomer)

    report = selectors.compare_report("r-one", "working")

    scenario = implicit(report, "first turn")
    assert scenario["error_before"] is None and scenario["error_after"] is None
    assert scenario["tokens_after"] > scenario["tokens_before"]


def test_scenarios_with_casts_take_two_queries(django_assert_num_queries: Any) -> None:
    cast_marta(tier=1)
    with django_assert_num_queries(2):
        specs = scenarios_for(["drowned-bell", "nowhere"])
    assert len(specs) == 4
    with django_assert_num_queries(1):
        scenarios_for(())


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"expectations": [{"kind": "contains", "text": "a\x00b"}]}, "expectations.0.text"),
        ({"expectations": [{"kind": "contains", "text": "a\ud800b"}]}, "expectations.0.text"),
        ({"npcs": [{"npc": "marta-vell\x00", "tier": 1}]}, "npcs.0.npc"),
        ({"npcs": ["old-cobb", "\udfff"]}, "npcs.1.npc"),
        ({"state": {"input": "a\x00b"}}, "state.input"),
    ],
)
def test_a_scenario_value_postgresql_cannot_store_is_refused_by_name(
    change: dict[str, Any], field: str
) -> None:
    # Every entry point calls the service: a value the database would refuse (a 500) is a
    # clear error naming it instead.
    with pytest.raises(ValidationError) as caught:
        services.scenario_create(actor=None, name="bell", entry="drowned-bell", **change)
    assert field in caught.value.message_dict
    assert not Scenario.objects.exists()


def test_the_scenario_model_checks_its_json_fields_like_every_stored_json() -> None:
    for name, value in (
        ("state", {"game_state": {"hp": float("nan")}}),
        ("npcs", [{"npc": "a\x00b"}]),
        ("expectations", [{"kind": "contains", "text": "a\ud800"}]),
    ):
        scenario = Scenario(name="bell", entry="drowned-bell", **{name: value})
        with pytest.raises(ValidationError) as caught:
            scenario.full_clean()
        assert set(caught.value.message_dict) == {name}
