"""One check for stored JSON: what passes can be stored, read back and rendered."""

from __future__ import annotations

import doctest
import json

import orjson
import pytest
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assembler import storable
from assembler.storable import MAX_DEPTH, StoredJsonError, check_stored_json
from promptadmin.core import storedjson


def test_the_examples_in_the_docstrings_hold() -> None:
    assert doctest.testmod(storable).failed == 0
    assert doctest.testmod(storedjson).failed == 0


@pytest.mark.parametrize(
    ("value", "path", "words"),
    [
        ({"n": 2**64}, "n", "64 bits"),
        ({"n": -(2**63) - 1}, "n", "64 bits"),
        ({"a": [0, float("inf")]}, "a.1", "finite"),
        ({"a": float("nan")}, "a", "finite"),
        ({"a": "x\x00y"}, "a", "NUL"),
        ({"a\x00": 1}, "a\x00", "NUL"),
        ({"a": "\ud800"}, "a", "surrogates"),
        ({"\udfff": 1}, "\udfff", "surrogates"),
        ({"a": "x" * 200_001}, "a", "200000 characters"),
        ({1: "a"}, "", "keys must be text"),
        ({"a": {1, 2}}, "a", "set is not a JSON value"),
    ],
)
def test_values_that_cannot_be_stored_are_refused_naming_where(
    value: object, path: str, words: str
) -> None:
    with pytest.raises(StoredJsonError) as raised:
        check_stored_json(value)
    assert raised.value.path == path and words in raised.value.message


def test_any_depth_is_refused_without_a_recursion_error() -> None:
    deep: list[object] = []
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(StoredJsonError, match=f"nest {MAX_DEPTH} deep"):
        check_stored_json({"deep": deep})
    check_stored_json(json.loads("[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)))


def test_too_many_values_are_refused() -> None:
    with pytest.raises(StoredJsonError, match="at most 10000 values"):
        check_stored_json({"list": list(range(10_000))})


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False).filter(
        lambda f: storable.float_problem(f) is None
    )
    | st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00")),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00")),
            children,
            max_size=4,
        )
    ),
    max_leaves=20,
)


@given(json_values)
def test_every_value_that_passes_renders_and_reads_back(value: object) -> None:
    check_stored_json(value)
    assert orjson.loads(orjson.dumps(value)) == json.loads(json.dumps(value))


def test_the_explanation_escapes_what_cannot_be_shown_or_sent() -> None:
    with pytest.raises(StoredJsonError) as raised:
        check_stored_json({"k\udfff": {"a\x00": 1}})
    assert raised.value.explanation.startswith("At k\\udfff: key: text may not contain lone")
    raised.value.explanation.encode()  # an error naming a bad key can itself be sent


def through_jsonb(value: object) -> object:
    """``value`` as Django writes it to a jsonb column and reads it back."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT (%s::jsonb)::text", [json.dumps(value)])
        return json.loads(cursor.fetchone()[0])


def encodes(value: object) -> bool:
    try:
        orjson.dumps(value)
    except orjson.JSONEncodeError:
        return False
    return True


@pytest.mark.parametrize("number", [1e20, 1.63e284, -1e19, 2.0**64, -(2.0**63) * 1.0000001])
@pytest.mark.postgres
@pytest.mark.django_db
def test_the_examples_come_back_from_postgresql_as_integers_no_encoder_writes(
    number: float,
) -> None:
    stored = through_jsonb({"x": number})
    assert isinstance(stored, dict) and isinstance(stored["x"], int) and not encodes(stored)
    with pytest.raises(StoredJsonError, match="integers must fit in 64 bits"):
        check_stored_json({"x": number})


@pytest.mark.postgres
@pytest.mark.django_db
@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.floats(allow_nan=False, allow_infinity=False)
    | st.floats(min_value=1e15, max_value=1e21)
    | st.floats(min_value=-1e21, max_value=-1e15)
    | st.sampled_from(
        [2.0**63, 2.0**64, -(2.0**63), 1.8446744073709550e19, 1e16, 9.999999999999998e15]
    )
)
def test_a_float_is_refused_exactly_when_postgresql_gives_back_what_cannot_be_encoded(
    number: float,
) -> None:
    refused = storable.float_problem(number) is not None
    assert refused == (not encodes(through_jsonb(number)))
