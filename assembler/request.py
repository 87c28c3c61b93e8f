"""What assembly takes: segments, rulesets, NPCs, dynamic state, budgets and policy.

Plain frozen dataclasses, validated on construction so that a request that exists is a
request that can be assembled; each error names the offending field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from assembler.history import HistoryMessage, SummaryText
from assembler.lore import DEFAULT_LORE_RECURSION, DEFAULT_LORE_SCAN_DEPTH, LoreBook

SCOPES: tuple[str, ...] = (
    "core",
    "ruleset",
    "world",
    "entry",
    "entry_start",
    "npc",
    "lore",
    "history",
    "game_state",
    "player",
    "rng",
    "input",
)
"""Every layer, in assembly order."""

SEGMENT_SCOPES: tuple[str, ...] = SCOPES[:6]
"""Layers made of stored segments."""

LORE_SCOPE = "lore"
"""The lore layer: the lore entries the turn activates (see :mod:`assembler.lore`)."""

HISTORY_SCOPE = "history"
"""The conversation history layer (a conversation's summary and recent messages)."""

DYNAMIC_SCOPES: tuple[str, ...] = SCOPES[SCOPES.index("game_state") :]
"""Layers the caller supplies with each request (as ``state``)."""

TRIMMABLE_SCOPES: tuple[str, ...] = (*DYNAMIC_SCOPES, HISTORY_SCOPE)
"""Layers cut short (not dropped segment by segment) when over budget; each has a floor."""

PROTECTED_SCOPES: tuple[str, ...] = ("core", "ruleset")
"""Layers never trimmed or dropped."""

DEFAULT_FLOOR = 0.10

DEFAULT_TOKEN_BUDGET = 8000
"""The whole prompt's budget when the caller names none."""

DEFAULT_NPC_BUDGET = 600
"""The NPC block's budget when the caller names none."""

MAX_BUDGET = 1_000_000
"""The largest token or NPC budget a request may ask for."""

DEFAULT_LORE_SHARE = 0.10
"""The lore block's budget, as a share of the token budget, when the caller names none."""

MAX_LORE_SCAN_DEPTH = 100
MAX_LORE_RECURSION = 10


class RequestError(ValueError):
    """A request that cannot be assembled; ``field`` names the offending part.

    ``field`` is a dotted path as an API client would write it (``policy.floors.input``,
    ``state.rng``, ``npcs``, ``token_budget``); the message names it too.

    >>> error = RequestError("token_budget", "token_budget must be >= 0, got -1")
    >>> error.field, str(error)
    ('token_budget', 'token_budget must be >= 0, got -1')
    """

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(message)


BlockFormat: TypeAlias = Literal["delimited", "xml", "markdown"]
BLOCK_FORMATS: tuple[BlockFormat, ...] = ("delimited", "xml", "markdown")

StateValue: TypeAlias = "str | Mapping[str, object] | None"
"""A dynamic layer: text, a JSON object (rendered as ``key: value`` lines), or nothing."""


@dataclass(frozen=True, slots=True)
class Segment:
    """One stored piece of prompt text.

    ``token_count`` is the count (in the encoding used to assemble) cached alongside the
    content, so unchanged text is not counted again; ``None`` means count it now. ``tier``
    matters for NPC segments only. ``title`` labels the segment in reports; when empty, an
    excerpt of the content is used.
    """

    id: int
    scope: str
    content: str
    sort_order: int = 0
    tier: int = 0
    token_count: int | None = None
    title: str = ""
    # Reports name segments over and over; the label is worked out once.
    _label: str = field(init=False, repr=False, compare=False, default="")

    def __post_init__(self) -> None:
        object.__setattr__(self, "_label", self.title or _excerpt(self.content))
        if self.scope not in SEGMENT_SCOPES:
            raise ValueError(
                f"segment #{self.id}: scope must be one of {', '.join(SEGMENT_SCOPES)}, "
                f"got {self.scope!r}"
            )
        if self.tier < 0:
            raise ValueError(f"segment #{self.id}: tier must be >= 0, got {self.tier}")
        if self.token_count is not None and self.token_count < 0:
            raise ValueError(
                f"segment #{self.id}: token_count must be >= 0, got {self.token_count}"
            )

    @property
    def label(self) -> str:
        """The title, or a short excerpt of the content.

        >>> Segment(1, "world", "The   old wars left the north empty and bitter.").label
        'The old wars left the north…'
        """
        return self._label


def _excerpt(content: str) -> str:
    words = " ".join(content[:60].split())
    return words if len(words) <= 28 else words[:27].rstrip() + "…"


@dataclass(frozen=True, slots=True)
class Ruleset:
    """A named set of rules; its segments go into the one ruleset block."""

    slug: str
    name: str
    segments: Sequence[Segment] = ()

    def __post_init__(self) -> None:
        _check_scopes(f"ruleset {self.slug!r}", self.segments, "ruleset")


@dataclass(frozen=True, slots=True)
class Npc:
    """A character present in the scene, with the detail tier the caller asks for."""

    slug: str
    name: str
    requested_tier: int
    segments: Sequence[Segment] = ()

    def __post_init__(self) -> None:
        if self.requested_tier < 0:
            raise ValueError(
                f"NPC {self.slug!r}: requested_tier must be >= 0, got {self.requested_tier}"
            )
        _check_scopes(f"NPC {self.slug!r}", self.segments, "npc")


@dataclass(frozen=True, slots=True)
class Policy:
    """How to fit a prompt into its budget and how to frame its blocks.

    ``floors`` maps dynamic layers and ``history`` to the fraction of the token budget
    they keep before anything else is dropped (layers not listed get 10%).
    """

    floors: Mapping[str, float] | None = None
    block_format: BlockFormat = "delimited"

    def __post_init__(self) -> None:
        if self.block_format not in BLOCK_FORMATS:
            raise RequestError(
                "policy.block_format",
                f"policy.block_format must be one of {', '.join(BLOCK_FORMATS)}, "
                f"got {self.block_format!r}",
            )
        for scope, fraction in (self.floors or {}).items():
            if scope not in TRIMMABLE_SCOPES:
                raise RequestError(
                    "policy.floors",
                    f"policy.floors: {scope!r} is not a dynamic layer or the history "
                    f"({', '.join(TRIMMABLE_SCOPES)})",
                )
            # Written so that NaN fails too.
            if not 0 <= fraction <= 1:
                raise RequestError(
                    f"policy.floors.{scope}",
                    f"policy.floors[{scope!r}] must be between 0 and 1, got {fraction}",
                )

    def floor(self, scope: str, token_budget: int) -> int:
        """Tokens layer ``scope`` keeps in the first trimming pass.

        >>> Policy(floors={"input": 0.25}).floor("input", 1000), Policy().floor("rng", 1000)
        (250, 100)
        """
        fraction = (self.floors or {}).get(scope, DEFAULT_FLOOR)
        return int(fraction * token_budget)


@dataclass(frozen=True, slots=True)
class History:
    """A conversation's history for the ``history`` layer: its messages after the summary
    (oldest first; older ones may be left out, they are never shown), the newest summary
    ready, and the budget the block is first fitted to (see
    :func:`assembler.history.fit_history`). ``conversation`` and ``summary_id`` only
    label the report."""

    messages: Sequence[HistoryMessage]
    summary: SummaryText | None
    budget: int
    conversation: str = ""
    summary_id: int | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.budget <= MAX_BUDGET:
            raise RequestError(
                "history_budget",
                f"history_budget must be between 0 and {MAX_BUDGET}, got {self.budget}",
            )


@dataclass(frozen=True, slots=True)
class LoreOptions:
    """How lore enters one assembly: activation scans the newest ``scan_depth`` history
    messages (besides the input, game state and player), then ``recursion`` rounds of
    activated entries' content; the lore block (frame included) gets ``budget`` tokens
    (``None``: :data:`DEFAULT_LORE_SHARE` of the token budget). ``enabled`` false: no lore.

    >>> LoreOptions().budget_for(8000), LoreOptions(budget=300).budget_for(8000)
    (800, 300)
    """

    scan_depth: int = DEFAULT_LORE_SCAN_DEPTH
    budget: int | None = None
    recursion: int = DEFAULT_LORE_RECURSION
    enabled: bool = True

    def __post_init__(self) -> None:
        for name, high in (("scan_depth", MAX_LORE_SCAN_DEPTH), ("recursion", MAX_LORE_RECURSION)):
            value = getattr(self, name)
            if not 0 <= value <= high:
                raise RequestError(
                    f"lore.{name}", f"lore.{name} must be between 0 and {high}, got {value}"
                )
        if self.budget is not None and not 0 <= self.budget <= MAX_BUDGET:
            raise RequestError(
                "lore.budget", f"lore.budget must be between 0 and {MAX_BUDGET}, got {self.budget}"
            )

    def budget_for(self, token_budget: int) -> int:
        """The lore block's budget in an assembly with ``token_budget``."""
        if self.budget is not None:
            return self.budget
        return int(DEFAULT_LORE_SHARE * token_budget)


@dataclass(frozen=True, slots=True)
class AssemblyRequest:
    """Everything one assembly needs.

    ``core``, ``world``, ``entry`` and ``entry_start`` are the segments of those layers,
    in any order. ``rulesets`` and ``npcs`` are in the entry's order and the caller's
    priority order (first is most important). ``state`` supplies the dynamic layers
    (``game_state``, ``player``, ``rng``, ``input``); missing keys are empty layers.
    ``history``, when given, fills the ``history`` layer (between ``npc`` and
    ``game_state``). ``lore_book``, when given, holds the lore entries that may fill the
    ``lore`` layer (between ``npc`` and ``history``), as ``lore`` says.
    """

    core: Sequence[Segment]
    rulesets: Sequence[Ruleset]
    world: Sequence[Segment]
    entry: Sequence[Segment]
    entry_start: Sequence[Segment]
    npcs: Sequence[Npc]
    state: Mapping[str, StateValue]
    first_turn: bool
    token_budget: int
    npc_budget: int = DEFAULT_NPC_BUDGET
    policy: Policy = field(default_factory=Policy)
    strict: bool = False
    history: History | None = None
    lore: LoreOptions = field(default_factory=LoreOptions)
    lore_book: LoreBook | None = None

    def __post_init__(self) -> None:
        for name in ("token_budget", "npc_budget"):
            budget = getattr(self, name)
            if budget < 0:
                raise RequestError(name, f"{name} must be >= 0, got {budget}")
            if budget > MAX_BUDGET:
                raise RequestError(name, f"{name} must be at most {MAX_BUDGET}, got {budget}")
        for scope in ("core", "world", "entry", "entry_start"):
            _check_scopes(scope, getattr(self, scope), scope)
        slugs = [npc.slug for npc in self.npcs]
        duplicates = sorted({slug for slug in slugs if slugs.count(slug) > 1})
        if duplicates:
            raise RequestError("npcs", f"npcs: duplicate slugs {', '.join(map(repr, duplicates))}")
        for key, value in self.state.items():
            if key not in DYNAMIC_SCOPES:
                raise RequestError(
                    "state", f"state: {key!r} is not a dynamic layer ({', '.join(DYNAMIC_SCOPES)})"
                )
            if value is not None and not isinstance(value, str | Mapping):
                raise RequestError(
                    f"state.{key}",
                    f"state[{key!r}] must be text, a JSON object or None, "
                    f"got {type(value).__name__}",
                )


def _check_scopes(owner: str, segments: Sequence[Segment], scope: str) -> None:
    for segment in segments:
        if segment.scope != scope:
            raise ValueError(
                f"{owner}: segment #{segment.id} has scope {segment.scope!r}, expected {scope!r}"
            )
