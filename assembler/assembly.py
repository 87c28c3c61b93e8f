"""Layered assembly under a token budget: the hot path.

How it stays exact without encoding the prompt over and over: every part (segment, frame
line, NPC heading, dynamic text) has a token count (cached segment counts are trusted),
and every join between two parts has a cost measured on a few characters either side
(:meth:`Tokenizer.join_cost`, remembered). BPE counts are not additive, but these sums
are exact for ordinary text, so each step of the budget policy is priced in constant
time. One encode of the finished prompt (and one of the NPC block) then checks the sum.
Should it fall short (a stale cached count, a very long run of punctuation at a join),
the policy goes on in the same order, one step at a time, each checked by an exact count.
"""

from __future__ import annotations

import functools
import hashlib
from abc import ABC, abstractmethod
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from typing import TypeAlias

from assembler import lint as lint_rules
from assembler.lint import Lint
from assembler.render import (
    BLOCK_SEPARATOR,
    ITEM_SEPARATOR,
    LINE_SEPARATOR,
    block_close,
    block_open,
    blocks_join_on_token_boundaries,
    npc_heading,
    render_state,
)
from assembler.request import (
    DYNAMIC_SCOPES,
    PROTECTED_SCOPES,
    SCOPES,
    AssemblyRequest,
    BlockFormat,
    Npc,
    Segment,
)
from assembler.result import (
    AssemblyResult,
    Block,
    Fate,
    LayerReport,
    LayerStatus,
    Meta,
    NpcReport,
    NpcStatus,
    OverBudgetError,
    SegmentFate,
    StepAction,
    TruncationStep,
)
from assembler.tokens import Tokenizer

# Called by a layer after its body changed, with the layer and its tokens before the change.
_OnChange: TypeAlias = "Callable[[_Layer, int | None], None]"

# The default policy trims dynamic layers in this order, first to their floors, and at
# the very end below them.
TRIM_ORDER: tuple[str, ...] = ("input", "rng", "player", "game_state")
# Segment layers that lose whole segments (each layer's last segment first), in order.
DROP_ORDER: tuple[str, ...] = ("entry_start", "entry", "world")


def assemble(request: AssemblyRequest, tokenizer: Tokenizer) -> AssemblyResult:
    """Assemble the prompt for ``request`` within its budgets.

    First the NPC block is fitted to ``npc_budget``: while it is over, the lowest-priority
    NPC that still emits something above tier 0 moves down to the next lower tier that has
    segments (or to 0), so every ``tier_lowered`` step changes what is emitted; once none
    can go lower, the lowest-priority NPC is dropped (``npc_dropped``), even when it is the
    only one. An NPC with no segments at its tier emits nothing, not even its heading.

    Then the whole prompt is fitted to ``token_budget``, stopping as soon as it fits:
    trim ``input``, ``rng``, ``player``, ``game_state`` towards their floors; drop NPCs
    (lowest priority first), then ``entry_start``, ``entry`` and ``world`` segments (last
    first); trim the dynamic layers below their floors, to nothing. Each step removes only
    what is needed. ``core`` and ``ruleset`` are never touched: if they alone exceed the
    budget, the result holds only them and has ``meta.over_budget`` set, or, with
    ``request.strict``, :class:`OverBudgetError` is raised.

    >>> from assembler import AssemblyRequest, Segment, get_tokenizer
    >>> request = AssemblyRequest(
    ...     core=[Segment(1, "core", "You narrate a fantasy game.")],
    ...     rulesets=[], world=[Segment(2, "world", "The north is cold.")],
    ...     entry=[], entry_start=[], npcs=[], state={"input": "I light a fire."},
    ...     first_turn=False, token_budget=100)
    >>> result = assemble(request, get_tokenizer())
    >>> print(result.prompt)
    === CORE_BEGIN ===
    You narrate a fantasy game.
    === CORE_END ===
    <BLANKLINE>
    === WORLD_BEGIN ===
    The north is cold.
    === WORLD_END ===
    <BLANKLINE>
    === INPUT_BEGIN ===
    I light a fire.
    === INPUT_END ===
    >>> result.meta.tokens, result.meta.tokens_estimated, result.meta.over_budget
    (46, 46, False)
    """
    assembly = _Assembly(request, tokenizer)
    tokens_estimated = assembly.total()
    assembly.fit_npc_budget()
    blocks, prompt, tokens = assembly.fit_token_budget()
    over_budget = tokens > request.token_budget
    if over_budget and request.strict:
        raise OverBudgetError(
            {scope: assembly.layer(scope).tokens() for scope in PROTECTED_SCOPES},
            tokens,
            request.token_budget,
        )
    return assembly.result(blocks, prompt, tokens, tokens_estimated, over_budget)


class _Layer(ABC):
    """A layer's block: frame lines around a body, priced from its parts.

    The price is cached; subclasses call :meth:`changed` whenever their body changes, which
    tells the owner (``on_change``) the layer and its price before the change.
    """

    def __init__(
        self,
        scope: str,
        block_format: BlockFormat,
        tokenizer: Tokenizer,
        on_change: _OnChange,
    ) -> None:
        self.scope = scope
        self.on_change = on_change
        self.tokenizer = tokenizer
        self.open = block_open(scope, block_format)
        self.close = block_close(scope, block_format)
        self.open_tokens = tokenizer.count_cached(self.open)
        self.close_tokens = 0 if self.close is None else tokenizer.count_cached(self.close)
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


class _Segments:
    """A layer's segments in order; any prefix of those it may emit priced in constant time.

    ``ordered`` holds every segment considered, ``segments`` those that may be emitted:
    none when ``emit`` is false, and never a blank one, which would add nothing but blank
    lines (and blank lines merge with the separators around them, so their cost would not
    be local to one join).

    Read-only once built, so one instance serves every assembly of the same content
    (see :func:`_priced`).
    """

    def __init__(self, ordered: list[Segment], tokenizer: Tokenizer, emit: bool = True) -> None:
        self.ordered = ordered
        segments = [segment for segment in ordered if segment.content.strip()] if emit else []
        self.segments = segments
        self.texts = [segment.content for segment in segments]
        self.counts = [_declared_count(segment, tokenizer) for segment in segments]
        # prefix[k]: tokens of the first k segments joined by ITEM_SEPARATOR.
        self.prefix = [0]
        for index, count in enumerate(self.counts):
            join = (
                tokenizer.join_cost(self.texts[index - 1], ITEM_SEPARATOR, self.texts[index])
                if index
                else 0
            )
            self.prefix.append(self.prefix[-1] + join + count)

    def joined(self, kept: int) -> str:
        return ITEM_SEPARATOR.join(self.texts[:kept])


def _layer_order(segment: Segment) -> tuple[int, int]:
    return segment.sort_order, segment.id


def _npc_order(segment: Segment) -> tuple[int, int, int]:
    return segment.tier, segment.sort_order, segment.id


def _build_segments(
    groups: Sequence[Sequence[Segment]], tokenizer: Tokenizer, npc: bool, emit: bool
) -> _Segments:
    order = _npc_order if npc else _layer_order
    ordered = [segment for group in groups for segment in sorted(group, key=order)]
    return _Segments(ordered, tokenizer, emit)


# Static content (the same stored segments turn after turn) is sorted and priced once.
# Keyed by value, so it is only ever reused for equal segments; tuples only, since only
# they can be keys (a caller that passes lists gets a fresh pricing every time).
_build_segments_cached = functools.lru_cache(maxsize=1024)(_build_segments)


def _priced(
    groups: Sequence[Sequence[Segment]],
    tokenizer: Tokenizer,
    *,
    npc: bool = False,
    emit: bool = True,
) -> _Segments:
    """The segments of ``groups`` (each sorted, then concatenated), priced."""
    if isinstance(groups, tuple) and all(isinstance(group, tuple) for group in groups):
        return _build_segments_cached(groups, tokenizer, npc, emit)
    return _build_segments(groups, tokenizer, npc, emit)


class _SegmentLayer(_Layer):
    """A layer of stored segments that can lose its last segments."""

    def __init__(
        self,
        scope: str,
        items: _Segments,
        block_format: BlockFormat,
        tokenizer: Tokenizer,
        on_change: _OnChange,
    ) -> None:
        super().__init__(scope, block_format, tokenizer, on_change)
        self.items = items
        self.kept = len(items.segments)

    def drop_last(self) -> Segment:
        self.kept -= 1
        self.changed()
        return self.items.segments[self.kept]

    def empty(self) -> bool:
        return self.kept == 0

    def first(self) -> str:
        return self.items.texts[0]

    def last(self) -> str:
        return self.items.texts[self.kept - 1]

    def body_tokens(self) -> int:
        return self.items.prefix[self.kept]

    def body(self) -> str:
        return self.items.joined(self.kept)


class _NpcState:
    """One NPC: its segments by (tier, sort order, id) and the tier currently used."""

    def __init__(self, npc: Npc, tokenizer: Tokenizer) -> None:
        self.npc = npc
        self.heading = npc_heading(npc.name)
        self.items = _priced((npc.segments,), tokenizer, npc=True)
        segments = self.items.segments
        self.tiers = [segment.tier for segment in segments]
        self.tier = npc.requested_tier
        self.lowered = False
        self.dropped = False
        # Tokens of the heading plus the first k segments, for every k.
        heading = tokenizer.count_cached(self.heading)
        if segments:
            heading += tokenizer.join_cost(self.heading, LINE_SEPARATOR, self.items.texts[0])
        self.priced = [0] + [heading + tokens for tokens in self.items.prefix[1:]]
        self._update()

    def _update(self) -> None:
        # Emitted: the segments at or below the tier used.
        self.kept = 0 if self.dropped else bisect_right(self.tiers, self.tier)
        self.tokens = self.priced[self.kept]

    def can_lower(self) -> bool:
        """Whether it emits anything above tier 0."""
        return self.kept > 0 and self.tiers[self.kept - 1] > 0

    def lower(self) -> None:
        """Use the next lower tier that has segments (or 0), dropping the top tier's."""
        below = bisect_left(self.tiers, self.tiers[self.kept - 1])
        self.tier = self.tiers[below - 1] if below else 0
        self.lowered = True
        self._update()

    def drop(self) -> None:
        self.dropped = True
        self._update()

    def last(self) -> str:
        return self.items.texts[self.kept - 1]

    def render(self) -> str:
        return self.heading + LINE_SEPARATOR + self.items.joined(self.kept)


class _NpcLayer(_Layer):
    def __init__(
        self,
        npcs: list[_NpcState],
        block_format: BlockFormat,
        tokenizer: Tokenizer,
        on_change: _OnChange,
    ) -> None:
        super().__init__("npc", block_format, tokenizer, on_change)
        self.npcs = npcs

    def lower(self, state: _NpcState) -> None:
        state.lower()
        self.changed()

    def drop(self, state: _NpcState) -> None:
        state.drop()
        self.changed()

    def emitting(self) -> list[_NpcState]:
        return [state for state in self.npcs if state.kept]

    def empty(self) -> bool:
        return not any(state.kept for state in self.npcs)

    def first(self) -> str:
        return self.emitting()[0].heading

    def last(self) -> str:
        return self.emitting()[-1].last()

    def body_tokens(self) -> int:
        tokens = 0
        previous: _NpcState | None = None
        for state in self.emitting():
            tokens += state.tokens
            if previous is not None:
                tokens += self.tokenizer.join_cost(previous.last(), ITEM_SEPARATOR, state.heading)
            previous = state
        return tokens

    def body(self) -> str:
        return ITEM_SEPARATOR.join(state.render() for state in self.emitting())


class _TextLayer(_Layer):
    """A dynamic layer: caller-supplied text that can be cut short."""

    def __init__(
        self,
        scope: str,
        text: str,
        block_format: BlockFormat,
        tokenizer: Tokenizer,
        on_change: _OnChange,
    ) -> None:
        super().__init__(scope, block_format, tokenizer, on_change)
        self.original = text
        # Counted through the tokenizer's memory of recent dynamic texts; the tokens are
        # only needed if the text is trimmed (and are then usually still remembered).
        self.original_tokens: Sequence[int] | None = None
        self.text = text
        self.count = tokenizer.count_text(text)

    def cut(self, max_tokens: int) -> None:
        """Keep the start of the original text in at most ``max_tokens`` tokens."""
        if self.original_tokens is None:
            self.original_tokens = self.tokenizer.encode_recent(self.original)
        self.text, self.count = self.tokenizer.truncate_encoded(
            self.original, self.original_tokens, max_tokens
        )
        self.changed()

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


class _Assembly:
    """The layers of one request and the budget policy applied to them."""

    def __init__(self, request: AssemblyRequest, tokenizer: Tokenizer) -> None:
        self.request = request
        self.tokenizer = tokenizer
        block_format = request.policy.block_format

        segment_layers = {
            "core": _priced((request.core,), tokenizer),
            "ruleset": _priced(tuple(ruleset.segments for ruleset in request.rulesets), tokenizer),
            "world": _priced((request.world,), tokenizer),
            "entry": _priced((request.entry,), tokenizer),
            "entry_start": _priced((request.entry_start,), tokenizer, emit=request.first_turn),
        }
        self._total: int | None = None
        changed = self._layer_changed
        self.segment_layers = {
            scope: _SegmentLayer(scope, items, block_format, tokenizer, changed)
            for scope, items in segment_layers.items()
        }
        self.npc_layer = _NpcLayer(
            [_NpcState(npc, tokenizer) for npc in request.npcs], block_format, tokenizer, changed
        )
        self.npcs_emitted_initially = not self.npc_layer.empty()
        self.text_layers = {
            scope: _TextLayer(scope, _state_text(request, scope), block_format, tokenizer, changed)
            for scope in DYNAMIC_SCOPES
        }
        self.layers: list[_Layer] = [
            *self.segment_layers.values(),
            self.npc_layer,
            *self.text_layers.values(),
        ]
        self.floors = {
            scope: request.policy.floor(scope, request.token_budget) for scope in TRIM_ORDER
        }
        self.steps: list[TruncationStep] = []
        self.previous_step = ""

    def layer(self, scope: str) -> _Layer:
        return self.layers[SCOPES.index(scope)]

    def _layer_changed(self, layer: _Layer, before: int | None) -> None:
        if self._total is None:
            return
        after = layer.tokens()
        if before and after and layer.close is not None:
            # Still emitted and framed by the same closing line: the joins to the
            # neighbouring blocks are unchanged, only the layer's own price moved.
            self._total += after - before
        else:
            self._total = None

    def total(self) -> int:
        """Estimated tokens of the prompt as it stands."""
        if self._total is None:
            self._total = self._measure()
        return self._total

    def _measure(self) -> int:
        total = 0
        previous: _Layer | None = None
        for layer in self.layers:
            if layer.empty():
                continue
            total += layer.tokens()
            if previous is not None:
                total += self.tokenizer.join_cost(previous.tail(), BLOCK_SEPARATOR, layer.open)
            previous = layer
        return total

    def blocks(self) -> tuple[Block, ...]:
        """The emitted layers' blocks, in order; the prompt is them joined."""
        return tuple(
            Block(layer.scope, layer.render()) for layer in self.layers if not layer.empty()
        )

    # NPC budget

    def fit_npc_budget(self) -> None:
        """Lower tiers, then drop NPCs, until the NPC block fits ``npc_budget`` exactly.

        Steps are priced from the parts; one exact count then checks the result, and should
        the parts have understated it (a stale cached count, say), the policy goes on one
        step at a time, each checked exactly.
        """
        layer = self.npc_layer
        budget = self.request.npc_budget
        while layer.tokens() > budget and self._shrink_npcs(layer.tokens() - budget):
            pass
        while not layer.empty():
            exact = self.tokenizer.count_block(layer.render())
            if exact <= budget or not self._shrink_npcs(exact - budget):
                return

    def _shrink_npcs(self, over: int) -> bool:
        """Apply one NPC-budget step; False when there is nothing left to remove."""
        layer = self.npc_layer
        budget = self.request.npc_budget
        before = layer.tokens()
        for state in reversed(layer.npcs):
            if state.can_lower():
                from_tier = state.tier
                layer.lower(state)
                self._record(
                    "npc",
                    "tier_lowered",
                    before,
                    layer.tokens(),
                    f"NPC '{state.npc.name}' lowered from tier {from_tier} to tier "
                    f"{state.tier}: NPC block {over} tokens over its budget of {budget}",
                    npc=state.npc.slug,
                )
                return True
        emitting = layer.emitting()
        if not emitting:
            return False
        state = emitting[-1]
        layer.drop(state)
        if len(emitting) == 1:
            why = f"alone at tier {state.tier} it takes {before} tokens, over the NPC budget"
            why += f" of {budget}"
        else:
            why = f"NPC block {over} tokens over its budget of {budget} and no NPC can go lower"
        self._record(
            "npc",
            "npc_dropped",
            before,
            layer.tokens(),
            f"NPC '{state.npc.name}' dropped: {why}",
            npc=state.npc.slug,
        )
        return True

    # Token budget

    def fit_token_budget(self) -> tuple[tuple[Block, ...], str, int]:
        """Apply the budget policy; return the blocks, the prompt and its exact token count.

        As for the NPC block: steps priced from the parts, then an exact count, then, if
        needed, single steps each checked exactly.
        """
        budget = self.request.token_budget
        self.previous_step = ""
        while self.total() > budget and self._shrink_prompt(self.total() - budget):
            pass
        while True:
            blocks = self.blocks()
            prompt = BLOCK_SEPARATOR.join(block.text for block in blocks)
            tokens = self._exact_count(blocks, prompt)
            if tokens <= budget or not self._shrink_prompt(tokens - budget):
                return blocks, prompt, tokens

    def _exact_count(self, blocks: tuple[Block, ...], prompt: str) -> int:
        """The exact token count of ``prompt``, the ``blocks`` joined.

        Where blocks join on token boundaries this sums remembered block counts, so only
        blocks that changed since an earlier assembly are encoded.
        """
        block_format = self.request.policy.block_format
        if not blocks_join_on_token_boundaries(block_format):
            return self.tokenizer.count(prompt)
        join = self.tokenizer.join_cost(
            block_close("core", block_format) or "",
            BLOCK_SEPARATOR,
            block_open("core", block_format),
        )
        tokens = sum(self.tokenizer.count_block(block.text) for block in blocks)
        return tokens + join * (len(blocks) - 1) if blocks else 0

    def _shrink_prompt(self, over: int) -> bool:
        """Apply the policy's next step to remove ``over`` tokens; False if none is left.

        The next step follows from the layers' state, since every step only shrinks:
        1. trim a dynamic layer still above its floor (in TRIM_ORDER) towards the floor;
        2. drop the lowest-priority NPC, else the last segment of a DROP_ORDER layer;
        3. trim a dynamic layer that still has text (in TRIM_ORDER) towards nothing.
        """
        for scope in TRIM_ORDER:
            if self.text_layers[scope].count > self.floors[scope]:
                self._trim(scope, self.floors[scope], over, below_floor=False)
                return True
        for state in reversed(self.npc_layer.npcs):
            if state.kept:
                self._drop_npc(state, over)
                return True
        for scope in DROP_ORDER:
            layer = self.segment_layers[scope]
            if layer.kept:
                self._drop_segment(layer, over)
                return True
        for scope in TRIM_ORDER:
            if not self.text_layers[scope].empty():
                self._trim(scope, 0, over, below_floor=True)
                return True
        return False

    def _trim(self, scope: str, floor: int, over: int, *, below_floor: bool) -> None:
        """Cut layer ``scope`` by ``over`` tokens of prompt, not below ``floor`` tokens."""
        layer = self.text_layers[scope]
        target = self.total() - over
        before = layer.tokens()
        allowed = max(floor, layer.count - over)
        while True:
            layer.cut(allowed)
            if self.total() <= target or allowed <= floor or layer.empty():
                break
            # The join to the new end of the text costs more than before: cut that too.
            allowed = max(floor, min(allowed - 1, layer.count - (self.total() - target)))
        how = "below its floor" if below_floor else f"towards its floor of {floor} tokens"
        self._record(
            scope,
            "trimmed",
            before,
            layer.tokens(),
            f"{scope} trimmed {how}, from {before} to {layer.tokens()} tokens: "
            f"prompt {over} tokens over budget{self._after()}",
        )
        self.previous_step = f"trimming {scope}"

    def _drop_npc(self, state: _NpcState, over: int) -> None:
        before = self.npc_layer.tokens()
        self.npc_layer.drop(state)
        self._record(
            "npc",
            "npc_dropped",
            before,
            self.npc_layer.tokens(),
            f"NPC '{state.npc.name}' dropped: prompt {over} tokens over budget{self._after()}",
            npc=state.npc.slug,
        )
        self.previous_step = f"dropping NPC '{state.npc.name}'"

    def _drop_segment(self, layer: _SegmentLayer, over: int) -> None:
        before = layer.tokens()
        segment = layer.drop_last()
        name = f"{layer.scope} segment #{segment.id}"
        self._record(
            layer.scope,
            "dropped",
            before,
            layer.tokens(),
            f"{name} '{segment.label}' dropped: prompt {over} tokens over budget{self._after()}",
            segment_id=segment.id,
        )
        self.previous_step = f"dropping {name}"

    def _after(self) -> str:
        return f" after {self.previous_step}" if self.previous_step else ""

    def _record(
        self,
        scope: str,
        action: StepAction,
        before: int,
        after: int,
        reason: str,
        *,
        segment_id: int | None = None,
        npc: str | None = None,
    ) -> None:
        self.steps.append(
            TruncationStep(scope, action, before, after, reason, segment_id=segment_id, npc=npc)
        )

    # Report

    def result(
        self,
        blocks: tuple[Block, ...],
        prompt: str,
        tokens: int,
        tokens_estimated: int,
        over_budget: bool,
    ) -> AssemblyResult:
        request = self.request
        ids: dict[str, list[int]] = {scope: [] for scope in SCOPES}
        for scope, layer in self.segment_layers.items():
            ids[scope] = [segment.id for segment in layer.items.segments[: layer.kept]]
        for state in self.npc_layer.npcs:
            ids["npc"] += [segment.id for segment in state.items.segments[: state.kept]]
        lints = lint_rules.lint_request(request)
        lints += self._segment_lints()
        if over_budget:
            lints.append(lint_rules.over_budget(tokens, request.token_budget))
        meta = Meta(
            order=SCOPES,
            segment_ids_by_scope=ids,
            tokens_estimated=tokens_estimated,
            tokens=tokens,
            token_budget=request.token_budget,
            npc_budget=request.npc_budget,
            encoding=self.tokenizer.name,
            over_budget=over_budget,
            truncated=self.steps,
            layers={
                scope: LayerReport(
                    self._status(scope), self.layer(scope).tokens(), list(ids[scope])
                )
                for scope in SCOPES
            },
            npcs=[
                NpcReport(
                    npc=state.npc.slug,
                    requested_tier=state.npc.requested_tier,
                    tier=state.tier,
                    status=_npc_status(state),
                    tokens=state.tokens,
                )
                for state in self.npc_layer.npcs
            ],
            lints=lints,
            content_hash="sha256:" + hashlib.sha256(prompt.encode()).hexdigest(),
        )
        return AssemblyResult(prompt=prompt, meta=meta, blocks=blocks, explain=self._fates)

    def _fates(self) -> list[SegmentFate]:
        fates: list[SegmentFate] = []
        for layer in self.segment_layers.values():
            fates += self._fates_of(layer.items, layer.kept, None, "included", "dropped")
        for state in self.npc_layer.npcs:
            within_tier = bisect_right(state.tiers, state.tier)
            emitted: Fate = "dropped" if state.dropped else "included"
            fates += self._fates_of(state.items, within_tier, state.npc.slug, emitted, "skipped")
        return fates

    def _fates_of(
        self, items: _Segments, first: int, npc: str | None, fate: Fate, rest: Fate
    ) -> list[SegmentFate]:
        """``fate`` for the first ``first`` emittable segments, ``rest`` for the others,
        and ``skipped`` for those that could not be emitted."""
        fates: list[SegmentFate] = []
        index = 0
        for segment in items.ordered:
            if index < len(items.segments) and items.segments[index] is segment:
                tokens, this = items.counts[index], fate if index < first else rest
                index += 1
            else:
                tokens, this = _declared_count(segment, self.tokenizer), "skipped"
            fates.append(SegmentFate(segment.id, segment.scope, npc, segment.label, tokens, this))
        return fates

    def _segment_lints(self) -> list[Lint]:
        budget = self.request.token_budget
        found: list[Lint] = []
        for layer in self.segment_layers.values():
            for segment, count in zip(layer.items.segments, layer.items.counts, strict=True):
                if count > budget:
                    found.append(
                        lint_rules.segment_over_budget(layer.scope, segment, count, budget)
                    )
        for state in self.npc_layer.npcs:
            for segment, count in zip(state.items.segments, state.items.counts, strict=True):
                if segment.tier > state.npc.requested_tier:
                    break
                if count > budget:
                    found.append(lint_rules.segment_over_budget("npc", segment, count, budget))
        return found

    def _status(self, scope: str) -> LayerStatus:
        if scope == "entry_start" and not self.request.first_turn:
            return "skipped"
        if scope == "npc":
            if not self.npcs_emitted_initially:
                return "empty"
            if self.npc_layer.empty():
                return "dropped"
            changed = any(state.lowered or state.dropped for state in self.npc_layer.npcs)
            return "trimmed" if changed else "included"
        if scope in self.text_layers:
            text = self.text_layers[scope]
            if not text.original:
                return "empty"
            if text.text == text.original:
                return "included"
            return "trimmed" if text.text else "dropped"
        layer = self.segment_layers[scope]
        if not layer.items.segments:
            return "empty"
        if layer.kept == len(layer.items.segments):
            return "included"
        return "trimmed" if layer.kept else "dropped"


def _state_text(request: AssemblyRequest, scope: str) -> str:
    try:
        return render_state(request.state.get(scope))
    except (TypeError, ValueError) as error:
        raise ValueError(f"state[{scope!r}] cannot be rendered as JSON: {error}") from error


def _declared_count(segment: Segment, tokenizer: Tokenizer) -> int:
    return tokenizer.count(segment.content) if segment.token_count is None else segment.token_count


def _npc_status(state: _NpcState) -> NpcStatus:
    if state.dropped:
        return "dropped"
    return "lowered" if state.lowered else "included"
