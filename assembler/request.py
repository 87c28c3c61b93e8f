"""What assembly takes, and what a request to assemble or render may contain.

The assembler's input (segments, rulesets, NPCs, dynamic state, budgets and policy) is
plain frozen dataclasses, validated on construction so that a request that exists is a
request that can be assembled; each error names the offending field.

A request as callers send it (JSON: slugs, not content) is read by one parser,
:func:`parse_assemble_params` (and :func:`parse_render_params` for rendering a
registered prompt), beside every limit and every word of refusal: the API, the studio's
preview and saved scenarios all call it, so they accept and refuse the same input with
the same words. A refusal is one :class:`RequestError` naming each bad field.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, TypeAlias

from assembler.history import HistoryMessage, SummaryText
from assembler.lore import DEFAULT_LORE_RECURSION, DEFAULT_LORE_SCAN_DEPTH, LoreBook
from assembler.storable import (
    MAX_TEXT,
    StoredJsonError,
    check_stored_json,
    has_lone_surrogate,
    printable,
    storable,
)

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

MAX_NPCS = 50
"""The most NPCs one assembly takes (and a scenario keeps)."""

MAX_TIER = 32767
"""The highest NPC tier: what a segment's tier column holds (a small integer)."""

MAX_SLUG = 64
"""The longest slug: an entry, a world, an NPC, a ruleset."""

MAX_NAME = 64
"""The longest name in a render request: task type, label, template, interface."""

INT32 = 2**31 - 1
"""The largest number a stored integer column holds (a version, an order)."""

MAX_CONVERSATION_KEY = 200
CONVERSATION_KEY_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,199}\Z"
"""A conversation's key, as callers name it: letters, digits and ``. _ : @ -``."""
CONVERSATION_KEY_HELP = (
    "Use 1 to 200 letters, digits and . _ : @ - (starting with a letter or digit)."
)

RELEASE_PATTERN = r"[a-z0-9_.-]{1,64}"
"""What a request's ``release`` may be: a release's name, a label or ``working`` (the
union of their patterns; an unknown name is refused when it is resolved)."""

DEFAULT_TEMPLATE = "default"
"""The user template a render uses when the caller names none."""

RenderFormat: TypeAlias = Literal["messages", "text"]
RENDER_FORMATS: tuple[RenderFormat, ...] = ("messages", "text")
"""How a render answers: chat messages, or the raw system and user texts."""

NON_FIELD = ()
"""The path of a problem with the request as a whole."""

Path: TypeAlias = "tuple[str | int, ...]"


class Problem(NamedTuple):
    """One thing wrong with a request: where (a path from the top, as an API client
    would write it: ``("npcs", 3, "tier")``), what, and a stable machine-readable code."""

    path: Path
    message: str
    code: str = "invalid"

    @property
    def field(self) -> str:
        """The path, dotted (``npcs.3.tier``); ``""`` for the request as a whole."""
        return ".".join(str(step) for step in self.path)


class RequestError(ValueError):
    """A request that cannot be assembled or rendered: ``problems`` names each offending
    field and what is wrong with it; ``field`` and the message are the first one's.

    ``field`` is a dotted path as an API client would write it (``policy.floors.input``,
    ``state.rng``, ``npcs``, ``token_budget``).

    >>> error = RequestError("token_budget", "token_budget must be >= 0, got -1")
    >>> error.field, str(error)
    ('token_budget', 'token_budget must be >= 0, got -1')
    >>> error = RequestError.of([Problem(("npcs", 3, "tier"), "Too high.", "max_value"),
    ...                          Problem(("entry",), "Required.", "required")])
    >>> error.errors
    {'npcs.3.tier': ['Too high.'], 'entry': ['Required.']}
    """

    def __init__(self, field: str, message: str, code: str = "invalid") -> None:
        # isdigit() holds for '²' too, which int() refuses: only ASCII digits are an index.
        path = tuple(
            int(step) if step.isascii() and step.isdigit() else step
            for step in field.split(".")
            if step
        )
        self.problems: tuple[Problem, ...] = (Problem(path, message, code),)
        self.field = field
        super().__init__(message)

    @classmethod
    def of(cls, problems: Sequence[Problem]) -> RequestError:
        """The error for ``problems`` (at least one), in the order found."""
        first = problems[0]
        error = cls(first.field, first.message, first.code)
        error.problems = tuple(problems)
        if len(problems) > 1:
            error.args = ("; ".join(f"{p.field or 'request'}: {p.message}" for p in problems),)
        return error

    @property
    def errors(self) -> dict[str, list[str]]:
        """Each offending field's dotted path and what is wrong with it."""
        found: dict[str, list[str]] = {}
        for problem in self.problems:
            found.setdefault(problem.field, []).append(problem.message)
        return found


BlockFormat: TypeAlias = Literal["delimited", "xml", "markdown"]
BLOCK_FORMATS: tuple[BlockFormat, ...] = ("delimited", "xml", "markdown")
DEFAULT_BLOCK_FORMAT: BlockFormat = "delimited"

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
    block_format: BlockFormat = DEFAULT_BLOCK_FORMAT

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

    def to_dict(self) -> dict[str, Any]:
        """The options that differ from the defaults, as a request's ``lore`` holds them
        (``{}``: every default), what a scenario stores.

        >>> LoreOptions(budget=300, enabled=False).to_dict()
        {'budget': 300, 'enabled': False}
        >>> parse_lore_options(LoreOptions(scan_depth=0).to_dict())
        LoreOptions(scan_depth=0, budget=None, recursion=2, enabled=True)
        """
        default = LoreOptions()
        return {
            name: getattr(self, name)
            for name in LORE_FIELDS
            if getattr(self, name) != getattr(default, name)
        }

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


# Not frozen, unlike the assembler's own input: the parser builds one on every request,
# and a frozen dataclass takes microseconds to build (every field set through
# object.__setattr__). Nothing changes one once read.
@dataclass(slots=True)
class AssembleParams:
    """An assembly request as callers express it (slugs, not content), as
    :func:`parse_assemble_params` reads it.

    ``npcs`` are (slug, requested tier) in priority order; ``release`` is a release's
    name, a label or ``working``, resolved by the caller (the assembler never looks at it).
    """

    entry: str
    world: str | None = None
    first_turn: bool = False
    token_budget: int = DEFAULT_TOKEN_BUDGET
    npc_budget: int = DEFAULT_NPC_BUDGET
    npcs: Sequence[tuple[str, int]] = ()
    state: Mapping[str, StateValue] = field(default_factory=dict)
    floors: Mapping[str, float] | None = None
    block_format: BlockFormat = DEFAULT_BLOCK_FORMAT
    strict: bool = False
    conversation: str | None = None
    history_budget: int | None = None
    release: str | None = None
    lore: LoreOptions = field(default_factory=LoreOptions)


@dataclass(slots=True)  # not frozen, as AssembleParams
class RenderParams:
    """A request to render a registered prompt, as :func:`parse_render_params` reads it.

    At most one of ``label`` and ``version`` is set (neither: the default label).
    """

    task_type: str | None = None
    label: str | None = None
    version: int | None = None
    template: str = DEFAULT_TEMPLATE
    variables: Mapping[str, Any] = field(default_factory=dict)
    interface: str | None = None
    user_instructions: str | None = None
    instruction_context: Mapping[str, Any] = field(default_factory=dict)
    format: RenderFormat = "messages"


ASSEMBLE_FIELDS: tuple[str, ...] = (
    "entry",
    "world",
    "first_turn",
    "token_budget",
    "npc_budget",
    "npcs",
    "state",
    "policy",
    "strict",
    "conversation",
    "history_budget",
    "release",
    "lore",
)
"""The fields of an assembly request, in the order errors and the schema list them."""

PREVIEW_FIELDS: tuple[str, ...] = (*ASSEMBLE_FIELDS, "include_inactive")
"""An assembly request for authors: ``include_inactive`` also lists inactive segments."""

POLICY_FIELDS: tuple[str, ...] = ("floors", "block_format")
LORE_FIELDS: tuple[str, ...] = ("scan_depth", "budget", "recursion", "enabled")
NPC_FIELDS: tuple[str, ...] = ("npc", "tier")

RENDER_FIELDS: tuple[str, ...] = (
    "task_type",
    "label",
    "version",
    "template",
    "variables",
    "interface",
    "user_instructions",
    "instruction_context",
    "format",
)
"""The fields of a render request, in the order errors and the schema list them."""

# The words of every refusal, each written once. Most are those of Django REST
# framework's fields, which the API used before this parser: clients see the same.
REQUIRED = "This field is required."
NULL = "This field may not be null."
BLANK = "This field may not be blank."
NOT_TEXT = "Expected a string."
NOT_INTEGER = "Expected an integer."
NOT_NUMBER = "Expected a number."
NOT_FLAG = "Expected true or false."
NUL_CHARACTERS = "Null characters are not allowed."
NOT_STATE = "Expected text, a JSON object or null."
NOT_NPC = 'Expected an NPC slug or {"npc": slug, "tier": n}.'
NPC_SLUG = f"Expected an NPC slug: 1 to {MAX_SLUG} characters, without NUL or lone surrogates."
NPC_TIER = f"Expected an integer tier from 0 to {MAX_TIER}."
STATE_SURROGATES = "Text may not contain lone surrogates (U+D800 to U+DFFF): they are not UTF-8."
BAD_RELEASE = (
    "Expected a label, a release name or 'working': up to 64 lowercase letters, digits, "
    "'_', '.' or '-'."
)
LABEL_AND_VERSION = "Give a label or a version, not both."


def _longer_than(limit: int) -> str:
    return f"Ensure this field has no more than {limit} characters."


def _above(limit: float) -> str:
    return f"Ensure this value is less than or equal to {limit}."


def _below(limit: float) -> str:
    return f"Ensure this value is greater than or equal to {limit}."


def _unknown(fields: Sequence[str]) -> str:
    return f"Unknown field; the fields are: {', '.join(fields)}."


_MISSING: Any = object()
_NPC_KEYS = frozenset(NPC_FIELDS)
_ALLOWED: dict[Sequence[str], frozenset[str]] = {}


def _allowed(fields: Sequence[str]) -> frozenset[str]:
    """``fields`` as a set, made once per list of fields."""
    allowed = _ALLOWED.get(fields)
    if allowed is None:
        allowed = _ALLOWED[fields] = frozenset(fields)
    return allowed


_CONVERSATION_KEY = re.compile(CONVERSATION_KEY_PATTERN)
_RELEASE = re.compile(rf"^{RELEASE_PATTERN}\Z")


class _Reader:
    """Collects the problems found while a request is read; each check below records
    its refusal here and returns None, so that every bad field is named at once."""

    __slots__ = ("problems",)

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def fail(self, path: Path, message: str, code: str = "invalid") -> None:
        self.problems.append(Problem(path, message, code))

    def object(self, path: Path, value: Any, fields: Sequence[str]) -> dict[str, Any] | None:
        """``value`` if it is a JSON object whose keys are all in ``fields``."""
        if value is None:
            self.fail(path, NULL if path else "No data provided", "null")
            return None
        if not isinstance(value, dict):
            self.fail(path, f"Invalid data. Expected a dictionary, but got {type(value).__name__}.")
            return None
        allowed = _allowed(fields)
        if not value.keys() <= allowed:
            # Escaped: a name that cannot be shown (or sent) would break the answer.
            for name in sorted(str(key) for key in value.keys() - allowed):
                self.fail((*path, printable(name)), _unknown(fields), "unknown_field")
        return value

    def present(self, path: Path, value: Any, *, nullable: bool = False) -> bool:
        """Whether ``value`` (not missing) is to be checked: null is refused unless
        ``nullable`` (then it stands for the default)."""
        if value is None:
            if not nullable:
                self.fail(path, NULL, "null")
            return False
        return True

    def text(
        self,
        path: Path,
        value: Any,
        limit: int,
        *,
        blank: bool = False,
        trim: bool = True,
        check: Callable[[str], Problem | None] | None = None,
        stored: bool = False,
    ) -> str | None:
        """Text of at most ``limit`` characters, trimmed unless ``trim`` is false; no NUL
        and no lone surrogate (neither can be stored or sent); ``check`` words any other
        problem, ``stored`` the text's as stored JSON."""
        if (
            type(value) is str
            and check is None
            and 0 < len(value) <= limit
            and value.isascii()
            and "\x00" not in value
        ):
            text = value.strip() if trim else value
            if text:
                return text
        if not isinstance(value, str):
            self.fail(path, NOT_TEXT)
            return None
        text = value.strip() if trim else value
        if not text:
            if not blank:
                self.fail(path, BLANK, "blank")
                return None
            return ""
        if len(value) > limit:
            self.fail(path, _longer_than(limit), "max_length")
            return None
        found = len(self.problems)
        problem = check(text) if check is not None else None
        if problem is None and stored:
            problem = _storable_text(text)
        if problem is not None:
            self.fail(path, problem.message, problem.code)
        if "\x00" in text:
            self.fail(path, NUL_CHARACTERS, "null_characters_not_allowed")
        if not text.isascii():
            for char in text:
                if 0xD800 <= ord(char) <= 0xDFFF:
                    self.fail(
                        path,
                        f"Surrogate characters are not allowed: U+{ord(char):X}.",
                        "surrogate_characters_not_allowed",
                    )
                    break
        return text if len(self.problems) == found else None

    def integer(self, path: Path, value: Any, low: int, high: int) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(path, NOT_INTEGER)
            return None
        number = int(value)
        if number > high:
            self.fail(path, _above(high), "max_value")
            return None
        if number < low:
            self.fail(path, _below(low), "min_value")
            return None
        return number

    def flag(self, path: Path, value: Any) -> bool | None:
        if value is True or value is False:
            return value
        if value is None:
            self.fail(path, NULL, "null")
        else:
            self.fail(path, NOT_FLAG)
        return None

    def choice(self, path: Path, value: Any, choices: Sequence[str]) -> Any:
        if value is None:
            self.fail(path, NULL, "null")
        elif isinstance(value, str) and value in choices:
            return value
        else:
            self.fail(path, f'"{value}" is not a valid choice.', "invalid_choice")
        return None

    def json_object(self, path: Path, value: Any, *, at: bool = True) -> dict[str, Any] | None:
        """A JSON object that can be stored and sent (:mod:`assembler.storable`); a
        refusal says where inside it (``At tags.3: ...``, or ``tags.3: ...`` without
        ``at``)."""
        if type(value) is dict and storable(value):
            return value
        if value is None:
            self.fail(path, NULL, "null")
            return None
        if not isinstance(value, dict):
            self.fail(
                path,
                f'Expected a dictionary of items but got type "{type(value).__name__}".',
                "not_a_dict",
            )
            return None
        try:
            check_stored_json(value)
        except StoredJsonError as error:
            if at:
                self.fail(path, error.explanation, "unstorable_json")
            else:
                where = printable(error.path)
                self.fail(path, f"{where}: {error.message}" if where else error.message)
            return None
        return value

    def done(self) -> None:
        if self.problems:
            raise RequestError.of(self.problems)


def _budget(reader: _Reader, data: Mapping[str, Any], name: str, default: int) -> int:
    value = data.get(name, default)
    if type(value) is int and 0 <= value <= MAX_BUDGET:
        return value
    if reader.present((name,), value):
        return reader.integer((name,), value, 0, MAX_BUDGET) or 0
    return 0


def _npc(reader: _Reader, path: Path, item: Any) -> tuple[str, int] | None:
    """An NPC slug (at tier 0) or ``{"npc": slug, "tier": n}``."""
    if type(item) is str:
        slug: Any = item
        tier: Any = 0
    elif isinstance(item, dict):
        reader.object(path, item, NPC_FIELDS)
        slug, tier = item.get("npc"), item.get("tier", 0)
    elif item is None:
        reader.fail(path, NULL, "null")
        return None
    else:
        reader.fail(path, NOT_NPC)
        return None
    found = len(reader.problems)
    if (
        not isinstance(slug, str)
        or not 0 < len(slug) <= MAX_SLUG
        or "\x00" in slug
        or has_lone_surrogate(slug)
    ):
        reader.fail((*path, "npc"), NPC_SLUG)
    if type(tier) is not int or not 0 <= tier <= MAX_TIER:
        reader.fail((*path, "tier"), NPC_TIER)
    return (slug, tier) if len(reader.problems) == found else None


def _npcs(reader: _Reader, value: Any) -> tuple[tuple[str, int], ...]:
    path: Path = ("npcs",)
    if not reader.present(path, value):
        return ()
    if not isinstance(value, list | tuple):
        reader.fail(
            path, f'Expected a list of items but got type "{type(value).__name__}".', "not_a_list"
        )
        return ()
    # Checked before the items, so that a long list is refused without reading it.
    if len(value) > MAX_NPCS:
        reader.fail(path, f"Ensure this field has no more than {MAX_NPCS} elements.", "max_length")
        return ()
    found = len(reader.problems)
    npcs = []
    for index, item in enumerate(value):
        # What games send, read inline (this runs on every turn); the rest, in full.
        kind = type(item)
        slug, tier = (item, 0) if kind is str else (None, None)
        if kind is dict and item.keys() <= _NPC_KEYS:
            slug, tier = item.get("npc"), item.get("tier", 0)
        if (
            type(slug) is str
            and 0 < len(slug) <= MAX_SLUG
            and slug.isascii()
            and "\x00" not in slug
            and type(tier) is int
            and 0 <= tier <= MAX_TIER
        ):
            npcs.append((slug, tier))
            continue
        npc = _npc(reader, (*path, index), item)
        if npc is not None:
            npcs.append(npc)
    if len(reader.problems) > found:
        return ()
    slugs = [slug for slug, _tier in npcs]
    if len(set(slugs)) != len(slugs):
        repeated = sorted({slug for slug in slugs if slugs.count(slug) > 1})
        reader.fail(path, f"Each NPC may be listed once; repeated: {', '.join(repeated)}.")
    return tuple(npcs)


def _state(reader: _Reader, value: Any) -> dict[str, StateValue]:
    """The dynamic layers: each text, a JSON object, or null (an empty layer)."""
    path: Path = ("state",)
    if not reader.present(path, value) or reader.object(path, value, DYNAMIC_SCOPES) is None:
        return {}
    state: dict[str, StateValue] = {}
    for scope in DYNAMIC_SCOPES:
        layer = value.get(scope, _MISSING)
        if layer is _MISSING:
            continue
        where = (*path, scope)
        if layer is None:
            state[scope] = None
        elif isinstance(layer, str):
            if len(layer) > MAX_TEXT:
                reader.fail(where, f"At most {MAX_TEXT} characters.", "max_length")
            elif has_lone_surrogate(layer):
                reader.fail(where, STATE_SURROGATES, "surrogate_characters_not_allowed")
            else:
                state[scope] = layer
        elif isinstance(layer, dict):
            checked = reader.json_object(where, layer)
            if checked is not None:
                state[scope] = checked
        else:
            reader.fail(where, NOT_STATE)
    return state


def _floors(reader: _Reader, value: Any) -> dict[str, float] | None:
    path: Path = ("policy", "floors")
    if not reader.present(path, value) or reader.object(path, value, DYNAMIC_SCOPES) is None:
        return None
    floors: dict[str, float] = {}
    for scope in DYNAMIC_SCOPES:
        fraction = value.get(scope, _MISSING)
        if fraction is _MISSING:
            continue
        where = (*path, scope)
        if not reader.present(where, fraction):
            continue
        if (
            isinstance(fraction, bool)
            or not isinstance(fraction, int | float)
            or (isinstance(fraction, float) and not math.isfinite(fraction))
        ):
            reader.fail(where, NOT_NUMBER)
        elif fraction > 1:
            reader.fail(where, _above(1), "max_value")
        elif fraction < 0:
            reader.fail(where, _below(0), "min_value")
        else:
            floors[scope] = float(fraction)
    return floors or None


def _policy(reader: _Reader, value: Any) -> tuple[dict[str, float] | None, BlockFormat]:
    path: Path = ("policy",)
    if not reader.present(path, value) or reader.object(path, value, POLICY_FIELDS) is None:
        return None, DEFAULT_BLOCK_FORMAT
    floors = _floors(reader, value["floors"]) if "floors" in value else None
    block_format = value.get("block_format", DEFAULT_BLOCK_FORMAT)
    if block_format != DEFAULT_BLOCK_FORMAT:
        block_format = reader.choice((*path, "block_format"), block_format, BLOCK_FORMATS)
    return floors, block_format


def _lore(reader: _Reader, value: Any) -> LoreOptions:
    """How lore enters the assembly (:class:`LoreOptions`); each option has a default."""
    path: Path = ("lore",)
    if not reader.present(path, value) or reader.object(path, value, LORE_FIELDS) is None:
        return LoreOptions()
    found = len(reader.problems)
    options: dict[str, Any] = {}
    for name, high in (("scan_depth", MAX_LORE_SCAN_DEPTH), ("recursion", MAX_LORE_RECURSION)):
        if name in value and reader.present((*path, name), value[name]):
            options[name] = reader.integer((*path, name), value[name], 0, high)
    if value.get("budget") is not None:  # null: the default share of the token budget
        options["budget"] = reader.integer((*path, "budget"), value["budget"], 0, MAX_BUDGET)
    if "enabled" in value:
        options["enabled"] = reader.flag((*path, "enabled"), value["enabled"])
    return LoreOptions(**options) if len(reader.problems) == found else LoreOptions()


def parse_lore_options(data: object) -> LoreOptions:
    """A request's ``lore`` option alone (as stored by a scenario), or a
    :class:`RequestError` naming every bad field (``lore.budget``)."""
    reader = _Reader()
    options = _lore(reader, data)
    reader.done()
    return options


def _conversation_key(text: str) -> Problem | None:
    if _CONVERSATION_KEY.match(text):
        return None
    return Problem((), CONVERSATION_KEY_HELP, "invalid_key")


def _release(text: str) -> Problem | None:
    return None if _RELEASE.match(text) else Problem((), BAD_RELEASE)


def _optional_text(
    reader: _Reader,
    data: Mapping[str, Any],
    name: str,
    limit: int,
    **options: Any,
) -> str | None:
    """A text that may be missing or null (both: None)."""
    value = data.get(name)
    return None if value is None else reader.text((name,), value, limit, **options)


def _assembly(data: Any, fields: Sequence[str]) -> tuple[AssembleParams, dict[str, Any]]:
    reader = _Reader()
    body = reader.object((), data, fields)
    if body is None:
        raise RequestError.of(reader.problems)
    entry = body.get("entry", _MISSING)
    if entry is _MISSING:
        reader.fail(("entry",), REQUIRED, "required")
    elif reader.present(("entry",), entry):
        entry = reader.text(("entry",), entry, MAX_SLUG)
    world = _optional_text(reader, body, "world", MAX_SLUG)
    first_turn = reader.flag(("first_turn",), body.get("first_turn", False))
    token_budget = _budget(reader, body, "token_budget", DEFAULT_TOKEN_BUDGET)
    npc_budget = _budget(reader, body, "npc_budget", DEFAULT_NPC_BUDGET)
    npcs = _npcs(reader, body["npcs"]) if "npcs" in body else ()
    state = _state(reader, body["state"]) if "state" in body else {}
    floors, block_format = (
        _policy(reader, body["policy"]) if "policy" in body else (None, DEFAULT_BLOCK_FORMAT)
    )
    strict = reader.flag(("strict",), body.get("strict", False))
    conversation = _optional_text(
        reader, body, "conversation", MAX_CONVERSATION_KEY, check=_conversation_key
    )
    history_budget = body.get("history_budget")
    if history_budget is not None:
        history_budget = reader.integer(("history_budget",), history_budget, 0, MAX_BUDGET)
    release = body.get("release")
    if release is not None and not isinstance(release, str):
        reader.fail(("release",), BAD_RELEASE)
    elif release is not None:
        release = reader.text(("release",), release, MAX_SLUG, check=_release)
    lore = _lore(reader, body["lore"]) if "lore" in body else LoreOptions()
    options = {
        name: reader.flag((name,), body.get(name, False)) for name in fields[len(ASSEMBLE_FIELDS) :]
    }
    reader.done()
    params = AssembleParams(
        entry=entry,
        world=world,
        first_turn=bool(first_turn),
        token_budget=token_budget,
        npc_budget=npc_budget,
        npcs=npcs,
        state=state,
        floors=floors,
        block_format=block_format,
        strict=bool(strict),
        conversation=conversation,
        history_budget=history_budget,
        release=release,
        lore=lore,
    )
    return params, options


def parse_assemble_params(data: object) -> AssembleParams:
    """The assembly request in ``data`` (a decoded JSON body, or the same shape built by
    a form), or a :class:`RequestError` naming every bad field.

    >>> parse_assemble_params({"entry": "drowned-bell", "npcs": ["marta", {"npc": "cobb",
    ...     "tier": 2}], "state": {"input": "I ring the bell."}}).npcs
    (('marta', 0), ('cobb', 2))
    >>> try:
    ...     parse_assemble_params({"entry": "x" * 65, "npcs": [{"npc": "a", "tier": -1}]})
    ... except RequestError as error:
    ...     for field, messages in error.errors.items():
    ...         print(field, messages)
    entry ['Ensure this field has no more than 64 characters.']
    npcs.0.tier ['Expected an integer tier from 0 to 32767.']
    """
    return _assembly(data, ASSEMBLE_FIELDS)[0]


def parse_preview_params(data: object) -> tuple[AssembleParams, bool]:
    """An assembly request for authors: the parameters, and whether to list inactive
    segments too (``include_inactive``); :func:`parse_assemble_params` otherwise."""
    params, options = _assembly(data, PREVIEW_FIELDS)
    return params, bool(options["include_inactive"])


def parse_render_params(data: object) -> RenderParams:
    """The request to render a registered prompt in ``data``, or a :class:`RequestError`
    naming every bad field.

    >>> parse_render_params({"label": "staging", "variables": {"answer": 42}}).variables
    {'answer': 42}
    >>> try:
    ...     parse_render_params({"label": "staging", "version": 3})
    ... except RequestError as error:
    ...     print(error.field, "-", error)
    version - Give a label or a version, not both.
    """
    reader = _Reader()
    body = reader.object((), data, RENDER_FIELDS)
    if body is None:
        raise RequestError.of(reader.problems)
    task_type = _optional_text(reader, body, "task_type", MAX_NAME, blank=True)
    label = version = None
    if "label" in body and reader.present(("label",), body["label"]):
        label = reader.text(("label",), body["label"], MAX_NAME)
    if "version" in body and reader.present(("version",), body["version"]):
        version = reader.integer(("version",), body["version"], 1, INT32)
    template: Any = body.get("template", DEFAULT_TEMPLATE)
    if template != DEFAULT_TEMPLATE and reader.present(("template",), template):
        template = reader.text(("template",), template, MAX_NAME)
    variables = reader.json_object(("variables",), body.get("variables", {}), at=False)
    interface = _optional_text(reader, body, "interface", MAX_NAME)
    user_instructions = _optional_text(
        reader,
        body,
        "user_instructions",
        MAX_TEXT,
        blank=True,
        trim=False,
        stored=True,
    )
    context = reader.json_object(
        ("instruction_context",), body.get("instruction_context", {}), at=False
    )
    output = body.get("format", "messages")
    if output != "messages":
        output = reader.choice(("format",), output, RENDER_FORMATS)
    if not reader.problems and "label" in body and "version" in body:
        reader.fail(("version",), LABEL_AND_VERSION, "label_and_version")
    reader.done()
    return RenderParams(
        task_type=task_type,
        label=label,
        version=version,
        template=template,
        variables=dict(variables or {}),
        interface=interface,
        user_instructions=user_instructions,
        instruction_context=dict(context or {}),
        format=output,
    )


def _storable_text(text: str) -> Problem | None:
    try:
        check_stored_json(text)
    except StoredJsonError as error:
        return Problem((), error.explanation, "unstorable_json")
    return None
