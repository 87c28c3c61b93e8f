"""The one request parser: what an assembly or render request may hold, and the words of
every refusal (the API, the studio's preview and scenarios all call it)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from assembler.request import (
    ASSEMBLE_FIELDS,
    DYNAMIC_SCOPES,
    INT32,
    MAX_BUDGET,
    MAX_CONVERSATION_KEY,
    MAX_NAME,
    MAX_NPCS,
    MAX_SLUG,
    MAX_TEXT,
    MAX_TIER,
    AssembleParams,
    LoreOptions,
    RenderParams,
    RequestError,
    parse_assemble_params,
    parse_preview_params,
    parse_render_params,
)

PROPERTY = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])

slugs = st.one_of(
    st.sampled_from(["drowned-bell", "a", "x" * MAX_SLUG, "marta-vell"]),
    st.from_regex(r"[a-z0-9][a-z0-9-]{0,20}", fullmatch=True),
)
storable_text = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=20
)
json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**63), 2**63 - 1),
        st.floats(-1e15, 1e15, allow_nan=False),
        storable_text,
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(storable_text, inner, max_size=3)
    ),
    max_leaves=8,
)
valid_npcs = st.lists(
    st.one_of(
        slugs,
        st.fixed_dictionaries({"npc": slugs}, optional={"tier": st.integers(0, MAX_TIER)}),
    ),
    max_size=6,
    unique_by=lambda npc: npc if isinstance(npc, str) else npc["npc"],
)
valid_bodies = st.fixed_dictionaries(
    {"entry": slugs},
    optional={
        "world": st.one_of(st.none(), slugs),
        "first_turn": st.booleans(),
        "strict": st.booleans(),
        "token_budget": st.integers(0, MAX_BUDGET),
        "npc_budget": st.integers(0, MAX_BUDGET),
        "npcs": valid_npcs,
        "state": st.dictionaries(
            st.sampled_from(DYNAMIC_SCOPES),
            st.one_of(st.none(), st.text(max_size=40), st.dictionaries(storable_text, json_values)),
        ),
        "policy": st.fixed_dictionaries(
            {},
            optional={
                "floors": st.dictionaries(st.sampled_from(DYNAMIC_SCOPES), st.floats(0, 1)),
                "block_format": st.sampled_from(["delimited", "xml", "markdown"]),
            },
        ),
        "conversation": st.one_of(
            st.none(), st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,30}", fullmatch=True)
        ),
        "history_budget": st.one_of(st.none(), st.integers(0, MAX_BUDGET)),
        "release": st.one_of(st.none(), st.sampled_from(["production", "working", "r-1.2"])),
    },
)
# Anything at all, hostile values first.
HOSTILE = (
    None,
    True,
    0,
    -1,
    1.5,
    float("nan"),
    float("inf"),
    2**31,
    2**64,
    10**400,
    "",
    " ",
    "\x00",
    "\ud800",
    "x" * (MAX_SLUG + 1),
    "x" * (MAX_TEXT + 1),
    [],
    {},
    ["a"] * (MAX_NPCS + 1),
    {"npc": "a", "tier": -1},
    {"k\ud800": 1},
    {"k": [float("nan")]},
    json.loads("[" * 40 + "]" * 40),
)
anything = st.one_of(
    st.sampled_from(HOSTILE),
    st.integers(),
    st.floats(),
    st.text(max_size=30),
    st.lists(st.one_of(st.text(max_size=5), st.integers(), st.none()), max_size=4),
    st.dictionaries(st.text(max_size=6), st.one_of(st.text(max_size=5), st.integers())),
)
hostile_bodies = st.one_of(
    anything,
    st.dictionaries(st.sampled_from([*ASSEMBLE_FIELDS, "colour"]), anything, max_size=6),
    valid_bodies.flatmap(
        lambda body: st.tuples(st.sampled_from([*ASSEMBLE_FIELDS, "x"]), anything).map(
            lambda change: {**body, change[0]: change[1]}
        )
    ),
)


def sent(problem_text: str) -> bool:
    """Whether a refusal can be sent as it is (UTF-8 without a lone surrogate)."""
    try:
        problem_text.encode()
    except UnicodeEncodeError:
        return False
    return True


@PROPERTY
@given(valid_bodies)
@example({"entry": " drowned-bell ", "npcs": ["a", {"npc": "b", "tier": 2}]})
def test_a_valid_request_is_read_as_written(body: dict[str, Any]) -> None:
    params = parse_assemble_params(body)
    assert params.entry == body["entry"].strip()
    assert params.npcs == tuple(
        (npc, 0) if isinstance(npc, str) else (npc["npc"], npc.get("tier", 0))
        for npc in body.get("npcs", [])
    )
    assert dict(params.state) == body.get("state", {})
    assert params.token_budget == body.get("token_budget", 8000)
    floors = body.get("policy", {}).get("floors")
    assert params.floors == (floors or None)


@PROPERTY
@given(hostile_bodies)
@example({"entry": "a", "state": {"input": "\ud800"}})
@example({"entry": "a", "policy": {"floors": {"input": 10**400}}})
@example({"k\ud800": 1})
@example({"entry": "a", "npcs": [{"npc": "a", "k\x00": 1}]})
def test_any_body_is_read_or_refused_in_words_that_can_be_sent(body: Any) -> None:
    try:
        params = parse_assemble_params(body)
    except RequestError as error:
        assert error.problems
        for problem in error.problems:
            assert problem.message and sent(problem.message) and sent(problem.field)
    else:
        assert isinstance(params, AssembleParams)


def test_every_bad_field_is_named_at_once() -> None:
    with pytest.raises(RequestError) as raised:
        parse_assemble_params(
            {
                "entry": " ",
                "token_budget": -1,
                "colour": "red",
                "npcs": [{"npc": "a", "tier": MAX_TIER + 1}, 7],
                "state": {"weather": "rain", "input": 5},
                "policy": {"floors": {"input": 2}, "block_format": "yaml"},
            }
        )
    assert list(raised.value.errors) == [
        "colour",
        "entry",
        "token_budget",
        "npcs.0.tier",
        "npcs.1",
        "state.weather",
        "state.input",
        "policy.floors.input",
        "policy.block_format",
    ]


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"npcs": [f"npc-{i}" for i in range(MAX_NPCS + 1)]}, "npcs", "no more than 50 elements"),
        ({"npcs": [{"npc": "a", "tier": -1}]}, "npcs.0.tier", "tier from 0 to 32767"),
        ({"npcs": [{"npc": "a", "tier": MAX_TIER + 1}]}, "npcs.0.tier", "tier from 0 to 32767"),
        ({"npcs": [{"npc": "a", "tier": True}]}, "npcs.0.tier", "tier from 0 to 32767"),
        ({"npcs": ["x" * (MAX_SLUG + 1)]}, "npcs.0.npc", "1 to 64 characters"),
        ({"npcs": ["a\x00"]}, "npcs.0.npc", "without NUL"),
        ({"npcs": ["a", "a"]}, "npcs", "Each NPC may be listed once; repeated: a."),
        ({"entry": "x" * (MAX_SLUG + 1)}, "entry", "no more than 64 characters"),
        ({"entry": "a\x00"}, "entry", "Null characters are not allowed."),
        ({"entry": "a\ud800"}, "entry", "Surrogate characters are not allowed: U+D800."),
        ({"world": 5}, "world", "Expected a string."),
        ({"token_budget": 2**31}, "token_budget", "less than or equal to 1000000"),
        ({"npc_budget": -1}, "npc_budget", "greater than or equal to 0"),
        ({"token_budget": 1.0}, "token_budget", "Expected an integer."),
        ({"history_budget": MAX_BUDGET + 1}, "history_budget", "less than or equal"),
        ({"first_turn": "yes"}, "first_turn", "Expected true or false."),
        ({"state": {"input": "\ud800"}}, "state.input", "lone surrogates"),
        ({"state": {"input": "x" * (MAX_TEXT + 1)}}, "state.input", "At most 200000"),
        ({"state": {"input": {"k": float("nan")}}}, "state.input", "At k: numbers must be"),
        ({"state": {"input": 5}}, "state.input", "Expected text, a JSON object or null."),
        ({"state": []}, "state", "Expected a dictionary, but got list."),
        ({"policy": {"floors": {"rng": float("nan")}}}, "policy.floors.rng", "a number"),
        ({"policy": {"floors": {"rng": 10**400}}}, "policy.floors.rng", "less than or equal"),
        ({"policy": {"block_format": "yaml"}}, "policy.block_format", "not a valid choice"),
        ({"conversation": "x" * (MAX_CONVERSATION_KEY + 1)}, "conversation", "200 characters"),
        ({"conversation": "-bad"}, "conversation", "starting with a letter or digit"),
        ({"release": "Production"}, "release", "Expected a label, a release name"),
        ({"release": 5}, "release", "Expected a label, a release name"),
        ({"k\ud800": 1}, "k\\ud800", "Unknown field; the fields are: entry, world,"),
        ({"lore": {"scan_depth": 101}}, "lore.scan_depth", "less than or equal to 100"),
        ({"lore": {"recursion": -1}}, "lore.recursion", "greater than or equal to 0"),
        ({"lore": {"budget": MAX_BUDGET + 1}}, "lore.budget", "less than or equal"),
        ({"lore": {"enabled": 1}}, "lore.enabled", "Expected true or false."),
        ({"lore": {"depth": 1}}, "lore.depth", "the fields are: scan_depth, budget,"),
        ({"lore": []}, "lore", "Expected a dictionary, but got list."),
    ],
)
def test_each_limit_is_refused_in_its_own_words(
    change: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(RequestError) as raised:
        parse_assemble_params({"entry": "drowned-bell", **change})
    assert list(raised.value.errors) == [field]
    assert message in raised.value.errors[field][0]


def test_lore_options_default_one_by_one() -> None:
    params = parse_assemble_params({"entry": "a", "lore": {"budget": None, "enabled": False}})
    assert params.lore == LoreOptions(enabled=False)
    assert parse_assemble_params({"entry": "a"}).lore == LoreOptions()


def test_a_body_that_is_not_an_object_is_refused_as_a_whole() -> None:
    for body, message in [(None, "No data provided"), ([], "but got list.")]:
        with pytest.raises(RequestError) as raised:
            parse_assemble_params(body)
        assert raised.value.problems[0].path == ()
        assert message in str(raised.value)


def test_a_preview_takes_include_inactive_and_an_assembly_does_not() -> None:
    params, inactive = parse_preview_params({"entry": "a", "include_inactive": True})
    assert (params.entry, inactive) == ("a", True)
    with pytest.raises(RequestError) as raised:
        parse_assemble_params({"entry": "a", "include_inactive": True})
    assert list(raised.value.errors) == ["include_inactive"]


# Render requests.

render_bodies = st.fixed_dictionaries(
    {},
    optional={
        "task_type": st.one_of(st.none(), st.just(""), slugs),
        "template": slugs,
        "variables": st.dictionaries(storable_text, json_values, max_size=4),
        "interface": st.one_of(st.none(), slugs),
        "user_instructions": st.one_of(st.none(), st.just(""), storable_text),
        "instruction_context": st.dictionaries(storable_text, json_values, max_size=4),
        "format": st.sampled_from(["messages", "text"]),
        "label": slugs,
    },
)


@PROPERTY
@given(render_bodies)
def test_a_valid_render_request_is_read_as_written(body: dict[str, Any]) -> None:
    params = parse_render_params(body)
    assert params.variables == body.get("variables", {})
    assert params.label == body.get("label")
    assert params.format == body.get("format", "messages")
    assert params.user_instructions == body.get("user_instructions")


@PROPERTY
@given(
    st.one_of(
        anything,
        st.dictionaries(
            st.sampled_from([*RenderParams.__dataclass_fields__, "colour"]), anything, max_size=5
        ),
    )
)
@example({"user_instructions": "a\x00"})
@example({"variables": {"a\x00": 1}})
@example({"\u00b2": 1})
def test_any_render_body_is_read_or_refused_in_words_that_can_be_sent(body: Any) -> None:
    try:
        parse_render_params(body)
    except RequestError as error:
        for problem in error.problems:
            assert problem.message and sent(problem.message) and sent(problem.field)


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"label": "a", "version": 1}, "version", "Give a label or a version, not both."),
        ({"version": 0}, "version", "greater than or equal to 1"),
        ({"version": INT32 + 1}, "version", f"less than or equal to {INT32}"),
        ({"template": "x" * (MAX_NAME + 1)}, "template", "no more than 64 characters"),
        ({"template": ""}, "template", "This field may not be blank."),
        ({"label": None}, "label", "This field may not be null."),
        ({"variables": [1]}, "variables", 'Expected a dictionary of items but got type "list".'),
        ({"variables": {"a": 2**64}}, "variables", "a: integers must fit in 64 bits"),
        ({"variables": {"a\x00": 1}}, "variables", "a\\u0000: key: text may not contain NUL"),
        ({"user_instructions": "a\x00"}, "user_instructions", "may not contain NUL"),
        ({"user_instructions": 5}, "user_instructions", "Expected a string."),
        ({"format": "yaml"}, "format", '"yaml" is not a valid choice.'),
    ],
)
def test_each_render_limit_is_refused_in_its_own_words(
    body: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(RequestError) as raised:
        parse_render_params(body)
    assert list(raised.value.errors) == [field]
    assert message in raised.value.errors[field][0]


def test_names_are_trimmed_and_the_user_instructions_kept_as_written() -> None:
    params = parse_render_params(
        {"task_type": " ", "template": " short ", "user_instructions": " Be brief.\n"}
    )
    assert (params.task_type, params.template, params.user_instructions) == (
        "",
        "short",
        " Be brief.\n",
    )
