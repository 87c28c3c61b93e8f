"""Living lore: world knowledge that enters the prompt when the story touches it.

A :class:`LoreEntry` is a piece of world knowledge with the keys that call it up; a
:class:`LoreBook` holds the entries that may fire for one world (its own and those for
every world) and builds its matcher once. Assembly (:func:`assembler.assemble`, with
``AssemblyRequest.lore_book``) activates entries from the turn's text, fills the ``lore``
layer (between ``npc`` and ``history``) within its own budget and reports every entry
triggered in ``meta.lore``; :func:`test_lore` says what a text triggers, without
assembling.

Matching
--------
One Aho-Corasick automaton per book holds every key of every entry, case-folded, so a
scan costs time linear in the text (plus one step per match found) whatever the number of
keys. Each match is then checked against its entry's options:

- ``case_sensitive`` false (the default): text and key are compared by Unicode case
  folding (:meth:`str.casefold`, not :meth:`str.lower`), so ``STRASSE`` matches the key
  ``straße`` and ``ΟΔΟΣ`` matches ``οδος``. Case sensitive: the text must hold the key
  exactly as written.
- ``whole_words`` true (the default): a key that starts with a word character (a letter,
  digit, combining mark or ``_``, in any script) must not follow one, and a key that ends
  with one must not be followed by one. So ``bell`` matches in ``bell's`` and
  ``bell-tower`` but not in ``bells`` or ``doorbell``; a key that starts or ends with
  punctuation (``#relic``, ``Dr.``) is bounded only on its word-character side. Scripts
  written without spaces (Chinese, Japanese, Thai) have no word boundaries to find: give
  their entries ``whole_words`` false. Text is matched as written, code point by code
  point (no Unicode normalization, no collapsing of spaces).
- Keys may overlap (``bell`` and ``bell tower``, or one entry's key inside another's):
  every key is found wherever it occurs; a match that would start or end inside a
  character that case folding expands (the ``s`` of ``ß``) is no match.

Positions (``start``, ``end``) are offsets in code points into the text scanned, ``end``
exclusive: ``text[start:end]`` is what matched.

Activation
----------
The text scanned (:func:`scanned_texts`) is the request's ``input``, then its
``game_state`` and ``player`` as rendered in the prompt (``key: value`` lines for a JSON
object, see :func:`assembler.render.render_state`), then the content of the newest
``scan_depth`` messages of the conversation history, newest first. Constant entries are
always active. Then, for up to ``recursion`` rounds, the content of the entries activated
in the round before is scanned; only ``recursive`` entries are scanned, and not one that
already loses its group. Activation does not depend on any budget: :func:`test_lore`
finds what assembly finds.

An entry's trigger is its first match in that order (the earliest in the first text that
holds one; at the same start, the longest key); constant entries have the trigger
``{"key": null, "source": "constant"}``. Of the entries of one ``group`` active on a turn,
constant ones included, only the one with the highest priority enters, ties going to the
lowest id; the others are ``grouped_out``.

The entries are listed (in ``meta.lore`` and by :func:`test_lore`) in the order the lore
budget takes them: constant entries first, then those matched in the turn's text, then
those matched in other entries' content, each by priority (highest first), then id.

>>> book = LoreBook([
...     LoreEntry(1, "Bell", "The chapel bell has not rung since the flood.", keys=("bell",)),
...     LoreEntry(2, "Flood", "The flood drowned the lower city.", keys=("flood",)),
...     LoreEntry(3, "Doorbell", "Nobody answers.", keys=("doorbell",), priority=1),
... ])
>>> for activation in test_lore(book, "A doorbell, then a bell."):
...     print(activation.entry.id, activation.reason)
3 triggered: key 'doorbell' in the text
1 triggered: key 'bell' in the text
2 triggered: key 'flood' in lore entry #1 'Bell'

In the prompt
-------------
Activated entries that their group keeps fill the ``lore`` block within the lore budget
(:class:`assembler.request.LoreOptions`, by default a tenth of the token budget; frame
included, counted exactly), in the order above; an entry that does not fit is left out and
the next one tried. In the block they go by priority, then id (:func:`block_order`),
separated by a blank line like segments. When the prompt is over its token budget, lore
entries give way after ``game_state`` is trimmed to its floor and before the history is,
whole, the last of the block (lowest priority) first; like every cut, they are put back
once the prompt fits, where they still fit. ``meta.lore`` says what became of each entry
(:class:`assembler.result.LoreReport`); lore entries are not segments, so they appear
nowhere else in ``meta`` but in the truncation steps (scope ``lore``, no ``segment_id``).

For callers
-----------
Build one :class:`LoreBook` per world and version of its lore (the world's active entries
and those for every world) and keep it as long as that content, keyed by a hash of it:
the matcher is built once, in the constructor (about a quarter of a second for 10,000
entries and 30,000 keys). Pass it as ``AssemblyRequest.lore_book``, with the request's
options as ``AssemblyRequest.lore``. An entry is checked when it is made: a
:class:`LoreError` names the field at fault; the limits (``MAX_LORE_*``) are here to
import. ``LoreReport.to_dict()`` (in :mod:`assembler.result`) and
``LoreActivation.to_dict()`` are the JSON served.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import itertools
import re
import unicodedata
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Literal, NamedTuple, TypeAlias

import ahocorasick

# This module builds on history and tokens alone: requests (which carry a book) and
# results (which report on it) build on it.
from assembler.history import HistoryMessage
from assembler.tokens import Tokenizer

DEFAULT_LORE_SCAN_DEPTH = 4
"""How many of the newest history messages activation scans."""

DEFAULT_LORE_RECURSION = 2
"""How many rounds of activated entries' content activation scans after the turn's text."""

MAX_LORE_KEYS = 64
"""The most keys one entry may have."""

MAX_LORE_KEY_LENGTH = 100
"""The longest key, in characters."""

MAX_LORE_TITLE_LENGTH = 200
MAX_LORE_GROUP_LENGTH = 100
MAX_LORE_CONTENT_LENGTH = 200_000

MIN_LORE_PRIORITY = -(2**31)
MAX_LORE_PRIORITY = 2**31 - 1
"""Priorities are what a database integer column holds."""

MAX_LORE_TEST_TEXT = 100_000
"""The longest text :func:`test_lore` scans, in characters."""

LoreSource: TypeAlias = Literal[
    "constant", "input", "game_state", "player", "history", "lore", "text"
]
LORE_SOURCES: tuple[LoreSource, ...] = (
    "constant",
    "input",
    "game_state",
    "player",
    "history",
    "lore",
    "text",
)
"""Where an entry's trigger was found: ``constant`` (no match needed), the request's
``input``, ``game_state``, ``player`` or ``history``, another entry's content (``lore``),
or the text given to :func:`test_lore` (``text``)."""

ActivationStatus: TypeAlias = Literal["triggered", "grouped_out"]

# Control characters cannot be typed into a key, and NUL never occurs in stored text.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")


class LoreError(ValueError):
    """A lore entry or book that cannot be built; ``field`` names the offending part
    (``keys``, ``title``, ``group``, ``priority``, ``content``, ``token_count``,
    ``entries``), as :class:`assembler.request.RequestError` does for requests.

    >>> try:
    ...     LoreEntry(7, "Bell", "…", keys=())
    ... except LoreError as error:
    ...     print(error.field, "|", error)
    keys | lore entry #7: an entry that is not constant needs at least one key
    """

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class LoreEntry:
    """One piece of lore and the keys that bring it into the prompt.

    ``keys`` (1 to :data:`MAX_LORE_KEYS`, each up to :data:`MAX_LORE_KEY_LENGTH`
    characters; none needed for a ``constant`` entry) are matched as the module describes,
    by ``whole_words`` and ``case_sensitive``. ``priority``: higher goes first, into the
    lore budget and into the block, and is left out last. ``group``: of the entries of one
    group active on a turn only one enters (``None`` or ``""``: no group). ``constant``:
    always active. ``recursive``: its content is scanned for other entries' keys.
    ``token_count``: the content's count cached as for :class:`~assembler.request.Segment`
    (``None``: count it when needed).
    """

    id: int
    title: str
    content: str
    keys: Sequence[str] = ()
    whole_words: bool = True
    case_sensitive: bool = False
    priority: int = 0
    group: str | None = None
    constant: bool = False
    recursive: bool = True
    token_count: int | None = None
    _label: str = field(init=False, repr=False, compare=False, default="")
    # The name, made when first asked for (a book holds thousands of entries; a turn
    # names those it reports on, each several times).
    _name: str = field(init=False, repr=False, compare=False, default="")

    def __post_init__(self) -> None:
        where = f"lore entry #{self.id}"
        # Stored as a tuple, so that entries (and books) hash by content.
        object.__setattr__(self, "keys", tuple(self.keys))
        if self.group == "":
            object.__setattr__(self, "group", None)
        if len(self.title) > MAX_LORE_TITLE_LENGTH:
            raise LoreError(
                "title", f"{where}: title is longer than {MAX_LORE_TITLE_LENGTH} characters"
            )
        if len(self.content) > MAX_LORE_CONTENT_LENGTH:
            raise LoreError(
                "content", f"{where}: content is longer than {MAX_LORE_CONTENT_LENGTH} characters"
            )
        if not self.keys and not self.constant:
            raise LoreError(
                "keys", f"{where}: an entry that is not constant needs at least one key"
            )
        if len(self.keys) > MAX_LORE_KEYS:
            raise LoreError("keys", f"{where}: at most {MAX_LORE_KEYS} keys, got {len(self.keys)}")
        for number, key in enumerate(self.keys, start=1):
            _check_key(where, number, key)
        if not MIN_LORE_PRIORITY <= self.priority <= MAX_LORE_PRIORITY:
            raise LoreError(
                "priority",
                f"{where}: priority must be between {MIN_LORE_PRIORITY} and "
                f"{MAX_LORE_PRIORITY}, got {self.priority}",
            )
        if self.group is not None and (
            not self.group.strip() or len(self.group) > MAX_LORE_GROUP_LENGTH
        ):
            raise LoreError(
                "group",
                f"{where}: a group name needs some text, at most {MAX_LORE_GROUP_LENGTH} "
                "characters",
            )
        if self.token_count is not None and self.token_count < 0:
            raise LoreError(
                "token_count", f"{where}: token_count must be >= 0, got {self.token_count}"
            )
        object.__setattr__(self, "_label", self.title or _excerpt(self.content))

    @property
    def label(self) -> str:
        """The title, or a short excerpt of the content.

        >>> LoreEntry(3, "", "The bell of Varn was cast from a sunken ship.", ("bell",)).label
        'The bell of Varn was cast f…'
        """
        return self._label

    @property
    def name(self) -> str:
        """The entry as authors know it.

        >>> print(LoreEntry(12, "The bell", "…", keys=("bell",)).name)
        Lore entry #12 'The bell'
        """
        name = self._name
        if not name:
            name = f"Lore entry #{self.id} '{self._label}'"
            object.__setattr__(self, "_name", name)
        return name


def _check_key(where: str, number: int, key: object) -> None:
    if not isinstance(key, str):
        raise LoreError("keys", f"{where}: key {number} is not text")
    if not key.strip():
        raise LoreError("keys", f"{where}: key {number} is blank")
    if len(key) > MAX_LORE_KEY_LENGTH:
        raise LoreError(
            "keys", f"{where}: key {number} is longer than {MAX_LORE_KEY_LENGTH} characters"
        )
    if _CONTROL.search(key):
        raise LoreError("keys", f"{where}: key {number} holds a control character")
    try:
        key.encode()
    except UnicodeEncodeError:
        raise LoreError(
            "keys", f"{where}: key {number} holds a lone surrogate (not valid Unicode)"
        ) from None


def _excerpt(content: str) -> str:
    words = " ".join(content[:60].split())
    return words if len(words) <= 28 else words[:27].rstrip() + "…"


# The records made per match and per activated entry on every turn are named tuples:
# immutable (a book shares its content scans between requests) and several times cheaper
# to make than frozen dataclasses.


class LoreMatch(NamedTuple):
    """One key found in a text: ``text[start:end]`` matched ``key`` (as the entry has it)."""

    key: str
    start: int
    end: int

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "start": self.start, "end": self.end}


class LoreTrigger(NamedTuple):
    """What activated an entry: its first match, in the text of ``source``.

    ``message`` is the history message's position (source ``history``); offsets are into
    that message's content, into the content of the entry that triggered this one (source
    ``lore``), or into the dynamic layer's text as rendered. A constant entry has only its
    source.
    """

    source: LoreSource
    key: str | None = None
    start: int | None = None
    end: int | None = None
    message: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{"key", "source", "message", "start", "end"}``, each null where it does not
        apply.

        >>> LoreTrigger("input", "bell", 2, 6).to_dict()
        {'key': 'bell', 'source': 'input', 'message': None, 'start': 2, 'end': 6}
        """
        return {
            "key": self.key,
            "source": self.source,
            "message": self.message,
            "start": self.start,
            "end": self.end,
        }


@dataclass(frozen=True, slots=True)
class ScannedText:
    """A text that activation scans and where it comes from (see :func:`scanned_texts`)."""

    source: LoreSource
    text: str
    message: int | None = None


def scanned_texts(
    *,
    input: str = "",
    game_state: str = "",
    player: str = "",
    history: Sequence[HistoryMessage] = (),
    scan_depth: int = DEFAULT_LORE_SCAN_DEPTH,
) -> list[ScannedText]:
    """The texts a turn's activation scans, in the order triggers are looked for: the
    input, the game state and the player (as rendered), then the content of the newest
    ``scan_depth`` of the ``history`` messages (oldest first, as a conversation lists
    them), newest first.

    >>> [(t.source, t.message) for t in scanned_texts(input="Hi", history=[
    ...     HistoryMessage(1, "user", "a"), HistoryMessage(2, "assistant", "b"),
    ...     HistoryMessage(3, "user", "c")], scan_depth=2)]
    [('input', None), ('history', 3), ('history', 2)]
    """
    texts = [
        ScannedText("input", input),
        ScannedText("game_state", game_state),
        ScannedText("player", player),
    ]
    newest = history[len(history) - scan_depth :] if scan_depth else ()
    texts += [ScannedText("history", m.content, m.position) for m in reversed(newest)]
    return [text for text in texts if text.text]


MAX_LORE_MATCHES = 50
"""The most matches of one entry in one text that are listed (for highlighting)."""

# Entry keys that fold to the same text and are matched alike form a group: (its number,
# must not follow a word character, must not be followed by one). A match is checked
# once per group, however many entries share the key. For each case-folded key the
# automaton holds its length, its case-insensitive groups, and its case-sensitive groups
# by the key as written (or None); a group's members are (entry index, key as written).
_Group: TypeAlias = tuple[int, bool, bool]
_Value: TypeAlias = tuple[int, tuple[_Group, ...], "dict[str, tuple[_Group, ...]] | None"]
# An entry that a text triggers: its index, its trigger, its matches in that text.
_Hit: TypeAlias = tuple[int, LoreTrigger, tuple[LoreMatch, ...]]

Activated: TypeAlias = tuple[int, LoreTrigger, "int | None", tuple[LoreMatch, ...], int]
"""One entry active on a turn, as :func:`activated` lists it: (its index in the book's
entries, its trigger, the index of the entry whose content triggered it or None, its
matches (see :func:`activated`), the index of the entry its group keeps: its own when it
is kept)."""


@dataclass(frozen=True, slots=True, repr=False)
class LoreBook:
    """The lore entries that may fire for one world, and the matcher for all their keys.

    Entries are kept by id (the order given does not matter), ids unique. The matcher is
    built once, here; a book is immutable, equal to another with the same entries and
    hashed by them (the hash worked out once), so a server can keep one per bundle of
    content and share it between requests and threads. It pickles as its entries.

    >>> book = LoreBook([LoreEntry(2, "B", "b", ("Bell",)), LoreEntry(1, "A", "a", ("gate",))])
    >>> [entry.id for entry in book.entries], book == LoreBook(list(reversed(book.entries)))
    ([1, 2], True)
    """

    entries: Sequence[LoreEntry]
    # The matcher :attr:`matcher` gave for the same entries (see :func:`matcher_key`): taken
    # as it is instead of being built again.
    prebuilt: Matcher | None = field(default=None, repr=False, compare=False, kw_only=True)
    _automaton: Any = field(init=False, repr=False, compare=False, default=None)
    _members: tuple[tuple[tuple[int, str], ...], ...] = field(
        init=False, repr=False, compare=False, default=()
    )
    _constants: tuple[int, ...] = field(init=False, repr=False, compare=False, default=())
    _hash: int = field(init=False, repr=False, compare=False, default=0)
    # By entry index: its place in block order, and its group; whether any has a group.
    _ranks: tuple[int, ...] = field(init=False, repr=False, compare=False, default=())
    _groups: tuple[str | None, ...] = field(init=False, repr=False, compare=False, default=())
    _grouped: bool = field(init=False, repr=False, compare=False, default=False)
    # By place in block order, the entry's index; by entry index, whether its content has
    # any text (an entry without is never emitted).
    _by_rank: tuple[int, ...] = field(init=False, repr=False, compare=False, default=())
    _texted: tuple[bool, ...] = field(init=False, repr=False, compare=False, default=())
    _recursive: tuple[bool, ...] = field(init=False, repr=False, compare=False, default=())
    _token_counts: tuple[int | None, ...] = field(init=False, repr=False, compare=False, default=())
    # What each entry's content triggers (with only the first match of each entry, and
    # with every match), and entries' counts where none is cached: worked out when first
    # needed, then kept as long as the book.
    _content_hits: tuple[dict[int, tuple[_Hit, ...]], dict[int, tuple[_Hit, ...]]] = field(
        init=False, repr=False, compare=False, default_factory=lambda: ({}, {})
    )
    _counts: dict[tuple[str, int], int] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )
    # What a set of entries found in a turn's text goes on to activate (see _Closure), by
    # that set and how it was scanned: the same topics, turn after turn, are followed once.
    _closures: dict[tuple[tuple[int, ...], int, bool, bool], _Closure] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )
    # What assembly remembers of turns with this book (how the lore budget was filled, see
    # assembler.assembly._LoreFill): it lives and dies with the book.
    fills: dict[tuple[object, ...], Any] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        entries = tuple(sorted(self.entries, key=_entry_id))
        ids = [entry.id for entry in entries]
        duplicates = sorted({a for a, b in itertools.pairwise(ids) if a == b})
        if duplicates:
            raise LoreError(
                "entries", f"entries: duplicate ids {', '.join(f'#{i}' for i in duplicates)}"
            )
        object.__setattr__(self, "entries", entries)
        object.__setattr__(self, "_hash", hash(entries))
        object.__setattr__(
            self, "_constants", tuple(i for i, entry in enumerate(entries) if entry.constant)
        )
        by_rank = sorted(range(len(entries)), key=lambda i: block_order(entries[i]))
        ranks = [0] * len(entries)
        for rank, index in enumerate(by_rank):
            ranks[index] = rank
        object.__setattr__(self, "_ranks", tuple(ranks))
        object.__setattr__(self, "_by_rank", tuple(by_rank))
        object.__setattr__(self, "_texted", tuple(bool(e.content.strip()) for e in entries))
        object.__setattr__(self, "_recursive", tuple(entry.recursive for entry in entries))
        object.__setattr__(self, "_token_counts", tuple(entry.token_count for entry in entries))
        object.__setattr__(self, "_groups", tuple(entry.group for entry in entries))
        object.__setattr__(self, "_grouped", any(self._groups))
        automaton, members = self.prebuilt or _build_automaton(entries)
        object.__setattr__(self, "prebuilt", None)
        object.__setattr__(self, "_automaton", automaton)
        object.__setattr__(self, "_members", members)

    @property
    def matcher(self) -> Matcher:
        """The matcher built for these entries, to keep (it pickles) and hand to another
        book of the same entries as ``prebuilt``: building it is most of a book's cost
        (about 0.2 s for 30,000 keys), loading it a tenth of that."""
        return self._automaton, self._members

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        # A book can hold thousands of entries: a traceback or a log line names it short.
        return f"<LoreBook of {len(self.entries)} entries>"

    def __reduce__(self) -> tuple[type[LoreBook], tuple[tuple[LoreEntry, ...]]]:
        return LoreBook, (tuple(self.entries),)

    def __len__(self) -> int:
        return len(self.entries)

    def scan(self, text: str, *, every: bool = True) -> dict[int, tuple[LoreMatch, ...]]:
        """The keys matched in ``text``, by the index (in :attr:`entries`) of their entry:
        each entry's matches by start, the longest first at the same start, at most
        :data:`MAX_LORE_MATCHES` of them; with ``every`` false, only the first.

        >>> book = LoreBook([LoreEntry(1, "Bell", "…", ("bell", "bell tower"))])
        >>> [(m.key, m.start, m.end) for m in book.scan("The bell tower, the Bell.")[0]]
        [('bell tower', 4, 14), ('bell', 4, 8), ('bell', 20, 24)]
        """
        return _matches_by_entry(self, self.scan_groups(text, every=every), set(), (), every)

    def scan_groups(self, text: str, *, every: bool = True) -> dict[int, list[tuple[int, int]]]:
        """The groups of keys matched in ``text`` (see ``_Group``), each with its matches
        as (start, -end), sorted, at most :data:`MAX_LORE_MATCHES` (with ``every`` false,
        one). Linear in the text, whatever the number of keys and of entries sharing one."""
        if self._automaton is None or not text:
            return {}
        folded = text.casefold()
        # Case folding keeps most texts' length, and then their offsets.
        offsets = None if len(folded) == len(text) else _FoldedOffsets(text)
        size = len(text)
        is_word = _is_word
        spans: dict[int, list[tuple[int, int]]] = {}
        value: _Value
        for last, value in self._automaton.iter(folded):
            length, loose, exact = value
            start, end = last + 1 - length, last + 1
            if offsets is not None:
                start, end = offsets.original(start), offsets.original(end)
                if start < 0 or end < 0:
                    continue
            follows_word = start > 0 and is_word(text[start - 1])
            precedes_word = end < size and is_word(text[end])
            groups = loose if exact is None else loose + exact.get(text[start:end], ())
            for group, word_start, word_end in groups:
                if (word_start and follows_word) or (word_end and precedes_word):
                    continue
                found = spans.get(group)
                if found is None:
                    spans[group] = [(start, -end)]
                else:
                    found.append((start, -end))
        for found in spans.values():
            if len(found) > 1:
                found.sort()
                del found[MAX_LORE_MATCHES if every else 1 :]
        return spans

    def content_hits(self, index: int, *, every: bool = False) -> tuple[_Hit, ...]:
        """The entries that entry ``index``'s content triggers, each with its trigger
        (source ``lore``) and its matches there (as :meth:`scan` gives them), worked out
        once for the book. Entry ``index`` itself is left out where only its own keys
        match (content often names its own entry, which is active already)."""
        cache = self._content_hits[every]
        hits = cache.get(index)
        if hits is None:
            members = self._members
            groups = {
                group: spans
                for group, spans in self.scan_groups(self.entries[index].content).items()
                if len(members[group]) > 1 or members[group][0][0] != index
            }
            hits = cache[index] = tuple(
                (
                    target,
                    LoreTrigger("lore", matches[0].key, matches[0].start, matches[0].end),
                    matches,
                )
                for target, matches in _matches_by_entry(self, groups, set(), (), every).items()
            )
        return hits

    def tokens(self, entry: LoreEntry, tokenizer: Tokenizer) -> int:
        """The entry's content count: its cached ``token_count``, else counted once."""
        if entry.token_count is not None:
            return entry.token_count
        key = (tokenizer.name, entry.id)
        count = self._counts.get(key)
        if count is None:
            count = self._counts[key] = tokenizer.count(entry.content)
        return count

    def counts(self, indices: Iterable[int], tokenizer: Tokenizer) -> list[int]:
        """:meth:`tokens` of the entries at ``indices``."""
        entries, cached = self.entries, self._token_counts
        return [
            self.tokens(entries[index], tokenizer) if count is None else count
            for index in indices
            for count in (cached[index],)
        ]

    def emittable(self, activations: Iterable[Activated]) -> list[int]:
        """The indices of the entries of ``activations`` (see :func:`activated`) that may
        be emitted, in block order: those their group keeps, that have some text."""
        ranks, by_rank, texted = self._ranks, self._by_rank, self._texted
        return [
            by_rank[rank]
            for rank in sorted(
                [
                    ranks[index]
                    for index, _trigger, _by, _matches, kept in activations
                    if kept == index and texted[index]
                ]
            )
        ]


def _entry_id(entry: LoreEntry) -> int:
    return entry.id


# The matcher of a book: the automaton of every key, and each key group's members (entry
# index, key as written). Its form changes with MATCHER_FORMAT.
Matcher: TypeAlias = tuple[Any, tuple[tuple[tuple[int, str], ...], ...]]
MATCHER_FORMAT = 1
# A pickled automaton is read back only by the pyahocorasick that wrote it.
try:
    _MATCHER_VERSION = f"{MATCHER_FORMAT}:pyahocorasick {metadata.version('pyahocorasick')}"
except metadata.PackageNotFoundError:  # pragma: no cover - installed without metadata
    _MATCHER_VERSION = f"{MATCHER_FORMAT}:pyahocorasick"


def matcher_key(entries: Iterable[LoreEntry]) -> str:
    """A name for the matcher of a book of ``entries``, the same in every process: a hash
    of what the matcher is built from (each entry's id, keys and how they match) and of
    the matcher's form. Keep a matcher under it, and give it back only to a book whose
    entries have the same name.

    >>> a = [LoreEntry(1, "Bell", "A bell.", ("bell",))]
    >>> matcher_key(a) == matcher_key([LoreEntry(1, "Other", "Other text.", ("bell",))])
    True
    >>> matcher_key(a) == matcher_key([LoreEntry(1, "Bell", "A bell.", ("Bell",))])
    False
    """
    digest = hashlib.sha256(_MATCHER_VERSION.encode())
    for entry in sorted(entries, key=_entry_id):
        what = (entry.id, entry.keys, entry.whole_words, entry.case_sensitive)
        digest.update(repr(what).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _build_automaton(
    entries: Sequence[LoreEntry],
) -> tuple[Any, tuple[tuple[tuple[int, str], ...], ...]]:
    """The automaton of every key of ``entries``, and the members of each group."""
    # Folded key -> (case sensitive, key as written or "", word at start, word at end) ->
    # members by entry index (an entry's key twice, or twice up to case when case does
    # not count, is one member).
    keys: dict[str, dict[tuple[bool, str, bool, bool], dict[int, str]]] = {}
    for index, entry in enumerate(entries):
        for key in entry.keys:
            folded = key.casefold()
            how = (
                entry.case_sensitive,
                key if entry.case_sensitive else "",
                entry.whole_words and _is_word(key[0]),
                entry.whole_words and _is_word(key[-1]),
            )
            keys.setdefault(folded, {}).setdefault(how, {}).setdefault(index, key)
    if not keys:
        return None, ()
    members: list[tuple[tuple[int, str], ...]] = []
    automaton = ahocorasick.Automaton()
    for folded, groups in keys.items():
        loose: list[_Group] = []
        exact: dict[str, list[_Group]] = {}
        for (case_sensitive, written, word_start, word_end), by_entry in groups.items():
            group = (len(members), word_start, word_end)
            members.append(tuple(by_entry.items()))
            if case_sensitive:
                exact.setdefault(written, []).append(group)
            else:
                loose.append(group)
        exact_groups = {written: tuple(found) for written, found in exact.items()} or None
        automaton.add_word(folded, (len(folded), tuple(loose), exact_groups))
    automaton.make_automaton()
    return automaton, tuple(members)


@functools.lru_cache(maxsize=4096)
def _is_word_slow(char: str) -> bool:
    return unicodedata.category(char)[0] == "M"


def _is_word(char: str) -> bool:
    """Whether ``char`` belongs to a word: a letter, a digit, ``_`` or a combining mark."""
    return char.isalnum() or char == "_" or (not char.isascii() and _is_word_slow(char))


class _FoldedOffsets:
    """Offsets in a case-folded text mapped back to the original, where folding expanded
    some characters (``ß`` folds to ``ss``).

    >>> offsets = _FoldedOffsets("aßb")  # folded: "assb"
    >>> [offsets.original(i) for i in range(5)]
    [0, 1, -1, 2, 3]
    """

    def __init__(self, text: str) -> None:
        # For each character that folds to more than one: where its folding starts and
        # ends in the folded text, and how much longer the folded text is before it.
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.extra_before: list[int] = []
        extra = 0
        for run in _NON_ASCII.finditer(text):
            for offset, char in enumerate(run.group(), run.start()):
                grown = len(char.casefold()) - 1
                if grown:
                    self.starts.append(offset + extra)
                    self.ends.append(offset + extra + grown + 1)
                    self.extra_before.append(extra)
                    extra += grown

    def original(self, offset: int) -> int:
        """The original offset, or -1 when ``offset`` is inside an expanded character."""
        k = bisect.bisect_right(self.starts, offset) - 1
        if k < 0:
            return offset
        if offset == self.starts[k]:
            return offset - self.extra_before[k]
        if offset < self.ends[k]:
            return -1
        return offset - self.extra_before[k] - (self.ends[k] - self.starts[k] - 1)


class LoreActivation(NamedTuple):
    """One entry active on a turn (or for a text), how, and whether its group kept it.

    ``by`` is the entry whose content triggered this one (source ``lore``); ``matches``
    are this entry's matches in the text that triggered it (for highlighting; see
    :func:`activate`);
    ``grouped_out_by`` is the entry its group kept instead of it.
    """

    entry: LoreEntry
    trigger: LoreTrigger
    by: LoreEntry | None = None
    matches: tuple[LoreMatch, ...] = ()
    grouped_out_by: LoreEntry | None = None

    @property
    def status(self) -> ActivationStatus:
        return "triggered" if self.grouped_out_by is None else "grouped_out"

    @property
    def how(self) -> str:
        """How it was triggered, in plain words.

        >>> LoreActivation(LoreEntry(1, "", "…", ("bell",)), LoreTrigger("game_state", "bell")).how
        "key 'bell' in the game state"
        """
        return trigger_words(self.trigger, self.by)

    @property
    def reason(self) -> str:
        """``triggered: ...`` or why its group left it out (:func:`grouped_out_words`)."""
        if self.grouped_out_by is None:
            return f"triggered: {self.how}"
        return grouped_out_words(self.entry, self.grouped_out_by)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form, as :func:`test_lore` results are served: ``{"id", "title",
        "status", "trigger", "by", "tokens", "reason", "matches"}`` (``tokens`` is the
        cached count, or null)."""
        return {
            "id": self.entry.id,
            "title": self.entry.title,
            "status": self.status,
            "trigger": self.trigger.to_dict(),
            "by": None if self.by is None else self.by.id,
            "tokens": self.entry.token_count,
            "reason": self.reason,
            "matches": [match.to_dict() for match in self.matches],
        }


# Where a key was found, inside a sentence (the other sources need more words).
_SOURCE_WORDS = {
    "input": "the input",
    "game_state": "the game state",
    "player": "the player details",
    "text": "the text",
}


def trigger_words(trigger: LoreTrigger, by: LoreEntry | None = None) -> str:
    """Where an entry's trigger was found, in plain words.

    >>> print(trigger_words(LoreTrigger("history", "bell", 0, 4, message=12)))
    key 'bell' in history message 12
    >>> print(trigger_words(LoreTrigger("constant")))
    always in (constant)
    """
    source = trigger.source
    if source == "constant":
        return "always in (constant)"
    if source == "history":
        where = f"history message {trigger.message}"
    elif source == "lore":
        where = by.name[0].lower() + by.name[1:] if by is not None else "another lore entry"
    else:
        where = _SOURCE_WORDS[source]
    return f"key '{trigger.key}' in {where}"


def grouped_out_words(entry: LoreEntry, kept: LoreEntry) -> str:
    """Why the group of ``entry`` kept ``kept`` instead.

    >>> bell = LoreEntry(3, "Bell", "…", ("bell",), priority=2, group="bells")
    >>> print(grouped_out_words(bell, LoreEntry(4, "Big bell", "…", ("bell",), priority=5)))
    grouped out: group 'bells' keeps lore entry #4 'Big bell' (priority 5, this one 2)
    """
    name = kept.name[0].lower() + kept.name[1:]
    if kept.priority != entry.priority:
        why = f"priority {kept.priority}, this one {entry.priority}"
    else:
        why = f"the same priority, {entry.priority}, and a lower id"
    return f"grouped out: group '{entry.group}' keeps {name} ({why})"


# The order the lore budget takes entries in: constant, matched in the turn's text, then
# matched in other entries' content.
_CONSTANT, _DIRECT, _RECURSIVE = 0, 1, 2


def activate(
    book: LoreBook,
    texts: Iterable[ScannedText],
    *,
    recursion: int = DEFAULT_LORE_RECURSION,
    constants: bool = True,
    every: bool = False,
) -> list[LoreActivation]:
    """The entries of ``book`` that ``texts`` activate, as the module describes, in the
    order the lore budget takes them; ``constants`` false leaves constant entries out
    (and what only they would trigger). Each activation's ``matches`` hold its trigger,
    or with ``every`` all its matches in the text that triggered it (see
    :meth:`LoreBook.scan`).

    Each group of keys is looked at once: after that every entry of it is active; what
    an entry's content triggers is worked out once for the book. So the cost grows with
    the text scanned and the entries activated, not with the entries that share a key.
    """
    entries = book.entries
    return [
        LoreActivation(
            entries[index],
            trigger,
            None if by is None else entries[by],
            matches if every else _trigger_match(trigger),
            None if kept == index else entries[kept],
        )
        for index, trigger, by, matches, kept in activated(book, texts, recursion, constants, every)
    ]


def _trigger_match(trigger: LoreTrigger) -> tuple[LoreMatch, ...]:
    """The match a trigger is (none for a constant entry's)."""
    if trigger.key is None or trigger.start is None or trigger.end is None:
        return ()
    return (LoreMatch(trigger.key, trigger.start, trigger.end),)


def activated(
    book: LoreBook, texts: Iterable[ScannedText], recursion: int, constants: bool, every: bool
) -> list[Activated]:
    """:func:`activate`, by the entries' indices in the book: what assembly works from,
    without an object per entry that it may never report on. With ``every`` false, the
    matches of an entry matched in the turn's text are left empty: its trigger is its
    one match."""
    # Entry index: (order kind, trigger, index of the entry that triggered it, matches).
    found: dict[int, tuple[int, LoreTrigger, int | None, tuple[LoreMatch, ...]]] = {}
    if constants:
        for index in book._constants:
            found[index] = (_CONSTANT, _CONSTANT_TRIGGER, None, ())
    seen: set[int] = set()
    for scanned in texts:
        where, message = scanned.source, scanned.message
        spans = book.scan_groups(scanned.text, every=every)
        if not every:
            # The trigger is the one match listed: no match records to make.
            for index, (start, end, key) in _first_matches(book._members, spans, seen, found):
                found[index] = (_DIRECT, LoreTrigger(where, key, start, -end, message), None, ())
            continue
        for index, matches in _matches_by_entry(book, spans, seen, found, every).items():
            first = matches[0]
            trigger = LoreTrigger(where, first.key, first.start, first.end, message)
            found[index] = (_DIRECT, trigger, None, matches)
    # What follows depends on the set found alone (their triggers are carried through):
    # worked out once per set, as consecutive turns mostly touch the same entries.
    found_set = (tuple(sorted(found)), recursion, constants, every)
    closures = book._closures
    closure = closures.get(found_set)
    if closure is None:
        closure = _close(book, found, recursion, every)
        if len(closures) >= _CLOSURES:
            closures.clear()
        closures[found_set] = closure
    added, order = closure
    result: list[Activated] = []
    for index, kept in order:
        known_found = found.get(index)
        _, trigger, by, matches = added[index] if known_found is None else known_found
        result.append((index, trigger, by, matches, kept))
    return result


# A set of entries found in a turn's text, followed through: the entries their content
# activates, recursively ((kind, trigger, by, matches) by index), and every entry active
# in the budget's order, each with the index of the entry its group keeps.
_Closure: TypeAlias = tuple[
    dict[int, "tuple[int, LoreTrigger, int | None, tuple[LoreMatch, ...]]"],
    tuple[tuple[int, int], ...],
]
# How many sets of entries found a book remembers what they activate for (see _close).
_CLOSURES = 256


def _close(
    book: LoreBook,
    found: dict[int, tuple[int, LoreTrigger, int | None, tuple[LoreMatch, ...]]],
    recursion: int,
    every: bool,
) -> _Closure:
    """What the entries ``found`` in a turn's text activate in up to ``recursion`` rounds
    of their content, and the order of them all (see :func:`activated`)."""
    ranks, groups = book._ranks, book._groups
    found = dict(found)
    added: dict[int, tuple[int, LoreTrigger, int | None, tuple[LoreMatch, ...]]] = {}
    fresh = list(found)
    recursive, content_hits, known = book._recursive, book.content_hits, book._content_hits[every]
    for _ in range(recursion):
        leaders = _group_leaders(groups, ranks, found) if book._grouped else {}
        scanned_now = [
            index
            for index in fresh
            if recursive[index] and leaders.get(groups[index], index) == index
        ]
        # The most important first: an entry named in several is triggered by that one.
        scanned_now.sort(key=ranks.__getitem__)
        fresh = []
        for source in scanned_now:
            hits = known.get(source)
            if hits is None:
                hits = content_hits(source, every=every)
            for index, trigger, matches in hits:
                # An entry of a key group met before is active already, as is every
                # other entry of its group (see _matches_by_entry).
                if index not in found:
                    found[index] = added[index] = (_RECURSIVE, trigger, source, matches)
                    fresh.append(index)
        if not fresh:
            break
    leaders = _group_leaders(groups, ranks, found) if book._grouped else {}
    # The budget's order: by kind, then by place in block order (one number, sorted).
    size, by_rank = len(ranks), book._by_rank
    order = []
    for number in sorted([found[index][0] * size + ranks[index] for index in found]):
        index = by_rank[number % size]
        order.append((index, leaders.get(groups[index], index)))
    return added, tuple(order)


def _matches_by_entry(
    book: LoreBook,
    spans: dict[int, list[tuple[int, int]]],
    seen: set[int],
    found: Container[int],
    every: bool,
) -> dict[int, tuple[LoreMatch, ...]]:
    """The matches of each entry not ``found`` in the groups ``spans`` not yet ``seen``
    (which then are); by start, the longest first, at most :data:`MAX_LORE_MATCHES` (with
    ``every`` false, one)."""
    members = book._members
    if not every:
        return {
            index: (LoreMatch(key, start, -end),)
            for index, (start, end, key) in _first_matches(members, spans, seen, found)
        }
    # Entry index -> the (group, key as written) it matched by; most entries match by one,
    # and then share that group's matches with every entry that writes the key alike.
    hits: dict[int, list[tuple[int, str]]] = {}
    for group in spans:
        if group in seen:
            continue
        seen.add(group)
        for index, key in members[group]:
            if index in found:
                continue
            entry_hits = hits.get(index)
            if entry_hits is None:
                hits[index] = [(group, key)]
            else:
                entry_hits.append((group, key))
    shared: dict[tuple[int, str], tuple[LoreMatch, ...]] = {}
    result: dict[int, tuple[LoreMatch, ...]] = {}
    for index, entry_hits in hits.items():
        if len(entry_hits) == 1:
            hit = entry_hits[0]
            matches = shared.get(hit)
            if matches is None:
                group, key = hit
                kept = spans[group] if every else spans[group][:1]
                matches = shared[hit] = tuple(LoreMatch(key, start, -end) for start, end in kept)
            result[index] = matches
            continue
        merged = sorted(
            (start, end, key)
            for group, key in entry_hits
            for start, end in (spans[group] if every else spans[group][:1])
        )
        del merged[MAX_LORE_MATCHES if every else 1 :]
        result[index] = tuple(LoreMatch(key, start, -end) for start, end, key in merged)
    return result


def _first_matches(
    members: Sequence[tuple[tuple[int, str], ...]],
    spans: dict[int, list[tuple[int, int]]],
    seen: set[int],
    found: Container[int],
) -> Iterable[tuple[int, tuple[int, int, str]]]:
    """:func:`_matches_by_entry` with ``every`` false, as (entry index, (start, -end, key
    as written)): each entry's first match alone (the earliest, the longest at the same
    start)."""
    # Entry index -> (start, -end, key) of its first match so far.
    first: dict[int, tuple[int, int, str]] = {}
    for group, group_spans in spans.items():
        if group in seen:
            continue
        seen.add(group)
        start, end = group_spans[0]
        for index, key in members[group]:
            if index in found:
                continue
            known = first.get(index)
            if known is None or (start, end, key) < known:
                first[index] = (start, end, key)
    return first.items()


_CONSTANT_TRIGGER = LoreTrigger("constant")


def block_order(entry: LoreEntry) -> tuple[int, int]:
    """Where an entry goes in the lore block, and in its group: priority first (highest),
    then id (lowest). The lore block gives way from its end."""
    return -entry.priority, entry.id


def _group_leaders(
    groups: Sequence[str | None], ranks: Sequence[int], found: Iterable[int]
) -> dict[str | None, int]:
    """The index of the entry each group keeps, of those ``found``."""
    leaders: dict[str | None, int] = {}
    for index in found:
        group = groups[index]
        if group is None:
            continue
        leader = leaders.get(group)
        if leader is None or ranks[index] < ranks[leader]:
            leaders[group] = index
    return leaders


def test_lore(
    book: LoreBook,
    text: str,
    *,
    recursion: int = DEFAULT_LORE_RECURSION,
    constants: bool = False,
) -> list[LoreActivation]:
    """Which entries of ``book`` a text triggers and why, without assembling: the text is
    scanned as a turn's text would be (source ``text``), then ``recursion`` rounds of the
    entries' content, then groups apply. Constant entries, which no text triggers, are
    left out unless ``constants``. Each activation lists every match in the text that
    triggered it, for highlighting. Raises :class:`LoreError` (field ``text``) for a text
    longer than :data:`MAX_LORE_TEST_TEXT`.

    >>> book = LoreBook([
    ...     LoreEntry(1, "Small bell", "…", ("bell",), group="bells"),
    ...     LoreEntry(2, "Great bell", "…", ("bell",), group="bells", priority=3),
    ... ])
    >>> [(a.entry.id, a.status) for a in test_lore(book, "The bell, the bell!")]
    [(2, 'triggered'), (1, 'grouped_out')]
    >>> [m.to_dict() for m in test_lore(book, "The bell, the bell!")[0].matches]
    [{'key': 'bell', 'start': 4, 'end': 8}, {'key': 'bell', 'start': 14, 'end': 18}]
    """
    if len(text) > MAX_LORE_TEST_TEXT:
        raise LoreError("text", f"text is longer than {MAX_LORE_TEST_TEXT} characters")
    texts = [ScannedText("text", text)]
    return activate(book, texts, recursion=recursion, constants=constants, every=True)


# pytest collects functions named test_* that a test module imports; this one is not a test.
setattr(test_lore, "__test__", False)  # noqa: B010


def lore_budget_full(budget: int, room: int | None = None, needs: int | None = None) -> str:
    """Why an entry was left out to fit the lore budget.

    >>> lore_budget_full(80)
    'left out: the lore budget (80 tokens) was full'
    >>> lore_budget_full(80, 12, 41)
    'left out: the lore budget (80 tokens) was full (12 tokens left, it needs 41)'
    """
    words = f"left out: the lore budget ({budget} tokens) was full"
    if room is None or needs is None:
        return words
    return f"{words} ({max(room, 0)} tokens left, it needs {needs})"


def larger_than_lore_budget(budget: int) -> str:
    """Why an entry that alone does not fit the lore budget was left out."""
    return f"left out: even alone it takes more than the lore budget ({budget} tokens)"


NO_TEXT = "left out: it has no text"
