"""The assembly input's fast path accepts only what full validation accepts, with the same
result; everything else (errors included) comes from the serializer."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from rest_framework.exceptions import ValidationError

from assembler import DYNAMIC_SCOPES, MAX_BUDGET
from assembler.request import DEFAULT_FLOOR
from promptadmin.api.fastpath import well_formed as _well_formed
from promptadmin.api.serializers.assembly import (
    AssembleInputSerializer,
    FloorsSerializer,
    PolicySerializer,
    PreviewInputSerializer,
    StateSerializer,
)
from promptadmin.api.serializers.common import MAX_TEXT
from promptadmin.content.models import MAX_TIER
from scripts import bench_api
from tests.promptadmin.api.test_assemble import TURN

PROPERTY = settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FLAGS = PreviewInputSerializer.FLAGS

# Values full validation accepts.
valid_slugs = st.one_of(
    st.sampled_from(["drowned-bell", "a", "x" * 64, "marta-vell"]),
    st.from_regex(r"[a-z0-9][a-z0-9-]{0,20}", fullmatch=True),
)
valid_npc_slugs = st.one_of(valid_slugs, st.sampled_from([" padded ", "é", "Upper"]))
valid_budgets = st.one_of(st.integers(0, MAX_BUDGET), st.sampled_from([0, MAX_BUDGET]))
valid_tiers = st.integers(0, MAX_TIER)
valid_npc = st.one_of(
    valid_npc_slugs,
    st.fixed_dictionaries({"npc": valid_npc_slugs}, optional={"tier": valid_tiers}),
)
json_objects = st.dictionaries(
    st.text(max_size=8), st.one_of(st.integers(), st.text(max_size=20), st.none()), max_size=3
)
# What a state object may hold (core.storedjson): storable text, 64-bit integers.
storable_text = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=20
)
storable_objects = st.dictionaries(
    storable_text,
    st.one_of(st.integers(-(2**63), 2**63 - 1), storable_text, st.none()),
    max_size=3,
)
valid_state_value = st.one_of(st.none(), st.text(max_size=40), storable_objects)
valid_fraction = st.one_of(st.floats(0, 1), st.sampled_from([0, 1]))
valid_policy = st.fixed_dictionaries(
    {},
    optional={
        "floors": st.dictionaries(st.sampled_from(DYNAMIC_SCOPES), valid_fraction),
        "block_format": st.sampled_from(["delimited", "xml", "markdown"]),
    },
)
valid_fields: dict[str, st.SearchStrategy[Any]] = {
    "world": st.one_of(st.none(), valid_slugs),
    "first_turn": st.booleans(),
    "strict": st.booleans(),
    "include_inactive": st.booleans(),
    "token_budget": valid_budgets,
    "npc_budget": valid_budgets,
    "npcs": st.lists(
        valid_npc, max_size=6, unique_by=lambda n: n if isinstance(n, str) else n["npc"]
    ),
    "state": st.dictionaries(st.sampled_from(DYNAMIC_SCOPES), valid_state_value),
    "policy": valid_policy,
    "conversation": st.one_of(
        st.none(),
        st.sampled_from(["npc:marta@run-7", "a", "x" * 200]),
        st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,30}", fullmatch=True),
    ),
    "history_budget": st.one_of(st.none(), valid_budgets),
}
valid_bodies = st.fixed_dictionaries({"entry": valid_slugs}, optional=valid_fields)

# Anything at all in any field, near misses first.
NEAR_MISSES = (
    None,
    True,
    False,
    0,
    -1,
    1.5,
    "",
    " ",
    " a",
    "a ",
    "\x00",
    "\ud800",
    "é",
    "x" * 65,
    MAX_BUDGET + 1,
    MAX_TIER + 1,
    float("inf"),
    [],
    {},
    ["a", "a"],
    {"npc": "a", "x": 1},
    {"tier": 1},
    {"npc": "a", "tier": True},
    {"npc": "a", "tier": -1},
    "1",
    "true",
    "x" * (MAX_TEXT + 1),
    {"floors": {"input": 2}},
    {"floors": {"hp": 0.1}},
    {"block_format": "yaml"},
    {"input": 5},
    {"hp": "x"},
    [{"npc": "a"}, "a"],
    ["b"] * 51,
    [f"npc-{i}" for i in range(51)],
    [None],
    [["a"]],
    {"k\ud800": ["v"]},
    {"k": 2**64},
    {"k": [float("nan")]},
    {"k": {"v": "a\x00"}},
    {"k\x00": 1},
    {"k": json.loads("[" * 33 + "]" * 33)},  # deeper than stored JSON may nest
    {"k": json.loads("[" * 31 + "]" * 31)},
)
near_misses = st.sampled_from(NEAR_MISSES)
anything = st.one_of(
    near_misses,
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=70),
    st.lists(st.one_of(st.text(max_size=5), st.integers(), json_objects), max_size=4),
    json_objects,
)


def either(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(valid, anything)


layer_names = st.sampled_from([*DYNAMIC_SCOPES, "hp"])
mixed_fields = {name: either(strategy) for name, strategy in valid_fields.items()}
mixed_fields["npcs"] = either(
    st.lists(
        either(
            st.fixed_dictionaries(
                {"npc": either(valid_npc_slugs)},
                optional={"tier": either(valid_tiers), "x": anything},
            )
        ),
        max_size=4,
    )
)
mixed_fields["state"] = either(
    st.dictionaries(
        layer_names,
        st.one_of(valid_state_value, anything, st.just("x" * (MAX_TEXT + 1))),
        max_size=4,
    )
)
mixed_fields["policy"] = either(
    st.fixed_dictionaries(
        {},
        optional={
            "floors": either(
                st.dictionaries(layer_names, st.one_of(valid_fraction, anything), max_size=3)
            ),
            "block_format": either(st.sampled_from(["delimited", "xml", "markdown", "yaml"])),
            "x": anything,
        },
    )
)
mixed_bodies = st.one_of(
    st.fixed_dictionaries(
        {"entry": either(valid_slugs)},
        optional={**mixed_fields, "unknown": anything},
    ),
    st.fixed_dictionaries({}, optional=mixed_fields),
    anything,
)


PLACES = (
    *valid_fields,
    "entry",
    "unknown",
    "npc",
    "npc.npc",
    "npc.tier",
    "npc.x",
    "state.input",
    "state.hp",
    "policy",
    "policy.floors",
    "policy.floors.input",
    "policy.floors.hp",
    "policy.block_format",
    "policy.x",
)


def changed(body: dict[str, Any], where: str, bad: Any) -> dict[str, Any]:
    """``body`` with the value at ``where`` (a place in PLACES) replaced by ``bad``."""
    body = json.loads(json.dumps(body))
    top, _, inner = where.partition(".")
    if top == "npc":
        npcs = [*body.get("npcs", []), {"npc": "zz-last", "tier": 1}]
        npcs[-1] = bad if not inner else {**npcs[-1], inner: bad}
        body["npcs"] = npcs
    elif top == "state" and inner:
        body["state"] = {**body.get("state", {}), inner: bad}
    elif top == "policy" and inner.startswith("floors."):
        policy = body.get("policy", {})
        body["policy"] = {**policy, "floors": {**policy.get("floors", {}), inner[7:]: bad}}
    elif top == "policy" and inner:
        body["policy"] = {**body.get("policy", {}), inner: bad}
    else:
        body[top] = bad
    return body


@st.composite
def one_thing_changed(draw: st.DrawFn) -> dict[str, Any]:
    """A valid body with one value, at any depth, replaced by a near miss or anything."""
    return changed(
        draw(valid_bodies),
        draw(st.sampled_from(PLACES)),
        draw(st.one_of(near_misses, anything)),
    )


@PROPERTY
@given(one_thing_changed())
def test_one_bad_value_anywhere_is_left_to_full_validation(body: dict[str, Any]) -> None:
    taken = fast(body)
    if taken is not None:
        assert full_validation(body) == taken


def test_every_near_miss_in_every_place_is_left_to_full_validation() -> None:
    base = {**TURN, "policy": {"floors": {"rng": 0.2}, "block_format": "xml"}}
    for where in PLACES:
        for bad in NEAR_MISSES:
            body = changed(base, where, bad)
            taken = fast(body)
            if taken is not None:
                assert full_validation(body) == taken, (where, bad)


def full_validation(body: Any) -> tuple[Any, bool] | None:
    serializer = PreviewInputSerializer(data=body)
    if not serializer.is_valid():
        return None
    return serializer.params(), serializer.validated_data["include_inactive"]


def fast(body: Any) -> tuple[Any, bool] | None:
    found = _well_formed(body, FLAGS)
    return None if found is None else (found[0], found[1]["include_inactive"])


@PROPERTY
@given(valid_bodies)
@example({"entry": "a", "policy": {"floors": {}}})
@example({"entry": "a", "state": {"input": None}, "world": None})
def test_valid_bodies_give_what_full_validation_gives(body: dict[str, Any]) -> None:
    expected = full_validation(body)
    assert expected is not None, PreviewInputSerializer(data=body).errors
    taken = fast(body)
    if taken is not None:
        assert taken == expected


@PROPERTY
@given(mixed_bodies)
@example({"entry": "a\ud800"})
@example({"entry": " a"})
@example({"entry": "a", "npcs": ["a", {"npc": "a", "tier": 1}]})
@example({"entry": "a", "policy": {"floors": {"input": True}}})
@example({"entry": "a", "state": None})
@example({"entry": "a", "npcs": None})
def test_the_fast_path_accepts_nothing_full_validation_refuses(body: Any) -> None:
    taken = fast(body)
    if taken is not None:
        assert full_validation(body) == taken


@pytest.mark.parametrize(
    "body",
    [
        TURN,
        {"entry": "drowned-bell"},
        json.loads(json.dumps(bench_api.SCENARIOS[1].body)),
        json.loads(json.dumps(bench_api.SCENARIOS[2].body)),
        {**TURN, "policy": {"floors": {"input": 0.2}, "block_format": "xml"}, "strict": True},
    ],
)
def test_requests_as_games_send_them_take_the_fast_path(body: dict[str, Any]) -> None:
    assert fast(body) is not None
    assert fast(body) == full_validation(body)


def test_errors_come_from_full_validation() -> None:
    with pytest.raises(ValidationError) as raised:
        AssembleInputSerializer.parse({"entry": " ", "token_budget": -1, "colour": "red"})
    assert set(raised.value.detail) == {"entry", "token_budget", "colour"}
    with pytest.raises(ValidationError):
        AssembleInputSerializer.parse({"entry": "a", "include_inactive": True})


def test_the_state_and_the_floors_name_the_assemblers_dynamic_layers() -> None:
    assert list(StateSerializer().fields) == list(DYNAMIC_SCOPES)
    assert list(FloorsSerializer().fields) == list(DYNAMIC_SCOPES)
    floors = PolicySerializer().fields["floors"]
    assert floors.help_text == f"Default: {DEFAULT_FLOOR:g} for each layer."
