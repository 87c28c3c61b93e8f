"""The render input's fast path accepts only what full validation accepts, with the same
result; everything else (errors included) comes from the serializer."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from rest_framework.exceptions import ValidationError

from assembler import storable
from promptadmin.api.fastpath import well_formed_render
from promptadmin.api.serializers.common import MAX_TEXT
from promptadmin.api.serializers.prompts import RenderSerializer
from scripts import bench_api

PROPERTY = settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])

names = st.one_of(
    st.sampled_from(["default", "rubric", "production", "langchain", "a", "x" * 64]),
    st.from_regex(r"[a-z0-9][a-z0-9_.-]{0,20}", fullmatch=True),
)
# Names full validation accepts too, but trims or that are not ASCII.
odd_names = st.sampled_from([" padded ", "é", "Upper", "tab\t"])
storable_text = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=20
)
json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**63), 2**63 - 1),
        # What stored JSON takes: finite, and not stored as an integer beyond 64 bits.
        st.floats(allow_nan=False, allow_infinity=False).filter(
            lambda f: storable.float_problem(f) is None
        ),
        storable_text,
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(storable_text, inner, max_size=3)
    ),
    max_leaves=8,
)
storable_objects = st.dictionaries(storable_text, json_values, max_size=4)
valid_fields: dict[str, st.SearchStrategy[Any]] = {
    "task_type": st.one_of(st.none(), st.just(""), names, odd_names),
    "template": st.one_of(names, odd_names),
    "variables": storable_objects,
    "interface": st.one_of(st.none(), names, odd_names),
    "user_instructions": st.one_of(st.none(), st.just(""), storable_text, st.just(" padded ")),
    "instruction_context": storable_objects,
    "format": st.sampled_from(["messages", "text"]),
}
valid_bodies = st.one_of(
    st.fixed_dictionaries({}, optional=valid_fields),
    st.fixed_dictionaries({"label": st.one_of(names, odd_names)}, optional=valid_fields),
    st.fixed_dictionaries({"version": st.integers(1, 2**31 - 1)}, optional=valid_fields),
)

NEAR_MISSES = (
    None,
    True,
    False,
    0,
    1,
    -1,
    1.5,
    2**31,
    "",
    " ",
    " a",
    "a ",
    "\x00",
    "a\x00",
    "\ud800",
    "é",
    "x" * 65,
    "x" * (MAX_TEXT + 1),
    "1",
    "messages",
    "text",
    "yaml",
    [],
    ["a"],
    {},
    {"a": 1},
    {"a": "\x00"},
    {"k\ud800": 1},
    {"a": float("nan")},
    {"a": 2**64},
    {"a": json.loads("[" * 40 + "1" + "]" * 40)},  # deeper than stored JSON may nest
    {"a": json.loads("[" * 31 + "1" + "]" * 31)},
    {"a": [1] * 10_001},  # more values than stored JSON may hold
    {"a\x00": 1},
    {"a": {"b": ["\ud800"]}},
)
near_misses = st.sampled_from(NEAR_MISSES)
anything = st.one_of(
    near_misses,
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=70),
    st.lists(st.one_of(st.text(max_size=5), st.integers()), max_size=3),
    st.dictionaries(st.text(max_size=5), st.one_of(st.text(max_size=5), st.integers())),
)
PLACES = (*valid_fields, "label", "version", "unknown")


def changed(body: dict[str, Any], where: str, bad: Any) -> dict[str, Any]:
    """``body`` with the value at ``where`` (a field, or a value inside an object field)
    replaced by ``bad``."""
    body = dict(body)
    if where in ("variables", "instruction_context") and isinstance(bad, str) and bad:
        body[where] = {**body.get(where, {}), "x": bad}
    else:
        body[where] = bad
    return body


@st.composite
def one_thing_changed(draw: st.DrawFn) -> dict[str, Any]:
    return changed(
        draw(valid_bodies),
        draw(st.sampled_from(PLACES)),
        draw(st.one_of(near_misses, anything)),
    )


mixed_bodies = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            **{name: st.one_of(strategy, anything) for name, strategy in valid_fields.items()},
            "label": st.one_of(names, anything),
            "version": st.one_of(st.integers(1, 2**31 - 1), anything),
            "unknown": anything,
        },
    ),
    anything,
)


def full_validation(body: Any) -> dict[str, Any] | None:
    serializer = RenderSerializer(data=body)
    if not serializer.is_valid():
        return None
    return dict(serializer.validated_data)


@PROPERTY
@given(valid_bodies)
@example({})
@example({"task_type": None, "interface": None, "user_instructions": None})
def test_valid_bodies_give_what_full_validation_gives(body: dict[str, Any]) -> None:
    expected = full_validation(body)
    assert expected is not None, body
    taken = well_formed_render(body)
    if taken is not None:
        assert taken == expected


@PROPERTY
@given(one_thing_changed())
def test_one_bad_value_anywhere_is_left_to_full_validation(body: dict[str, Any]) -> None:
    taken = well_formed_render(body)
    if taken is not None:
        assert full_validation(body) == taken


@PROPERTY
@given(mixed_bodies)
@example({"label": "production", "version": 1})
@example({"template": None})
@example({"variables": None})
@example({"user_instructions": "a\x00"})
@example({"user_instructions": "\ud800"})
@example({"version": True})
def test_the_fast_path_accepts_nothing_full_validation_refuses(body: Any) -> None:
    taken = well_formed_render(body)
    if taken is not None:
        assert full_validation(body) == taken


def test_every_near_miss_in_every_place_is_left_to_full_validation() -> None:
    base = json.loads(json.dumps(bench_api.RENDER_BODY))
    for where in PLACES:
        for bad in NEAR_MISSES:
            body = changed(base, where, bad)
            taken = well_formed_render(body)
            if taken is not None:
                assert full_validation(body) == taken, (where, bad)


@pytest.mark.parametrize(
    "body",
    [
        json.loads(json.dumps(bench_api.RENDER_BODY)),
        {"task_type": "parsing", "variables": {"subject": "essays", "question": "Why?"}},
        {"version": 2, "format": "text", "interface": "manual", "user_instructions": ""},
        {"task_type": "", "label": "staging", "template": "short", "instruction_context": {}},
    ],
)
def test_requests_as_pipelines_send_them_take_the_fast_path(body: dict[str, Any]) -> None:
    assert well_formed_render(body) is not None
    assert well_formed_render(body) == full_validation(body)


def test_errors_come_from_full_validation() -> None:
    with pytest.raises(ValidationError) as raised:
        RenderSerializer.parse({"label": "a", "version": 0, "template": "", "colour": "red"})
    assert set(raised.value.detail) == {"version", "template", "colour"}
    with pytest.raises(ValidationError) as raised:
        RenderSerializer.parse({"label": "a", "version": 1})
    assert set(raised.value.detail) == {"version"}
