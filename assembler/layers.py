"""The layers of an assembly: each layer's block, priced from its parts.

Internal to the assembler: :mod:`assembler.assembly` holds the budget policy and drives
these classes; nothing outside the package should build them. Every part (segment, frame
line, NPC heading, dynamic text) has a token count (cached segment counts are trusted) and
every join between two parts a cost measured on a few characters either side
(:meth:`Tokenizer.join_cost <assembler.tokens.Tokenizer.join_cost>`, remembered), so a
layer's price after a change is known in constant time.
"""

from __future__ import annotations

import functools
import operator
from abc import ABC, abstractmethod
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from assembler import explain
from assembler.history import HistoryFit, fit_history
from assembler.lore import LoreEntry
from assembler.render import (
    ITEM_SEPARATOR,
    LINE_SEPARATOR,
    block_close,
    block_open,
    npc_heading,
)
from assembler.request import HISTORY_SCOPE, LORE_SCOPE, BlockFormat, History, Npc, Segment
from assembler.tokens import TextCuts, Tokenizer

# Called by a layer after its body changed, with the layer and its tokens before the change.
OnChange: TypeAlias = "Callable[[Layer, int | None], None]"


class Layer(ABC):
    """A layer's block: frame lines around a body, priced from its parts.

    The price is cached; subclasses call :meth:`changed` whenever their body changes, which
    tells the owner (``on_change``) the layer and its price before the change.
    """

    def __init__(
        self,
        scope: str,
        block_format: BlockFormat,
        tokenizer: Tokenizer,
        on_change: OnChange,
    ) -> None:
        self.scope = scope
        self.on_change = on_change
        self.tokenizer = tokenizer
        self.open, self.close, self.open_tokens, self.close_tokens = _frame(
            scope, block_format, tokenizer
        )
        self._tokens: int | None = None

    @abstractmethod
    def empty(self) -> bool:
        """Whether the layer emits nothing (then it has no block at all)."""

    @abstractmethod
    def first(self) -> str:
        """The body's first part (to price the join after the opening line)."""

    @abstractmethod
    def last(self) -> str:
        """The body's last part (to price the join before what follows)."""

    @abstractmethod
    def body_tokens(self) -> int:
        """Tokens of the body, joins between its parts included."""

    @abstractmethod
    def body(self) -> str:
        """The body's text."""

    def changed(self) -> None:
        before, self._tokens = self._tokens, None
        self.on_change(self, before)

    def tokens(self) -> int:
        """The block's tokens, frame included; 0 when the layer emits nothing."""
        if self._tokens is None:
            self._tokens = self._measure()
        return self._tokens

    def _measure(self) -> int:
        if self.empty():
            return 0
        join_cost = self.tokenizer.join_cost
        tokens = self.open_tokens + join_cost(self.open, LINE_SEPARATOR, self.first())
        tokens += self.body_tokens()
        if self.close is not None:
            tokens += join_cost(self.last(), LINE_SEPARATOR, self.close) + self.close_tokens
        return tokens

    def tail(self) -> str:
        """The block's last line or part, which the next block is joined to."""
        return self.last() if self.close is None else self.close

    def render(self) -> str:
        text = self.open + LINE_SEPARATOR + self.body()
        return text if self.close is None else text + LINE_SEPARATOR + self.close


@functools.lru_cache(maxsize=256)
def _frame(
    scope: str, block_format: BlockFormat, tokenizer: Tokenizer
) -> tuple[str, str | None, int, int]:
    """A block's opening and closing lines, and their tokens."""
    open_line, close_line = block_open(scope, block_format), block_close(scope, block_format)
    close_tokens = 0 if close_line is None else tokenizer.count(close_line)
    return open_line, close_line, tokenizer.count(open_line), close_tokens


class Segments:
    """A layer's segments in order; any prefix of those it may emit priced in constant time.

    ``ordered`` holds every segment considered, ``segments`` those that may be emitted:
    none when ``emit`` is false, and never a blank one, which would add nothing but blank
    lines (and blank lines merge with the separators around them, so their cost would not
    be local to one join).

    Read-only once built, so one instance serves every assembly of the same content
    (see :func:`priced`); what is worked out from it for an assembly (joined texts, framed
    blocks, an NPC's pricing) is remembered on it for the next.
    """

    def __init__(self, ordered: list[Segment], tokenizer: Tokenizer, emit: bool = True) -> None:
        self.ordered = ordered
        self.tokenizer = tokenizer
        segments = [segment for segment in ordered if segment.content.strip()] if emit else []
        self.segments = segments
        self.texts = [segment.content for segment in segments]
        self.ids = [segment.id for segment in segments]
        self.counts = [declared_count(segment, tokenizer) for segment in segments]
        self.max_count = max(self.counts, default=0)
        # prefix[k]: tokens of the first k segments joined by ITEM_SEPARATOR.
        self.prefix = [0]
        for index, count in enumerate(self.counts):
            join = (
                tokenizer.join_cost(self.texts[index - 1], ITEM_SEPARATOR, self.texts[index])
                if index
                else 0
            )
            self.prefix.append(self.prefix[-1] + join + count)
        # Bounded by the number of segments (prefixes) and of block formats (frames); blocks
        # of only some of the segments by _SHORT_BLOCKS.
        self._joined: dict[int, str] = {}
        self._framed: dict[tuple[str, str | None, int], str] = {}
        self._short: dict[tuple[str, str | None, int], str] = {}
        self._priced: dict[tuple[str, str | None, int], int] = {}
        self._npc: dict[str, NpcPricing] = {}
        self._names: dict[tuple[str, int], SegmentNames] = {}

    def joined(self, kept: int) -> str:
        """The first ``kept`` segments joined by ITEM_SEPARATOR."""
        text = self._joined.get(kept)
        if text is None:
            text = self._joined[kept] = ITEM_SEPARATOR.join(self.texts[:kept])
        return text

    def framed(self, open_line: str, close_line: str | None, kept: int) -> str:
        """The first ``kept`` segments, joined, between ``open_line`` and ``close_line``.

        The same string object each time, so the exact count of an unchanged block is
        looked up without hashing its text again, and the content hash of the blocks up to
        it is remembered (see :func:`assembler.assembly._content_hash`). A layer cut to the
        same segments turn after turn keeps its block too; a few such blocks are kept.
        """
        key = (open_line, close_line, kept)
        blocks = self._framed if kept == len(self.segments) else self._short
        text = blocks.get(key)
        if text is None:
            text = open_line + LINE_SEPARATOR + ITEM_SEPARATOR.join(self.texts[:kept])
            if close_line is not None:
                text += LINE_SEPARATOR + close_line
            if len(blocks) >= _SHORT_BLOCKS:
                blocks.clear()
            blocks[key] = text
        return text

    def framed_price(
        self, open_line: str, close_line: str | None, kept: int, measure: Callable[[], int]
    ) -> int:
        """The price of :meth:`framed`'s block, ``measure()`` the first time."""
        key = (open_line, close_line, kept)
        tokens = self._priced.get(key)
        if tokens is None:
            tokens = self._priced[key] = measure()
        return tokens

    def names(self, scope: str, index: int) -> SegmentNames:
        """How segment ``index`` is named when it is left out of layer ``scope`` or put back."""
        key = (scope, index)
        names = self._names.get(key)
        if names is None:
            segment = self.segments[index]
            plain = explain.segment_name(scope, segment.id, segment.label)
            names = self._names[key] = SegmentNames(
                f"{scope} segment #{segment.id}",
                plain,
                explain.was_left_out(explain.layer_in_sentence(plain)),
            )
        return names

    def npc_pricing(self, name: str) -> NpcPricing:
        """These segments as NPC ``name``'s: heading, tiers and the price of every prefix."""
        pricing = self._npc.get(name)
        if pricing is None:
            pricing = self._npc[name] = NpcPricing.of(name, self)
        return pricing


# How many blocks of a layer's first segments, some left out, are kept (see Segments.framed).
_SHORT_BLOCKS = 8


@dataclass(frozen=True, slots=True)
class SegmentNames:
    """How a segment left out or put back is named in the truncation steps: ``terse`` in
    reasons ("world segment #12"), ``plain`` for authors ("World segment #12 'Old wars'"),
    and ``left_out`` in the explanation of the step after ("world segment #12 'Old wars' was
    left out"). Worked out once per segment, since the same content is cut turn after turn.
    """

    terse: str
    plain: str
    left_out: str


@dataclass(frozen=True, slots=True)
class NpcPricing:
    """An NPC's heading, its segments' tiers, and ``priced[k]``: the tokens of the heading
    and its first ``k`` segments (0 for none)."""

    heading: str
    tiers: tuple[int, ...]
    priced: tuple[int, ...]

    @classmethod
    def of(cls, name: str, items: Segments) -> NpcPricing:
        tokenizer = items.tokenizer
        heading = npc_heading(name)
        tokens = tokenizer.count_cached(heading)
        if items.segments:
            tokens += tokenizer.join_cost(heading, LINE_SEPARATOR, items.texts[0])
        return cls(
            heading,
            tuple(segment.tier for segment in items.segments),
            (0, *(tokens + prefix for prefix in items.prefix[1:])),
        )


def _layer_order(segment: Segment) -> tuple[int, int]:
    return segment.sort_order, segment.id


def _npc_order(segment: Segment) -> tuple[int, int, int]:
    return segment.tier, segment.sort_order, segment.id


def _build_segments(
    groups: Sequence[Sequence[Segment]], tokenizer: Tokenizer, npc: bool, emit: bool
) -> Segments:
    order = _npc_order if npc else _layer_order
    ordered = [segment for group in groups for segment in sorted(group, key=order)]
    return Segments(ordered, tokenizer, emit)


# Static content (the same stored segments turn after turn) is sorted and priced once.
# Keyed by value, so it is only ever reused for equal segments; tuples only, since only
# they can be keys (a caller that passes lists gets a fresh pricing every time).
_build_segments_cached = functools.lru_cache(maxsize=1024)(_build_segments)

# In front of it, the same tuples by identity: a server hands the assembler the very same
# tuples turn after turn (a release's bundles, the content cache's), and looking them up
# by value hashes every segment on every call (a tuple does not keep its hash). Each entry
# holds what its key names, so those ids cannot be reused while it is there.
_IDENTITY_ENTRIES = 1024
_by_identity: dict[tuple[object, ...], tuple[tuple[object, ...], Segments]] = {}


def priced(
    groups: Sequence[Sequence[Segment]],
    tokenizer: Tokenizer,
    *,
    npc: bool = False,
    emit: bool = True,
) -> Segments:
    """The segments of ``groups`` (each sorted, then concatenated), priced."""
    if isinstance(groups, tuple):
        key = (npc, emit, id(tokenizer), *map(id, groups))
        found = _by_identity.get(key)
        if found is not None and all(map(operator.is_, found[0], (tokenizer, *groups))):
            return found[1]
        if all(isinstance(group, tuple) for group in groups):
            items = _build_segments_cached(groups, tokenizer, npc, emit)
            if len(_by_identity) >= _IDENTITY_ENTRIES:
                _by_identity.clear()
            _by_identity[key] = ((tokenizer, *groups), items)
            return items
    return _build_segments(groups, tokenizer, npc, emit)


class SegmentLayer(Layer):
    """A layer of stored segments, any of which can be left out and put back.

    ``included[i]`` says whether segment ``i`` (of ``items.segments``) is emitted. The
    body's tokens are kept up to date as segments come and go: leaving one out removes its
    count and its joins to its neighbours and adds the join between those neighbours.

    Segments are left out last first, so what is emitted is mostly the first ``kept``
    segments: then the block and its price are those of that prefix, remembered on
    ``items`` from one assembly to the next.
    """

    def __init__(
        self,
        scope: str,
        items: Segments,
        block_format: BlockFormat,
        tokenizer: Tokenizer,
        on_change: OnChange,
    ) -> None:
        super().__init__(scope, block_format, tokenizer, on_change)
        self.items = items
        self.included = [True] * len(items.segments)
        self.kept = len(items.segments)
        # How many segments from the first on are all emitted.
        self.leading = self.kept
        self._body_tokens = items.prefix[-1]

    def is_prefix(self) -> bool:
        """Whether the segments emitted are the first ``kept``."""
        return self.leading == self.kept

    def kept_indices(self) -> list[int]:
        return [index for index, included in enumerate(self.included) if included]

    def kept_ids(self) -> list[int]:
        """The ids of the segments emitted, in order."""
        if self.is_prefix():
            return self.items.ids[: self.kept]
        return [self.items.ids[index] for index in self.kept_indices()]

    def last_kept(self) -> int:
        """The index of the last segment emitted (the layer must not be empty)."""
        if self.is_prefix():
            return self.kept - 1
        included = self.included
        index = len(included) - 1
        while not included[index]:
            index -= 1
        return index

    def drop(self, index: int) -> Segment:
        """Leave segment ``index`` out."""
        if self.is_prefix() and index == self.kept - 1:
            self._body_tokens = self.items.prefix[index]
        else:
            self._body_tokens -= self._cost_of(index)
        self.included[index] = False
        self.kept -= 1
        self.leading = min(self.leading, index)
        self.changed()
        return self.items.segments[index]

    def restore(self, index: int) -> Segment:
        """Put segment ``index`` back where it was."""
        if self.is_prefix() and index == self.kept:
            self._body_tokens = self.items.prefix[index + 1]
        else:
            self._body_tokens += self._cost_of(index)
        self.included[index] = True
        self.kept += 1
        if index == self.leading:
            included, leading = self.included, index + 1
            while leading < len(included) and included[leading]:
                leading += 1
            self.leading = leading
        self.changed()
        return self.items.segments[index]

    def _cost_of(self, index: int) -> int:
        """What segment ``index`` adds to the body between the emitted segments around it."""
        texts, join_cost = self.items.texts, self.tokenizer.join_cost
        before = next((i for i in range(index - 1, -1, -1) if self.included[i]), None)
        after = next((i for i in range(index + 1, len(texts)) if self.included[i]), None)
        cost = self.items.counts[index]
        if before is not None:
            cost += join_cost(texts[before], ITEM_SEPARATOR, texts[index])
        if after is not None:
            cost += join_cost(texts[index], ITEM_SEPARATOR, texts[after])
        if before is not None and after is not None:
            cost -= join_cost(texts[before], ITEM_SEPARATOR, texts[after])
        return cost

    def empty(self) -> bool:
        return self.kept == 0

    def first(self) -> str:
        return self.items.texts[0 if self.leading else self.included.index(True)]

    def last(self) -> str:
        return self.items.texts[self.last_kept()]

    def body_tokens(self) -> int:
        return self._body_tokens

    def body(self) -> str:
        # Only for segments with a gap: the first ``kept`` are rendered by ``items.framed``.
        return ITEM_SEPARATOR.join(self.items.texts[index] for index in self.kept_indices())

    def render(self) -> str:
        if self.kept and self.is_prefix():
            return self.items.framed(self.open, self.close, self.kept)
        return super().render()

    def _measure(self) -> int:
        if self.kept and self.is_prefix():
            # The first ``kept`` segments: priced as when they last were.
            return self.items.framed_price(self.open, self.close, self.kept, super()._measure)
        return super()._measure()


class NpcState:
    """One NPC: its segments by (tier, sort order, id) and the tier currently used."""

    def __init__(self, npc: Npc, tokenizer: Tokenizer) -> None:
        self.npc = npc
        self.items = priced((npc.segments,), tokenizer, npc=True)
        pricing = self.items.npc_pricing(npc.name)
        self.heading = pricing.heading
        self.tiers = pricing.tiers
        # Tokens of the heading plus the first k segments, for every k.
        self.priced = pricing.priced
        self.tier = npc.requested_tier
        self.dropped = False
        self._update()

    def _update(self) -> None:
        # Emitted: the segments at or below the tier used.
        self.within_tier = bisect_right(self.tiers, self.tier)
        self.kept = 0 if self.dropped else self.within_tier
        self.tokens = self.priced[self.kept]

    @property
    def lowered(self) -> bool:
        """Whether it is shown at a lower tier than the caller asked for."""
        return self.tier < self.npc.requested_tier

    def can_lower(self) -> bool:
        """Whether it emits anything above tier 0."""
        return self.kept > 0 and self.tiers[self.kept - 1] > 0

    def lower(self) -> None:
        """Use the next lower tier that has segments (or 0), dropping the top tier's."""
        below = bisect_left(self.tiers, self.tiers[self.kept - 1])
        self.set_tier(self.tiers[below - 1] if below else 0)

    def set_tier(self, tier: int) -> None:
        self.tier = tier
        self._update()

    def set(self, tier: int, *, dropped: bool) -> None:
        """Use ``tier``, dropped or not (as an earlier fitting of the same NPCs left it)."""
        self.tier = tier
        self.dropped = dropped
        self._update()

    def drop(self) -> None:
        self.dropped = True
        self._update()

    def restore(self) -> None:
        self.dropped = False
        self._update()

    def last(self) -> str:
        return self.items.texts[self.kept - 1]

    def render(self) -> str:
        return self.heading + LINE_SEPARATOR + self.items.joined(self.kept)


class NpcLayer(Layer):
    def __init__(
        self,
        npcs: list[NpcState],
        block_format: BlockFormat,
        tokenizer: Tokenizer,
        on_change: OnChange,
    ) -> None:
        super().__init__("npc", block_format, tokenizer, on_change)
        self.npcs = npcs
        # The block as last rendered: checked against the NPC budget, then emitted.
        self._text: str | None = None

    def changed(self) -> None:
        self._text = None
        super().changed()

    def render(self) -> str:
        if self._text is None:
            self._text = super().render()
        return self._text

    def lower(self, state: NpcState) -> None:
        state.lower()
        self.changed()

    def drop(self, state: NpcState) -> None:
        state.drop()
        self.changed()

    def restore(self, state: NpcState) -> None:
        state.restore()
        self.changed()

    def set_tier(self, state: NpcState, tier: int) -> None:
        state.set_tier(tier)
        self.changed()

    def emitting(self) -> list[NpcState]:
        return [state for state in self.npcs if state.kept]

    def empty(self) -> bool:
        return not any(state.kept for state in self.npcs)

    def first(self) -> str:
        return self.emitting()[0].heading

    def last(self) -> str:
        return self.emitting()[-1].last()

    def body_tokens(self) -> int:
        return self._body_tokens(self.emitting())

    def _body_tokens(self, emitting: list[NpcState]) -> int:
        tokens = 0
        previous: NpcState | None = None
        for state in emitting:
            tokens += state.tokens
            if previous is not None:
                tokens += self.tokenizer.join_cost(previous.last(), ITEM_SEPARATOR, state.heading)
            previous = state
        return tokens

    def _measure(self) -> int:
        # Layer._measure, with the NPCs emitting listed once rather than three times.
        emitting = self.emitting()
        if not emitting:
            return 0
        join_cost = self.tokenizer.join_cost
        tokens = self.open_tokens + join_cost(self.open, LINE_SEPARATOR, emitting[0].heading)
        tokens += self._body_tokens(emitting)
        if self.close is not None:
            tokens += join_cost(emitting[-1].last(), LINE_SEPARATOR, self.close) + self.close_tokens
        return tokens

    def body(self) -> str:
        return ITEM_SEPARATOR.join(state.render() for state in self.emitting())


class TextLayer(Layer):
    """A dynamic layer: caller-supplied text that can be cut short.

    Its text is counted when its price is first needed, or never: a text that will not be
    cut can be priced by its whole block instead (:meth:`price_whole_block`).
    """

    # The whole text framed, when priced that way.
    _block: str | None = None
    _count: int | None = None
    _original_count: int | None = None

    def __init__(
        self,
        scope: str,
        text: str,
        block_format: BlockFormat,
        tokenizer: Tokenizer,
        on_change: OnChange,
    ) -> None:
        super().__init__(scope, block_format, tokenizer, on_change)
        self.original = text
        # The tokens are only needed if the text is trimmed (and are then usually still
        # remembered by the tokenizer, which counted them).
        self._cuts: TextCuts | None = None
        self.text = text
        # The most tokens the text may have: None while it is whole.
        self.allowed: int | None = None

    @property
    def original_count(self) -> int:
        """Tokens of the whole text."""
        if self._original_count is None:
            # Through the tokenizer's memory of recent dynamic texts.
            self._original_count = self.tokenizer.count_text(self.original)
        return self._original_count

    @original_count.setter
    def original_count(self, value: int) -> None:
        self._original_count = value

    @property
    def count(self) -> int:
        """Tokens of the text as it stands."""
        if self._count is None:
            self._count = self.original_count  # still whole: never cut yet
        return self._count

    @count.setter
    def count(self, value: int) -> None:
        self._count = value

    def block_size_guess(self) -> int:
        """A likely most for the tokens of the block of the whole text, to decide whether
        counting the block is worth it: a token per three bytes (English prose takes one
        per four or five, and few texts fewer than three).

        >>> from assembler.tokens import get_tokenizer
        >>> layer = TextLayer("input", "I light a fire.", "delimited", get_tokenizer(), print)
        >>> layer.block_size_guess(), layer.tokens()
        (17, 14)
        """
        if not self.original:
            return 0
        text = self.original
        size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
        frame = self.open + LINE_SEPARATOR + (self.close or "")
        framed = size + len(frame.encode()) + (0 if self.close is None else len(LINE_SEPARATOR))
        return framed // 3

    def price_by_parts(self) -> None:
        """Undo :meth:`price_whole_block`: price the text and the frame apart again."""
        if self._block is not None:
            self._block = None
            self._tokens = None

    def price_whole_block(self) -> None:
        """While the text is whole, price the layer by the exact count of its block, which
        the exact count of the prompt then finds remembered (:meth:`Tokenizer.count_block`):
        one encode of the text instead of two, for a text the caller knows will not be cut.
        Should it be cut after all, its own count is worked out then."""
        if not self.empty() and self.text is self.original:
            self._block = Layer.render(self)
            self._tokens = None

    def _measure(self) -> int:
        if self._block is not None and self.text is self.original:
            return self.tokenizer.count_block(self._block)
        return super()._measure()

    def render(self) -> str:
        if self._block is not None and self.text is self.original:
            return self._block
        return super().render()

    def cut(self, max_tokens: int | None) -> None:
        """Keep the start of the original text in at most ``max_tokens`` tokens (None: all)."""
        self.allowed = max_tokens
        text, count = self.cut_at(max_tokens)
        # Allowances close together often keep the same text: nothing to price again.
        if text != self.text:
            self.text, self.count = text, count
            self.changed()

    def cut_at(self, max_tokens: int | None) -> tuple[str, int]:
        """What :meth:`cut` would keep, and its count, without changing the layer.

        The cuts share their work (:class:`~assembler.tokens.TextCuts`), so trying one cut
        after another costs about an encode per distinct text.
        """
        if max_tokens is None or max_tokens >= self.original_count:
            return self.original, self.original_count
        if self._cuts is None:
            tokens = self.tokenizer.encode_recent(self.original)
            self._cuts = self.tokenizer.cuts(self.original, tokens)
        return self._cuts.cut(max_tokens)

    def next_longer(self, cap: int | None) -> int | None:
        """The least allowance above the text's count that keeps more of it, if any.

        Not above ``cap``. Cuts are not monotonic in the allowance, so every allowance
        counts, but those that would back up to no more than is kept are passed over in
        runs (:meth:`TextCuts.next_longer <assembler.tokens.TextCuts.next_longer>`).
        """
        limit = self.original_count if cap is None else min(cap, self.original_count)
        if self._cuts is None or self.count + 1 > limit:
            return None
        return self._cuts.next_longer(len(self.text), self.count + 1, limit)

    def empty(self) -> bool:
        return not self.text

    def first(self) -> str:
        return self.text

    def last(self) -> str:
        return self.text

    def body_tokens(self) -> int:
        return self.count

    def body(self) -> str:
        return self.text


class HistoryLayer(TextLayer):
    """The conversation history: a summary and recent messages, fitted to an allowance.

    Cut like a dynamic layer, but by fitting again (:func:`fit_history`) to the smaller
    allowance, so it gives way whole messages at a time, oldest first, then the summary;
    the newest user message (and what follows it) goes last, cut short only when it alone
    is over the allowance. ``exchange_tokens`` is the size of that newest exchange.
    """

    def __init__(
        self,
        history: History | None,
        block_format: BlockFormat,
        tokenizer: Tokenizer,
        on_change: OnChange,
    ) -> None:
        Layer.__init__(self, HISTORY_SCOPE, block_format, tokenizer, on_change)
        self.history = history
        self.original_fit = self.fit = None if history is None else self._fit(history.budget)
        self.original = self.text = "" if self.fit is None else self.fit.text
        self.count = self.original_count = 0 if self.fit is None else self.fit.tokens
        self.original_tokens = None
        self.allowed = None
        self._exchange: int | None = None

    def _fit(self, budget: int) -> HistoryFit:
        assert self.history is not None
        # The whole prompt is counted exactly at the end; the layer's price is enough here.
        return fit_history(
            messages=self.history.messages,
            summary=self.history.summary,
            budget=budget,
            tokenizer=self.tokenizer,
            exact_check=False,
        )

    def exchange_tokens(self) -> int:
        """Tokens of the newest user message and the messages after it, as first fitted."""
        if self._exchange is None:
            self._exchange = 0
            fit = self.original_fit
            if fit is not None and fit.positions:
                assert self.history is not None
                shown = [m for m in self.history.messages if m.position in set(fit.positions)]
                newest_user = max(
                    (i for i, message in enumerate(shown) if message.role == "user"), default=0
                )
                exchange = fit_history(
                    messages=shown[newest_user:],
                    summary=None,
                    budget=self.history.budget,
                    tokenizer=self.tokenizer,
                    exact_check=False,
                )
                self._exchange = min(exchange.tokens, self.original_count)
        return self._exchange

    def _fit_at(self, max_tokens: int | None) -> HistoryFit | None:
        if max_tokens is None or max_tokens >= self.original_count:
            return self.original_fit
        return self._fit(max(max_tokens, 0))

    def cut(self, max_tokens: int | None) -> None:
        """Fit the history again within ``max_tokens`` (None: as first fitted)."""
        self.allowed = max_tokens
        self.fit = self._fit_at(max_tokens)
        self.text = "" if self.fit is None else self.fit.text
        self.count = 0 if self.fit is None else self.fit.tokens
        self.changed()

    def cut_at(self, max_tokens: int | None) -> tuple[str, int]:
        """What :meth:`cut` would keep, and its count, without changing the layer."""
        fit = self._fit_at(max_tokens)
        return ("", 0) if fit is None else (fit.text, fit.tokens)

    def next_longer(self, cap: int | None) -> int | None:
        """The least allowance above the block's count that shows more of the history.

        A fit only grows with its allowance (whole messages, newest first), so the least
        such allowance is found by bisection: a few fits, not one per allowance.
        """
        limit = self.original_count if cap is None else min(cap, self.original_count)
        low, high, length = self.count + 1, limit, len(self.text)
        if low > high or len(self.cut_at(high)[0]) <= length:
            return None
        while low < high:
            middle = (low + high) // 2
            if len(self.cut_at(middle)[0]) > length:
                high = middle
            else:
                low = middle + 1
        return low


class LoreLayer(Layer):
    """The lore entries a turn activated, in the block's order: priority (highest first),
    then id. Any can be left out and put back.

    It starts empty: entries come in as the lore budget is filled, and are left out (the
    last of the block first) to fit the token budget. Priced like a layer of segments: an
    entry's count plus its joins to the entries emitted either side of it.
    """

    def __init__(
        self,
        entries: Sequence[LoreEntry],
        counts: Sequence[int],
        block_format: BlockFormat,
        tokenizer: Tokenizer,
        on_change: OnChange,
    ) -> None:
        super().__init__(LORE_SCOPE, block_format, tokenizer, on_change)
        self.entries = list(entries)
        self.texts = [entry.content for entry in entries]
        self.counts = list(counts)
        # The indices of the entries emitted, in order.
        self.emitted: list[int] = []
        self._body_tokens = 0

    def add(self, index: int) -> None:
        """Emit entry ``index``, in its place."""
        where = bisect_left(self.emitted, index)
        self._body_tokens += self._cost_at(where, index)
        self.emitted.insert(where, index)
        self.changed()

    def drop(self, index: int) -> LoreEntry:
        """Leave entry ``index`` out."""
        where = bisect_left(self.emitted, index)
        del self.emitted[where]
        self._body_tokens -= self._cost_at(where, index)
        self.changed()
        return self.entries[index]

    def restore(self, emitted: Sequence[int], body_tokens: int) -> None:
        """Emit exactly the entries ``emitted`` (in order), whose body, joins included,
        takes ``body_tokens``: a state this layer's entries were in before."""
        self.emitted = list(emitted)
        self._body_tokens = body_tokens
        self.changed()

    def _cost_at(self, where: int, index: int) -> int:
        """What entry ``index`` adds to the body at ``where`` among the entries emitted
        (which do not include it)."""
        emitted, texts, join_cost = self.emitted, self.texts, self.tokenizer.join_cost
        before = texts[emitted[where - 1]] if where else None
        after = texts[emitted[where]] if where < len(emitted) else None
        cost = self.counts[index]
        if before is not None:
            cost += join_cost(before, ITEM_SEPARATOR, texts[index])
        if after is not None:
            cost += join_cost(texts[index], ITEM_SEPARATOR, after)
        if before is not None and after is not None:
            cost -= join_cost(before, ITEM_SEPARATOR, after)
        return cost

    def last_emitted(self) -> int:
        """The index of the last entry emitted (the layer must not be empty)."""
        return self.emitted[-1]

    def empty(self) -> bool:
        return not self.emitted

    def first(self) -> str:
        return self.texts[self.emitted[0]]

    def last(self) -> str:
        return self.texts[self.emitted[-1]]

    def body_tokens(self) -> int:
        return self._body_tokens

    def body(self) -> str:
        return ITEM_SEPARATOR.join(self.texts[index] for index in self.emitted)


def declared_count(segment: Segment, tokenizer: Tokenizer) -> int:
    return tokenizer.count(segment.content) if segment.token_count is None else segment.token_count
