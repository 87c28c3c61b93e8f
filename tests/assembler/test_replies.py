"""Reply expectations: every kind passing and failing, hostile patterns and schemas."""

from __future__ import annotations

import time

import pytest

from assembler import get_tokenizer
from assembler.history import HistoryMessage, SummaryText
from assembler.impact import ExpectationError
from assembler.replies import (
    NO_INPUT,
    check_reply,
    parse_judgement,
    parse_reply_expectation,
    playtest_messages,
    reply_params_problems,
)
from assembler.request import History

TOK = get_tokenizer()


def verdict(data: dict, reply: str, judge=None):  # type: ignore[no-untyped-def]
    return check_reply(parse_reply_expectation(data), reply, TOK, judge)


@pytest.mark.parametrize(
    ("data", "good", "bad"),
    [
        ({"kind": "reply_contains", "text": "bell"}, "The bell tolls.", "Silence."),
        ({"kind": "reply_excludes", "text": "As an AI"}, "Aye.", "As an AI, I cannot."),
        ({"kind": "reply_matches", "pattern": r"^\w+, traveller"}, "Ahoy, traveller", "Go away"),
        (
            {"kind": "reply_json", "schema": {"type": "object", "required": ["mood"]}},
            '{"mood": "wary"}',
            '{"tone": 1}',
        ),
        ({"kind": "reply_max_tokens", "tokens": 3}, "Aye.", "Aye, the bell tolls for thee."),
    ],
)
def test_each_kind_passes_and_fails(data: dict, good: str, bad: str) -> None:  # type: ignore[type-arg]
    assert verdict(data, good).passed
    failed = verdict(data, bad)
    assert not failed.passed and failed.detail


def test_a_reply_that_is_not_json_fails_saying_so() -> None:
    result = verdict({"kind": "reply_json", "schema": {"type": "object"}}, "not json")
    assert not result.passed and result.detail.startswith("not JSON")


def test_the_judge_grades_with_its_reason() -> None:
    data = {"kind": "judge", "rubric": "stays in character"}
    assert verdict(data, "Aye.", lambda rubric, reply: (True, "in character")).passed
    failed = verdict(data, "As an AI...", lambda rubric, reply: (False, "breaks character"))
    assert (failed.passed, failed.detail) == (False, "breaks character")
    assert not verdict(data, "Aye.").passed  # no judge asked: never a silent pass
    assert parse_judgement("FAIL: breaks character.\nmore") == (False, "breaks character.")
    assert parse_judgement("**PASS**: fine") == (True, "fine")


def test_a_hostile_pattern_runs_in_linear_time() -> None:
    expectation = {"kind": "reply_matches", "pattern": "(a+)+$"}
    started = time.monotonic()
    result = verdict(expectation, "a" * 100_000 + "b")
    # With Python's re this takes longer than the universe; RE2 is linear.
    assert time.monotonic() - started < 5
    assert not result.passed


def test_a_schema_pattern_runs_on_re2_too() -> None:
    schema = {"type": "object", "properties": {"x": {"type": "string", "pattern": "(a+)+$"}}}
    started = time.monotonic()
    result = verdict({"kind": "reply_json", "schema": schema}, '{"x": "' + "a" * 50_000 + 'b"}')
    assert time.monotonic() - started < 5
    assert not result.passed


@pytest.mark.parametrize(
    ("data", "field", "words"),
    [
        ({"kind": "reply_matches", "pattern": "(?<=a)b"}, "pattern", "RE2"),
        ({"kind": "reply_matches", "pattern": "(unclosed"}, "pattern", "RE2"),
        ({"kind": "reply_matches", "pattern": "x" * 1001}, "pattern", "1000"),
        ({"kind": "reply_json", "schema": {"type": "nope"}}, "schema", "Not a valid JSON Schema"),
        ({"kind": "reply_json", "schema": "object"}, "schema", "Expected a JSON Schema"),
        ({"kind": "reply_json", "schema": {"patternProperties": {"a": {}}}}, "schema", "pattern"),
        ({"kind": "reply_json", "schema": {"pattern": "(?<=a)"}}, "schema", "RE2"),
        ({"kind": "reply_max_tokens", "tokens": 0}, "tokens", "whole number"),
        ({"kind": "reply_max_tokens", "tokens": True}, "tokens", "whole number"),
        ({"kind": "judge", "rubric": "  "}, "rubric", "Expected some text"),
        ({"kind": "judge"}, "rubric", "needs"),
        ({"kind": "reply_contains", "text": "a", "extra": 1}, "extra", "takes no"),
        ({"kind": {}}, "kind", "Unknown kind"),
        ({"kind": ["judge"]}, "kind", "Unknown kind"),
    ],
)
def test_bad_reply_expectations_name_the_field(data: dict, field: str, words: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(ExpectationError) as refused:
        parse_reply_expectation(data)
    assert refused.value.field == field
    assert words in str(refused.value)


def test_a_deep_schema_is_refused_not_crashed() -> None:
    deep: dict = {}  # type: ignore[type-arg]
    node = deep
    for _ in range(5000):
        node["not"] = {}
        node = node["not"]
    with pytest.raises(ExpectationError):
        parse_reply_expectation({"kind": "reply_json", "schema": deep})


def test_reply_parameters_are_bounded() -> None:
    assert reply_params_problems({}) == {}
    problems = reply_params_problems(
        {"temperature": float("nan"), "max_tokens": 0, "samples": 6, "seed": 2**64}
    )
    assert set(problems) == {"temperature", "max_tokens", "samples", "seed"}


def history(*said: tuple[str, str], summary: SummaryText | None = None, budget: int = 500):  # type: ignore[no-untyped-def]
    messages = [HistoryMessage(n, role, text) for n, (role, text) in enumerate(said, start=1)]
    return History(messages, summary, budget)


def test_a_history_is_sent_as_messages_in_their_roles_before_the_input() -> None:
    said = history(("user", "Hail."), ("assistant", "Aye."), ("system", "Night falls."))
    assert playtest_messages("PROMPT", {"mood": "wary"}, said, TOK) == [
        {"role": "system", "content": "PROMPT"},
        {"role": "user", "content": "Hail."},
        {"role": "assistant", "content": "Aye."},
        {"role": "system", "content": "Night falls."},
        {"role": "user", "content": '{"mood": "wary"}'},
    ]
    assert playtest_messages("PROMPT", None, said, TOK)[-1]["content"] == "Night falls."
    assert playtest_messages("PROMPT", None, history(), TOK)[-1]["content"] == NO_INPUT


def test_the_history_sent_is_fitted_to_its_budget_with_the_summary_first() -> None:
    older = [("user", f"Old question {n}?") for n in range(40)]
    said = history(
        *older,
        ("user", "Where is the bell?"),
        ("assistant", "In the tower."),
        summary=SummaryText("Ann asked many things.", covers_through=10),
        budget=40,
    )
    messages = playtest_messages("PROMPT", "Go.", said, TOK)
    assert messages[1] == {
        "role": "system",
        "content": "Summary of earlier conversation:\nAnn asked many things.",
    }
    assert messages[-3:] == [
        {"role": "user", "content": "Where is the bell?"},
        {"role": "assistant", "content": "In the tower."},
        {"role": "user", "content": "Go."},
    ]
    assert len(messages) < 10  # the budget keeps only the newest messages


def test_a_message_cut_short_by_the_budget_is_sent_as_cut() -> None:
    long = "Tell me about the old wars of the north. Start with the first one."
    (_system, cut) = playtest_messages("PROMPT", None, history(("user", long), budget=14), TOK)
    assert cut == {"role": "user", "content": "Tell me about the old wars of the north."}


def test_a_pattern_is_shown_as_its_author_wrote_it() -> None:
    # repr() showed r"^\w+" as '^\\w+': a pattern that looked wrong in every verdict.
    data = {"kind": "reply_matches", "pattern": r"^\w+, traveller"}
    assert verdict(data, "Go away").detail == r"does not match '^\w+, traveller'"
