"""What an author expects of a model's reply to a scenario's prompt, and checking it.

Reply expectations sit on a scenario beside the prompt ones (:mod:`assembler.impact`); a
playtest sends the scenario's prompt to a model and checks every sample against them:

``reply_contains`` / ``reply_excludes`` (``text``), ``reply_matches`` (``pattern``, run by
RE2, a linear-time engine, so a hostile pattern never hangs a worker), ``reply_json``
(``schema``: the reply parses as JSON and validates against that JSON Schema),
``reply_max_tokens`` (``tokens``) and ``judge`` (``rubric``: the same model grades the
reply pass or fail, with a one-line reason).

>>> from assembler import get_tokenizer
>>> expectation = parse_reply_expectation({"kind": "reply_matches", "pattern": "^Ahoy"})
>>> check_reply(expectation, "Ahoy, traveller.", get_tokenizer())
Verdict(kind='reply_matches', passed=True, detail="matches '^Ahoy'")
>>> check_reply(parse_reply_expectation({"kind": "reply_max_tokens", "tokens": 2}),
...     "Ahoy, traveller.", get_tokenizer()).detail
'5 tokens, over the 2 allowed'
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import re2  # google-re2: linear time, whatever the pattern
from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import SchemaError
from jsonschema.exceptions import ValidationError as SchemaValidationError

from assembler.history import fit_history, fitted_messages
from assembler.impact import MAX_EXPECTATION_TEXT, ExpectationError
from assembler.request import MAX_BUDGET, History
from assembler.tokens import Tokenizer

MAX_PATTERN = 1000
MAX_RUBRIC = 2000
# RE2's memory for one compiled pattern: a pattern needing more is refused at save.
PATTERN_MAX_MEM = 8 << 20

# kind → the one key it takes, and what that key holds.
REPLY_FIELDS: Mapping[str, str] = {
    "reply_contains": "text",
    "reply_excludes": "text",
    "reply_matches": "pattern",
    "reply_json": "schema",
    "reply_max_tokens": "tokens",
    "judge": "rubric",
}
REPLY_KINDS = tuple(REPLY_FIELDS)

Judge = Callable[[str, str], tuple[bool, str]]
"""Grades ``reply`` (second argument) against ``rubric`` (first): (passed, reason)."""


def is_reply_expectation(data: Any) -> bool:
    """Whether ``data`` (an expectation's JSON form) is about the reply, not the prompt."""
    return isinstance(data, Mapping) and _kind(data) in REPLY_FIELDS


def _kind(data: Mapping[str, Any]) -> str | None:
    """The ``kind`` of an expectation's JSON form when it is text (an object or a list
    there is no kind at all, and cannot be looked up)."""
    kind = data.get("kind")
    return kind if isinstance(kind, str) else None


@dataclass(frozen=True, slots=True)
class ReplyExpectation:
    """One thing an author expects of a reply: ``kind`` and its one ``value``."""

    kind: str
    value: Any

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, REPLY_FIELDS[self.kind]: self.value}

    @property
    def description(self) -> str:
        """The expectation in plain words.

        >>> ReplyExpectation("reply_excludes", "As an AI").description
        "the reply does not contain 'As an AI'"
        """
        if self.kind == "reply_contains":
            return f"the reply contains '{self.value}'"
        if self.kind == "reply_excludes":
            return f"the reply does not contain '{self.value}'"
        if self.kind == "reply_matches":
            return f"the reply matches '{self.value}'"
        if self.kind == "reply_json":
            return "the reply is JSON valid against the schema"
        if self.kind == "reply_max_tokens":
            return f"the reply has at most {self.value} tokens"
        return f"a judge finds: {self.value}"


@dataclass(frozen=True, slots=True)
class Verdict:
    kind: str
    passed: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "passed": self.passed, "detail": self.detail}


def compile_pattern(pattern: str) -> Any:
    """``pattern`` compiled by RE2, or ExpectationError (``pattern``) saying why not.

    >>> compile_pattern("(a+)+$").search("a" * 50 + "b") is None
    True
    >>> compile_pattern("(?<=a)b")
    Traceback (most recent call last):
    ...
    assembler.impact.ExpectationError: Not a pattern RE2 accepts: invalid perl operator: (?<=
    """
    options = re2.Options()
    options.max_mem = PATTERN_MAX_MEM
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except re2.error as error:
        why = error.args[0] if error.args else ""
        if isinstance(why, bytes):
            why = why.decode("utf-8", "replace")
        raise ExpectationError("pattern", f"Not a pattern RE2 accepts: {why}") from None


def _re2_pattern(
    validator: Any, pattern: Any, instance: Any, schema: Any
) -> Iterator[SchemaValidationError]:
    """JSON Schema's ``pattern`` keyword, run by RE2 (jsonschema's own uses ``re``)."""
    if validator.is_type(instance, "string") and compile_pattern(pattern).search(instance) is None:
        yield SchemaValidationError(f"{instance!r} does not match {pattern!r}")


# Draft 2020-12, with every regular expression a schema holds run by RE2: a schema is
# refused when it holds ``patternProperties``, whose matching jsonschema does with ``re``.
ReplySchemaValidator = validators.extend(Draft202012Validator, {"pattern": _re2_pattern})


def _schema_problem(schema: Any) -> str | None:
    if not isinstance(schema, dict | bool):
        return "Expected a JSON Schema (an object)."
    stack: list[Any] = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if "patternProperties" in node:
                return "'patternProperties' is not supported; use 'pattern' on values."
            pattern = node.get("pattern")
            if isinstance(pattern, str):
                try:
                    compile_pattern(pattern)
                except ExpectationError as error:
                    return f"pattern {pattern!r}: {error}"
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    try:
        ReplySchemaValidator.check_schema(schema)
    except SchemaError as error:
        where = "/".join(str(part) for part in error.absolute_path)
        return f"Not a valid JSON Schema{f' at {where}' if where else ''}: {error.message}"
    except RecursionError:
        return "The schema nests too deep."
    return None


def parse_reply_expectation(data: Any) -> ReplyExpectation:
    """A reply expectation from its JSON form, or ExpectationError naming the bad key.

    >>> parse_reply_expectation({"kind": "reply_json", "schema": {"type": "nope"}})
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    assembler.impact.ExpectationError: Not a valid JSON Schema at type: 'nope' is not valid...
    """
    if not isinstance(data, Mapping) or _kind(data) not in REPLY_FIELDS:
        raise ExpectationError("kind", f"Unknown kind; use one of: {', '.join(REPLY_KINDS)}.")
    kind = str(data["kind"])
    wanted = REPLY_FIELDS[kind]
    extra = sorted(set(data) - {"kind", wanted})
    if extra:
        raise ExpectationError(str(extra[0]), f"'{kind}' takes no '{extra[0]}'.")
    if wanted not in data:
        raise ExpectationError(wanted, f"'{kind}' needs '{wanted}'.")
    value = data[wanted]
    if wanted in ("text", "rubric", "pattern"):
        limit = {"text": MAX_EXPECTATION_TEXT, "rubric": MAX_RUBRIC, "pattern": MAX_PATTERN}
        if not isinstance(value, str) or not value.strip():
            raise ExpectationError(wanted, "Expected some text.")
        if len(value) > limit[wanted]:
            raise ExpectationError(wanted, f"At most {limit[wanted]} characters.")
        if wanted == "pattern":
            compile_pattern(value)
        return ReplyExpectation(kind, value)
    if wanted == "tokens":
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_BUDGET:
            raise ExpectationError(wanted, f"Expected a whole number from 1 to {MAX_BUDGET}.")
        return ReplyExpectation(kind, value)
    problem = _schema_problem(value)
    if problem is not None:
        raise ExpectationError(wanted, problem)
    return ReplyExpectation(kind, value)


def _quote(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def check_reply(
    expectation: ReplyExpectation,
    reply: str,
    tokenizer: Tokenizer,
    judge: Judge | None = None,
) -> Verdict:
    """Whether ``reply`` meets ``expectation``, and why in a line. ``judge`` grades a
    ``judge`` expectation (without one, it fails saying there is no judge)."""
    kind, value = expectation.kind, expectation.value
    if kind == "reply_contains":
        found = value in reply
        return Verdict(kind, found, f"{'contains' if found else 'does not contain'} {value!r}")
    if kind == "reply_excludes":
        found = value in reply
        return Verdict(kind, not found, f"{'contains' if found else 'does not contain'} {value!r}")
    if kind == "reply_matches":
        found = compile_pattern(value).search(reply) is not None
        # The pattern as its author wrote it: repr() would double every backslash.
        return Verdict(kind, found, f"{'matches' if found else 'does not match'} '{value}'")
    if kind == "reply_max_tokens":
        count = tokenizer.count(reply)
        if count <= value:
            return Verdict(kind, True, f"{count} tokens, within the {value} allowed")
        return Verdict(kind, False, f"{count} tokens, over the {value} allowed")
    if kind == "reply_json":
        try:
            parsed = json.loads(reply)
        except (ValueError, RecursionError) as error:
            return Verdict(kind, False, f"not JSON: {error}")
        try:
            problem = next(iter(ReplySchemaValidator(value).iter_errors(parsed)), None)
        except RecursionError:
            return Verdict(kind, False, "the JSON nests too deep to check")
        if problem is None:
            return Verdict(kind, True, "JSON valid against the schema")
        where = "/".join(str(part) for part in problem.absolute_path)
        return Verdict(kind, False, f"{where or 'the reply'}: {problem.message}")
    if judge is None:
        return Verdict(kind, False, "no judge was asked")
    passed, reason = judge(value, reply)
    return Verdict(kind, passed, reason)


JUDGE_INSTRUCTIONS = (
    "You grade a reply written by a game character against a rubric. Answer with one "
    "line: PASS or FAIL, then a colon and a one-sentence reason."
)


def judge_messages(rubric: str, reply: str) -> list[dict[str, str]]:
    """The chat messages that ask a model to grade ``reply`` against ``rubric``."""
    return [
        {"role": "system", "content": JUDGE_INSTRUCTIONS},
        {"role": "user", "content": f"Rubric: {rubric}\n\nReply:\n{reply}"},
    ]


NO_INPUT = "(no input)"
"""The user's message of a scenario with neither an input nor a conversation."""


def playtest_messages(
    prompt: str, user_input: Any, history: History | None, tokenizer: Tokenizer
) -> list[dict[str, str]]:
    """The chat messages a playtest sends: the assembled ``prompt`` as the system message;
    then, when the scenario names a conversation, its ``history`` (fitted to its budget,
    see :func:`assembler.history.fit_history`) as messages in their own roles, never
    flattened into the prompt; then the scenario's ``input`` (text, or a JSON object
    sent as JSON) as the user's message. With neither input nor history shown, the user
    says :data:`NO_INPUT`.

    >>> from assembler import get_tokenizer
    >>> from assembler.history import HistoryMessage
    >>> said = [HistoryMessage(1, "user", "Hail."), HistoryMessage(2, "assistant", "Aye.")]
    >>> for message in playtest_messages("You are Marta.", "Ring it.",
    ...         History(said, None, 500), get_tokenizer()):
    ...     print(message["role"], "-", message["content"])
    system - You are Marta.
    user - Hail.
    assistant - Aye.
    user - Ring it.
    >>> playtest_messages("You are Marta.", None, None, get_tokenizer())[1]["content"]
    '(no input)'
    """
    messages = [{"role": "system", "content": prompt}]
    if history is not None:
        fit = fit_history(
            messages=history.messages,
            summary=history.summary,
            budget=history.budget,
            tokenizer=tokenizer,
        )
        messages += [
            {"role": role, "content": content}
            for role, content in fitted_messages(fit, history.messages, history.summary)
        ]
    if user_input is not None:
        text = (
            user_input
            if isinstance(user_input, str)
            else json.dumps(user_input, ensure_ascii=False)
        )
        messages.append({"role": "user", "content": text})
    elif len(messages) == 1:  # nothing said: the model is still asked something
        messages.append({"role": "user", "content": NO_INPUT})
    return messages


def parse_judgement(text: str) -> tuple[bool, str]:
    """A judge's answer as (passed, one-line reason); anything but PASS/FAIL fails.

    >>> parse_judgement("PASS: stays in character.")
    (True, 'stays in character.')
    >>> parse_judgement("maybe")
    (False, "the judge did not answer PASS or FAIL: 'maybe'")
    """
    line = text.strip().splitlines()[0].strip() if text.strip() else ""
    head, _, reason = line.partition(":")
    word = head.strip().strip("*").upper()
    if word in ("PASS", "FAIL"):
        return word == "PASS", reason.strip() or word.lower()
    return False, f"the judge did not answer PASS or FAIL: {_quote(line)}"


# How a playtest asks the model, as a scenario stores it: (name, default).
MAX_SAMPLES = 5
MAX_REPLY_TOKENS = 4096
MAX_TEMPERATURE = 2.0
SEED_RANGE = (-(2**63), 2**63 - 1)
REPLY_PARAMS: Mapping[str, Any] = {
    "temperature": 0.0,
    "max_tokens": 300,
    "seed": None,
    "samples": 1,
}


def reply_params_problems(values: Mapping[str, Any]) -> dict[str, str]:
    """What is wrong with a scenario's ``temperature``, ``max_tokens``, ``seed`` and
    ``samples`` (missing ones take their defaults), by field.

    >>> problems = reply_params_problems({"samples": 9, "temperature": float("nan")})
    >>> problems["temperature"], problems["samples"]
    ('Expected a number from 0 to 2.0.', 'Expected a whole number from 1 to 5.')
    """
    errors: dict[str, str] = {}
    temperature = values.get("temperature", 0.0)
    if (
        isinstance(temperature, bool)
        or not isinstance(temperature, int | float)
        or not 0 <= temperature <= MAX_TEMPERATURE  # NaN fails both comparisons
    ):
        errors["temperature"] = f"Expected a number from 0 to {MAX_TEMPERATURE}."
    for name, high in (("max_tokens", MAX_REPLY_TOKENS), ("samples", MAX_SAMPLES)):
        value = values.get(name, REPLY_PARAMS[name])
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
            errors[name] = f"Expected a whole number from 1 to {high}."
    seed = values.get("seed")
    if seed is not None and (
        isinstance(seed, bool)
        or not isinstance(seed, int)
        or not SEED_RANGE[0] <= seed <= SEED_RANGE[1]
    ):
        errors["seed"] = "Expected a whole number (a 64-bit integer) or null."
    return errors
