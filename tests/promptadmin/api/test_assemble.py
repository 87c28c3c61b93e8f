"""POST /api/v1/assemble and /api/v1/preview: what the assembler makes, errors naming fields."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.cache import cache
from django.test import override_settings

from assembler.request import AssembleParams
from promptadmin.content.assembly import assemble_prompt
from promptadmin.content.models import Entry, Segment
from promptadmin.content.services import segments
from promptadmin.lore.services import lore_entry_create
from tests.factories import NPCFactory, make_cinder_gate, make_segment
from tests.promptadmin.api.conftest import codes, errors

pytestmark = pytest.mark.django_db

TURN = {
    "entry": "drowned-bell",
    "world": "iron-coast",
    "first_turn": True,
    "token_budget": 8000,
    "npc_budget": 600,
    "npcs": [{"npc": "marta-vell", "tier": 2}, {"npc": "old-cobb", "tier": 1}, "sister-anwe"],
    "state": {"game_state": {"tide": "rising", "hour": 23}, "input": "I ring the bell."},
}
PARAMS = AssembleParams(
    entry="drowned-bell",
    world="iron-coast",
    first_turn=True,
    npcs=(("marta-vell", 2), ("old-cobb", 1), ("sister-anwe", 0)),
    state={"game_state": {"tide": "rising", "hour": 23}, "input": "I ring the bell."},
)


def assemble(client: Any, body: dict[str, Any], url: str = "/api/v1/assemble") -> Any:
    return client.post(url, body, format="json")


def test_assemble_returns_the_prompt_and_meta_the_assembler_makes(reader, demo) -> None:  # type: ignore[no-untyped-def]
    response = assemble(reader, TURN)
    assert response.status_code == 200
    expected = assemble_prompt(PARAMS)
    meta = {**expected.meta.to_dict(), "release": {"name": "working", "label": None}}
    assert response.json() == {"prompt": expected.prompt, "meta": meta}


def test_the_same_request_gives_byte_identical_responses(reader, demo) -> None:  # type: ignore[no-untyped-def]
    first = assemble(reader, TURN).content
    cache.clear()
    assert assemble(reader, TURN).content == first


def test_a_bare_npc_slug_means_tier_0(reader, demo) -> None:  # type: ignore[no-untyped-def]
    body = {"entry": "drowned-bell", "npcs": ["marta-vell"]}
    npcs = assemble(reader, body).json()["meta"]["npcs"]
    assert [(n["npc"], n["requested_tier"]) for n in npcs] == [("marta-vell", 0)]


def test_budgets_are_applied_and_every_step_reported(reader, demo) -> None:  # type: ignore[no-untyped-def]
    meta = assemble(reader, {**TURN, "token_budget": 400}).json()["meta"]
    assert meta["tokens"] <= 400
    assert meta["truncated"] and all(step["reason"] for step in meta["truncated"])


def test_unknown_slugs_and_a_foreign_world_are_named(reader, demo) -> None:  # type: ignore[no-untyped-def]
    response = assemble(reader, {"entry": "nowhere"})
    assert response.status_code == 400
    assert "nowhere" in errors(response)["entry"]
    response = assemble(reader, {"entry": "drowned-bell", "npcs": ["ghost", "marta-vell"]})
    assert errors(response) == {"npcs": "Unknown NPC slugs: ghost."}
    response = assemble(reader, {"entry": "drowned-bell", "world": "verdant-reach"})
    assert "iron-coast" in errors(response)["world"]


@pytest.mark.parametrize(
    ("change", "attr"),
    [
        ({"token_budget": -1}, "token_budget"),
        ({"token_budget": "lots"}, "token_budget"),
        ({"npc_budget": -5}, "npc_budget"),
        ({"npcs": [{"npc": "marta-vell", "tier": -1}]}, "npcs.0.tier"),
        ({"npcs": [{"npc": "marta-vell", "tier": 1.5}]}, "npcs.0.tier"),
        ({"npcs": ["marta-vell", "marta-vell"]}, "npcs"),
        ({"npcs": [7]}, "npcs.0"),
        ({"state": {"weather": "rain"}}, "state.weather"),
        ({"state": {"input": ["a list"]}}, "state.input"),
        ({"policy": {"floors": {"input": 1.5}}}, "policy.floors.input"),
        ({"policy": {"block_format": "yaml"}}, "policy.block_format"),
        ({"first_turn": "yes"}, "first_turn"),
        ({"entry": None}, "entry"),
        ({"budget": 100}, "budget"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(reader, demo, change, attr) -> None:  # type: ignore[no-untyped-def]
    response = assemble(reader, {**TURN, **change})
    assert response.status_code == 400
    assert attr in errors(response)


@pytest.mark.parametrize(
    ("change", "attr"),
    [
        ({"state": {"input": "I say \ud800 hello"}}, "state.input"),
        ({"state": {"player": {"name\udfff": "Aster"}}}, "state.player"),
        ({"state": {"game_state": {"log": ["ok", "\ud83d"]}}}, "state.game_state"),
        ({"npcs": ["marta\ud800"]}, "npcs.0.npc"),
    ],
)
@pytest.mark.parametrize("url", ["/api/v1/assemble", "/api/v1/preview"])
def test_lone_surrogates_are_a_400_naming_the_field(reader, demo, change, attr, url) -> None:  # type: ignore[no-untyped-def]
    # JSON can carry "\ud800", UTF-8 cannot: sent raw, as a client's encoder would.
    body = json.dumps({**TURN, **change})
    response = reader.post(url, body, content_type="application/json")
    assert response.status_code == 400
    assert "surrogate" in errors(response)[attr]


def test_strict_over_budget_is_a_422_naming_the_protected_layers(reader, demo) -> None:  # type: ignore[no-untyped-def]
    response = assemble(reader, {**TURN, "token_budget": 20, "strict": True})
    assert response.status_code == 422
    assert codes(response) == ["over_budget"]
    detail = errors(response)["token_budget"]
    assert "core" in detail and "ruleset" in detail


def test_without_strict_an_over_budget_prompt_is_served_and_flagged(reader, demo) -> None:  # type: ignore[no-untyped-def]
    response = assemble(reader, {**TURN, "token_budget": 20})
    assert response.status_code == 200
    assert response.json()["meta"]["over_budget"] is True


def test_preview_lists_every_segment_with_its_fate(reader, demo) -> None:  # type: ignore[no-untyped-def]
    body = assemble(reader, {**TURN, "first_turn": False}, "/api/v1/preview").json()
    fates = {row["id"]: row["fate"] for row in body["segments"]}
    entry_start = Segment.objects.filter(scope="entry_start", entry__slug="drowned-bell")
    assert {fates[s.pk] for s in entry_start} == {"skipped"}
    assert all(row["tokens"] >= 0 and row["title"] for row in body["segments"])
    assert body["prompt"] == assemble(reader, {**TURN, "first_turn": False}).json()["prompt"]


def test_preview_shows_inactive_segments_only_when_asked_and_never_assembles_them(  # type: ignore[no-untyped-def]
    reader, demo, django_capture_on_commit_callbacks
) -> None:
    segment = Segment.objects.get(import_key="w-iron-magic")
    with django_capture_on_commit_callbacks(execute=True):
        segments.segment_update(actor=None, segment=segment, active=False)
    plain = assemble(reader, TURN, "/api/v1/preview").json()
    assert segment.pk not in {row["id"] for row in plain["segments"]}
    body = assemble(reader, {**TURN, "include_inactive": True}, "/api/v1/preview").json()
    assert {row["id"]: row["fate"] for row in body["segments"]}[segment.pk] == "inactive"
    assert segment.content not in body["prompt"]
    assert assemble(reader, TURN).json()["prompt"] == body["prompt"]


def test_assemble_takes_a_constant_number_of_queries(  # type: ignore[no-untyped-def]
    reader, demo, django_assert_num_queries
) -> None:
    def count_queries() -> int:
        cache.clear()
        # API key, release labels, entry, rulesets, NPCs, segments, the world's lore
        with django_assert_num_queries(7) as captured:
            assert assemble(reader, body).status_code == 200
        return len(captured)

    body = {**TURN, "npcs": [*TURN["npcs"]]}
    baseline = count_queries()
    entry = Entry.objects.get(slug="drowned-bell")
    for i in range(30):
        make_segment(scope="entry", ref=entry, content=f"More about the bell, part {i}.")
    for _ in range(6):
        npc = NPCFactory()
        for tier in range(3):
            make_segment(scope="npc", ref=npc, tier=tier, content=f"{npc.name} at tier {tier}.")
        body["npcs"].append({"npc": npc.slug, "tier": 2})
    for i in range(30):
        lore_entry_create(
            actor=None, world=entry.world if i % 2 else None, content=f"Lore {i}.", keys=["bell"]
        )
    assert count_queries() == baseline


def test_a_cached_assembly_makes_no_query(reader, demo, django_assert_num_queries) -> None:  # type: ignore[no-untyped-def]
    assemble(reader, TURN)
    with django_assert_num_queries(0):  # the key too: kept while no key changes
        assert assemble(reader, TURN).status_code == 200


@pytest.mark.redis
def test_assemble_works_uncached_when_redis_is_down(
    reader, demo, django_assert_num_queries
) -> None:  # type: ignore[no-untyped-def]
    expected = assemble(reader, TURN).json()
    closed_port = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",
            "OPTIONS": {"IGNORE_EXCEPTIONS": True, "SOCKET_CONNECT_TIMEOUT": 0.5},
        }
    }
    with override_settings(CACHES=closed_port):
        # The first call reads the database; while the shared cache stays unreachable,
        # later ones are served from this process's memory (the API key and the release
        # labels are read each time).
        for queries in (7, 2):
            with django_assert_num_queries(queries):
                response = assemble(reader, TURN)
            assert response.status_code == 200
            assert response.json() == expected


def test_meta_outcome_is_the_net_result_in_plain_words(reader) -> None:  # type: ignore[no-untyped-def]
    cache.clear()
    scene = make_cinder_gate()
    long_war = scene["long_war"].pk
    body = {**scene["params"], "npcs": [{"npc": s, "tier": t} for s, t in scene["cast"]]}
    body["state"] = {"input": body.pop("input")}
    for url in ("/api/v1/assemble", "/api/v1/preview"):
        meta = assemble(reader, body, url).json()["meta"]
        outcome = meta["outcome"]
        assert [(c["key"], c["reason"]) for c in outcome["left_out"]] == [
            (f"segment:{long_war}", "larger_than_budget"),
            ("npc:lysa-quill", "over_npc_budget"),
        ]
        assert outcome["left_out"][0]["explanation"].endswith(
            "left out: it alone is larger than the whole 700-token budget"
        )
        assert outcome["shortened"] == []
        [oren] = outcome["lowered"]
        assert (oren["npc"], oren["tier_before"], oren["tier_after"]) == ("oren-flint", 2, 1)
        assert oren["explanation"].startswith("NPC 'Oren Flint' lowered from tier 2 to 1")
        # The trace is still there, put-backs and all.
        assert any(step["action"] == "restored" for step in meta["truncated"])
