"""What assembly returns: the prompt, its report (``meta``) and the fate of each segment."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, TypeAlias, get_args

from assembler.findings import Lint
from assembler.lore import LoreTrigger

StepAction: TypeAlias = Literal["trimmed", "dropped", "tier_lowered", "npc_dropped", "restored"]
LayerStatus: TypeAlias = Literal["included", "trimmed", "dropped", "empty", "skipped"]
NpcStatus: TypeAlias = Literal["included", "lowered", "dropped"]
LoreStatus: TypeAlias = Literal["included", "left_out", "grouped_out"]
# Segments are only ever dropped whole: trimming applies to the dynamic layers.
Fate: TypeAlias = Literal["included", "dropped", "skipped"]
# What the prompt lost in the end, once everything that fitted again was put back.
ChangeKind: TypeAlias = Literal["left_out", "shortened", "lowered"]
CHANGE_KINDS: tuple[ChangeKind, ...] = get_args(ChangeKind)
# Why it was lost: on its own larger than a budget, or no room left in it for this.
OutcomeReason: TypeAlias = Literal[
    "larger_than_budget",
    "over_budget",
    "larger_than_npc_budget",
    "over_npc_budget",
    "larger_than_lore_budget",
    "over_lore_budget",
]
OUTCOME_REASONS: tuple[OutcomeReason, ...] = get_args(OutcomeReason)

# One assembly builds about a hundred of these records; frozen dataclasses take several
# times longer to construct, so the per-item records are plain slotted dataclasses.


@dataclass(slots=True)
class TruncationStep:
    """One thing removed to meet a budget, or put back once the prompt fitted.

    ``tokens_before`` and ``tokens_after`` are the tokens of the layer's block (for NPC
    steps, the NPC block) before and after the step. ``action`` is ``restored`` for a
    put-back: a segment or NPC back in, an NPC's tier raised, or a dynamic layer given
    back some of its text. ``reason`` is terse, for engineers and logs; ``explanation``
    says the same for authors (see :mod:`assembler.explain`).
    """

    scope: str
    action: StepAction
    tokens_before: int
    tokens_after: int
    reason: str
    segment_id: int | None = None
    npc: str | None = None
    explanation: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "action": self.action,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "segment_id": self.segment_id,
            "npc": self.npc,
            "reason": self.reason,
            "explanation": self.explanation,
        }


@dataclass(slots=True)
class LayerReport:
    """What became of one layer. ``tokens`` counts its whole block, frame included."""

    status: LayerStatus
    tokens: int
    segment_ids: list[int]

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "tokens": self.tokens, "segment_ids": self.segment_ids}


@dataclass(slots=True)
class HistoryReport:
    """How the ``history`` layer was made: ``mode`` (``full``, ``summary_and_recent``,
    ``recent_only``, as :class:`assembler.history.HistoryFit`), the positions of the
    messages shown, the summary shown (its id and the last position it covers), and the
    position of a message shown cut short."""

    conversation: str
    mode: str
    messages: list[int]
    summary_id: int | None
    covers_through: int | None
    trimmed: int | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "conversation": self.conversation,
            "mode": self.mode,
            "messages": self.messages,
            "summary": None
            if self.covers_through is None
            else {"id": self.summary_id, "covers_through": self.covers_through},
            "trimmed": self.trimmed,
        }


@dataclass(slots=True)
class NpcReport:
    """What became of one NPC: the tier used and the tokens of its heading and segments."""

    npc: str
    requested_tier: int
    tier: int
    status: NpcStatus
    tokens: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "npc": self.npc,
            "requested_tier": self.requested_tier,
            "tier": self.tier,
            "status": self.status,
            "tokens": self.tokens,
        }


@dataclass(slots=True)
class LoreReport:
    """What became of one entry triggered on a turn (an item of ``meta.lore``).

    ``status``: ``included`` in the prompt, ``left_out`` (the lore budget was full, the
    prompt was over its budget, or the entry has no text) or ``grouped_out``. ``tokens``
    is the entry's content count; ``reason`` says it all in plain words. ``trigger`` is
    the entry's :class:`assembler.lore.LoreTrigger` (``source`` ``constant`` for a constant
    entry); ``by`` the id of the entry whose content triggered it.
    """

    id: int
    title: str
    status: LoreStatus
    trigger: LoreTrigger
    by: int | None
    tokens: int
    reason: str

    def to_dict(self) -> dict[str, Any]:
        """``{"id", "title", "status", "trigger", "by", "tokens", "reason"}``."""
        return {
            "id": self.id,
            "title": self.title,
            "status": self.status,
            "trigger": self.trigger.to_dict(),
            "by": self.by,
            "tokens": self.tokens,
            "reason": self.reason,
        }


@dataclass(slots=True)
class SegmentFate:
    """What became of one segment, for the author preview.

    ``skipped``: an ``entry_start`` segment on a later turn, an NPC segment above the
    tier used, or a segment with no text (blank segments are never emitted).
    """

    id: int
    scope: str
    npc: str | None
    title: str
    tokens: int
    fate: Fate

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "scope": self.scope,
            "npc": self.npc,
            "title": self.title,
            "tokens": self.tokens,
            "fate": self.fate,
        }


@dataclass(frozen=True, slots=True)
class Change:
    """One thing an assembly lost in the end: an item of :class:`Outcome`.

    ``kind``: ``left_out`` (a segment, an NPC, a lore entry or a dynamic layer, whole),
    ``shortened`` (a dynamic layer or the history, cut at a token boundary) or ``lowered``
    (an NPC shown at ``tier_after`` instead of the ``tier_before`` asked for).
    ``tokens_before`` is what was asked for (for an NPC, at the tier asked for),
    ``tokens_after`` what the prompt holds of it (0 when left out). ``key`` names the thing
    (``segment:12``, ``npc:marta``, ``lore:7``, ``layer:input``), ``name`` is how authors
    know it, ``reason`` the code of why (see :data:`OUTCOME_REASONS`) and ``explanation``
    all of it in plain words (see :mod:`assembler.explain`).
    """

    kind: ChangeKind
    key: str
    scope: str
    name: str
    tokens_before: int
    tokens_after: int
    reason: OutcomeReason
    explanation: str
    segment_id: int | None = None
    npc: str | None = None
    lore_id: int | None = None
    tier_before: int | None = None
    tier_after: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "key": self.key,
            "scope": self.scope,
            "name": self.name,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "segment_id": self.segment_id,
            "npc": self.npc,
            "lore_id": self.lore_id,
            "tier_before": self.tier_before,
            "tier_after": self.tier_after,
            "reason": self.reason,
            "explanation": self.explanation,
        }


@dataclass(frozen=True, slots=True)
class Outcome:
    """The net result of fitting the budgets: what is left out, shortened and lowered.

    Worked out from what the prompt holds once everything that fitted again was put back,
    so a step undone later is not in it (``meta.truncated`` keeps every step). Each list
    is in prompt order; NPCs by priority.
    """

    left_out: tuple[Change, ...] = ()
    shortened: tuple[Change, ...] = ()
    lowered: tuple[Change, ...] = ()

    def __len__(self) -> int:
        return len(self.left_out) + len(self.shortened) + len(self.lowered)

    def changes(self) -> list[Change]:
        """Every change: left out, then shortened, then lowered."""
        return [*self.left_out, *self.shortened, *self.lowered]

    def to_dict(self) -> dict[str, list[dict[str, Any]]]:
        """``{"left_out": [...], "shortened": [...], "lowered": [...]}``."""
        return {
            "left_out": [change.to_dict() for change in self.left_out],
            "shortened": [change.to_dict() for change in self.shortened],
            "lowered": [change.to_dict() for change in self.lowered],
        }


@dataclass(frozen=True, slots=True)
class Meta:
    """The report on one assembly.

    ``tokens`` is the exact count of the prompt; ``tokens_estimated`` is the size of the
    untruncated assembly, summed from the parts' counts (with the lore entries the lore
    budget let in). ``lore`` reports every lore entry triggered (see
    :class:`LoreReport`); lore entries are not segments, so the ``lore``
    layer lists no ids in ``segment_ids_by_scope`` and ``layers``. ``truncated`` is every
    step of the budget policy in the order taken, put-backs included; ``outcome`` is
    their net result (see :class:`Outcome`).
    """

    order: tuple[str, ...]
    segment_ids_by_scope: Mapping[str, list[int]]
    tokens_estimated: int
    tokens: int
    token_budget: int
    npc_budget: int
    encoding: str
    over_budget: bool
    truncated: list[TruncationStep]
    layers: Mapping[str, LayerReport]
    npcs: list[NpcReport]
    lints: list[Lint]
    content_hash: str
    history: HistoryReport | None = None
    lore: list[LoreReport] = field(default_factory=list)
    outcome: Outcome = Outcome()

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form, as served by the API (``history`` only when a conversation's
        history was assembled; ``lore`` always, empty without lore)."""
        data = {
            "order": list(self.order),
            "segment_ids_by_scope": {
                scope: list(ids) for scope, ids in self.segment_ids_by_scope.items()
            },
            "tokens_estimated": self.tokens_estimated,
            "tokens": self.tokens,
            "token_budget": self.token_budget,
            "npc_budget": self.npc_budget,
            "encoding": self.encoding,
            "over_budget": self.over_budget,
            "truncated": [step.to_dict() for step in self.truncated],
            "outcome": self.outcome.to_dict(),
            "layers": {scope: layer.to_dict() for scope, layer in self.layers.items()},
            "npcs": [npc.to_dict() for npc in self.npcs],
            "lints": [lint.to_dict() for lint in self.lints],
            "content_hash": self.content_hash,
        }
        if self.history is not None:
            data["history"] = self.history.to_dict()
        data["lore"] = [report.to_dict() for report in self.lore]
        return data


@dataclass(frozen=True, slots=True)
class Block:
    """One emitted layer's block, frame lines included."""

    scope: str
    text: str


@dataclass(frozen=True)
class AssemblyResult:
    """The assembled prompt, its report, every segment's fate, and the prompt's blocks.

    ``prompt`` is the ``blocks`` joined by a blank line, so a view can show each layer
    without parsing the prompt. ``segments`` is worked out when first read: serving a
    prompt needs only ``prompt`` and ``meta``.
    """

    prompt: str
    meta: Meta
    blocks: tuple[Block, ...] = ()
    explain: Callable[[], list[SegmentFate]] = field(default=list, repr=False, compare=False)

    @cached_property
    def segments(self) -> list[SegmentFate]:
        """Every segment considered, in layer order, with its tokens and fate."""
        return self.explain()


class OverBudgetError(Exception):
    """Strict mode: the protected layers alone do not fit the token budget.

    ``layers`` maps each protected layer to its tokens; ``tokens`` is the exact count of
    the prompt holding only them (frames included) and ``over`` how far that exceeds
    ``budget``.
    """

    def __init__(self, layers: Mapping[str, int], tokens: int, budget: int) -> None:
        self.layers = dict(layers)
        self.tokens = tokens
        self.budget = budget
        self.over = tokens - budget
        parts = ", ".join(f"{scope} block {count}" for scope, count in self.layers.items())
        super().__init__(
            f"protected layers alone take {tokens} tokens ({parts}), "
            f"{self.over} over the token budget of {budget}"
        )
