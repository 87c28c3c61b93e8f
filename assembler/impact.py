"""What an assembly lost, and whether it meets an author's expectations.

Releases compare the prompts built from two versions of the content: for each scenario,
the cuts that appear or disappear and the expectations that start or stop failing. The
rules for both live here, in plain data, so the studio, the API and scripts agree.

>>> from assembler import AssemblyRequest, Segment, assemble, get_tokenizer
>>> request = AssemblyRequest(core=[Segment(1, "core", "You narrate.")], rulesets=[],
...     world=[Segment(2, "world", "The sea is old. " * 40, title="Sea")], entry=[],
...     entry_start=[], npcs=[], state={}, first_turn=False, token_budget=60)
>>> result = assemble(request, get_tokenizer())
>>> sorted(cuts(result))
['segment:2']
>>> print(failure(parse_expectation({"kind": "keeps_segment", "segment": 2}), result))
... # doctest: +NORMALIZE_WHITESPACE
segment #2 is not in the prompt: World segment #2 'Sea' (201 tokens) left out: it alone is
larger than the whole 60-token budget
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, cast

from assembler.request import MAX_BUDGET
from assembler.result import AssemblyResult, Change

ExpectationKind: TypeAlias = Literal["fits", "keeps_segment", "contains", "max_tokens"]
EXPECTATION_KINDS: tuple[ExpectationKind, ...] = ("fits", "keeps_segment", "contains", "max_tokens")
MAX_EXPECTATION_TEXT = 2000
MAX_EXPECTATIONS = 50


class ExpectationError(ValueError):
    """An expectation that cannot be checked; ``field`` names the offending key."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class Expectation:
    """One thing an author expects of a scenario's prompt.

    ``fits``: nothing is cut and the prompt is within its budget; ``keeps_segment``: the
    segment numbered ``segment`` is in the prompt; ``contains``: the prompt contains
    ``text``; ``max_tokens``: the prompt has at most ``tokens`` tokens.
    """

    kind: ExpectationKind
    segment: int | None = None
    text: str | None = None
    tokens: int | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind}
        for name in ("segment", "text", "tokens"):
            value = getattr(self, name)
            if value is not None:
                data[name] = value
        return data

    @property
    def description(self) -> str:
        """The expectation in plain words.

        >>> Expectation("contains", text="bell").description
        "contains 'bell'"
        """
        if self.kind == "fits":
            return "fits without cuts"
        if self.kind == "keeps_segment":
            return f"keeps segment #{self.segment}"
        if self.kind == "contains":
            return f"contains '{self.text}'"
        return f"at most {self.tokens} tokens"


_FIELDS: Mapping[str, str | None] = {
    "fits": None,
    "keeps_segment": "segment",
    "contains": "text",
    "max_tokens": "tokens",
}
#: The key holding each kind's value (None: the kind takes none), for forms that build one.
EXPECTATION_VALUE_KEYS = _FIELDS


def parse_expectation(data: Any) -> Expectation:
    """An expectation from its JSON form, or ExpectationError naming the bad key.

    >>> parse_expectation({"kind": "max_tokens", "tokens": 500})
    Expectation(kind='max_tokens', segment=None, text=None, tokens=500)
    >>> parse_expectation({"kind": "max_tokens"})
    Traceback (most recent call last):
    ...
    assembler.impact.ExpectationError: 'max_tokens' needs 'tokens'.
    """
    if not isinstance(data, Mapping):
        raise ExpectationError("kind", 'Expected an object such as {"kind": "fits"}.')
    raw: Any = data.get("kind")
    if not isinstance(raw, str) or raw not in _FIELDS:
        raise ExpectationError("kind", f"Unknown kind; use one of: {', '.join(_FIELDS)}.")
    kind = cast(ExpectationKind, raw)
    wanted = _FIELDS[kind]
    extra = sorted(set(data) - {"kind", *([wanted] if wanted else [])})
    if extra:
        raise ExpectationError(extra[0], f"'{kind}' takes no '{extra[0]}'.")
    if wanted is None:
        return Expectation(kind)
    if wanted not in data:
        raise ExpectationError(wanted, f"'{kind}' needs '{wanted}'.")
    value = data[wanted]
    if wanted == "text":
        if not isinstance(value, str) or not value.strip():
            raise ExpectationError(wanted, "Expected some text to look for.")
        if len(value) > MAX_EXPECTATION_TEXT:
            raise ExpectationError(wanted, f"At most {MAX_EXPECTATION_TEXT} characters.")
        return Expectation(kind, text=value)
    high = MAX_BUDGET if wanted == "tokens" else 2**63 - 1
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= high:
        raise ExpectationError(wanted, f"Expected a whole number from 1 to {high}.")
    return (
        Expectation(kind, segment=value) if wanted == "segment" else Expectation(kind, tokens=value)
    )


def cuts(result: AssemblyResult) -> dict[str, str]:
    """What the final prompt lost (its ``meta.outcome``), by a stable key, each in the
    assembler's plain words.

    Keys let two assemblies be compared: a cut with the same key in both is the same cut,
    whatever its numbers. A thing left out is keyed by itself (``segment:12``,
    ``npc:marta``, ``lore:7``, ``layer:input``); a layer shortened by itself and
    ``shortened``; an NPC lowered by itself and the tier it is shown at
    (``npc:marta lowered to 1``), so an NPC lowered further, or left out, is a new cut.
    Steps undone by a put-back are not cuts.
    """
    return {cut_key(change): change.explanation for change in result.meta.outcome.changes()}


def cut_key(change: Change) -> str:
    """The key of the cut ``change`` is (see :func:`cuts`).

    >>> from assembler.result import Change
    >>> cut_key(Change("lowered", "npc:marta", "npc", "NPC 'Marta'", 90, 40,
    ...     "over_npc_budget", "...", npc="marta", tier_before=2, tier_after=1))
    'npc:marta lowered to 1'
    """
    if change.kind == "shortened":
        return change.key + " shortened"
    if change.kind == "lowered":
        return f"{change.key} lowered to {change.tier_after}"
    return change.key


def failure(expectation: Expectation, result: AssemblyResult) -> str | None:
    """Why ``result`` does not meet ``expectation``, in plain words; None when it does."""
    meta = result.meta
    if expectation.kind == "fits":
        if meta.over_budget:
            return (
                f"the core and ruleset layers alone are over the {meta.token_budget}-token budget"
            )
        lost = cuts(result)
        if lost:
            return f"{len(lost)} {'cut' if len(lost) == 1 else 'cuts'}: " + "; ".join(lost.values())
        return None
    if expectation.kind == "keeps_segment":
        kept = any(
            fate.id == expectation.segment and fate.fate == "included" for fate in result.segments
        )
        if kept:
            return None
        why = cuts(result).get(f"segment:{expectation.segment}")
        where = f": {why}" if why else " (it is not part of this scenario's content)"
        return f"segment #{expectation.segment} is not in the prompt{where}"
    if expectation.kind == "contains":
        assert expectation.text is not None
        return (
            None if expectation.text in result.prompt else f"no '{expectation.text}' in the prompt"
        )
    assert expectation.tokens is not None
    if meta.tokens <= expectation.tokens:
        return None
    over = meta.tokens - expectation.tokens
    return f"the prompt has {meta.tokens} tokens, {over} over {expectation.tokens}"
