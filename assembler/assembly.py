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
import operator
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass

from assembler import explain, lore
from assembler import lint as lint_rules
from assembler.findings import Lint
from assembler.layers import (
    HistoryLayer,
    Layer,
    LoreLayer,
    NpcLayer,
    NpcState,
    SegmentLayer,
    Segments,
    TextLayer,
    declared_count,
    priced,
)
from assembler.render import (
    BLOCK_SEPARATOR,
    block_close,
    block_open,
    blocks_join_on_token_boundaries,
    render_state,
)
from assembler.request import (
    DYNAMIC_SCOPES,
    HISTORY_SCOPE,
    LORE_SCOPE,
    PROTECTED_SCOPES,
    SCOPES,
    AssemblyRequest,
)
from assembler.result import (
    AssemblyResult,
    Block,
    Change,
    Fate,
    HistoryReport,
    LayerReport,
    LayerStatus,
    LoreReport,
    LoreStatus,
    Meta,
    NpcReport,
    NpcStatus,
    Outcome,
    OutcomeReason,
    OverBudgetError,
    SegmentFate,
    StepAction,
    TruncationStep,
)
from assembler.tokens import Tokenizer

# The default policy trims dynamic layers and then the history in this order, first to
# their floors (the history never below its newest exchange), and at the very end below
# them.
TRIM_ORDER: tuple[str, ...] = ("input", "rng", "player", "game_state", "history")
# The policy's first phase: the dynamic layers trimmed to their floors, then lore entries
# left out whole (the last of the block, the lowest priority, first), then the history
# trimmed to its floor.
FIRST_PHASE: tuple[str, ...] = ("input", "rng", "player", "game_state", LORE_SCOPE, "history")
# Segment layers that lose whole segments (each layer's last segment first), in order.
DROP_ORDER: tuple[str, ...] = ("entry_start", "entry", "world")
# How many tokens a join may cost less at one place than at another: a put-back whose own
# tokens exceed the room by more than twice this cannot fit, and is not even tried.
_JOIN_SLACK = 1


def assemble(request: AssemblyRequest, tokenizer: Tokenizer) -> AssemblyResult:
    """Assemble the prompt for ``request`` within its budgets.

    First the NPC block is fitted to ``npc_budget``: while it is over, the lowest-priority
    NPC that still emits something above tier 0 moves down to the next lower tier that has
    segments (or to 0), so every ``tier_lowered`` step changes what is emitted; once none
    can go lower, the lowest-priority NPC is dropped (``npc_dropped``), even when it is the
    only one. An NPC with no segments at its tier emits nothing, not even its heading.

    With ``request.lore_book``, the lore entries the turn activates (see
    :mod:`assembler.lore`) fill the ``lore`` block within its own budget
    (``request.lore``): constant entries first, then those matched in the turn's text,
    then those matched in other entries' content, each by priority, then id; an entry that
    does not fit is left out and the next tried. ``meta.lore`` reports every entry
    triggered.

    Then the whole prompt is fitted to ``token_budget``, stopping as soon as it fits:
    trim ``input``, ``rng``, ``player``, ``game_state`` towards their floors, leave out
    lore entries (lowest priority first), trim ``history`` towards its floor
    (the history gives way oldest messages first, never below its newest user message and
    what follows it, before the last phase); lower NPC
    tiers as for the NPC budget, then drop NPCs (lowest priority first), then
    ``entry_start``, ``entry`` and ``world`` segments (last first); trim the dynamic layers
    below their floors, to nothing. Each step removes only what is needed. ``core`` and
    ``ruleset`` are never touched: if they alone exceed the budget, the result holds only
    them and has ``meta.over_budget`` set, or, with ``request.strict``,
    :class:`OverBudgetError` is raised.

    Once a block fits (the NPC block, then the prompt), the steps taken are undone, last
    first (the most important content first), each only if it still fits: one oversized
    segment leaves out only itself, and trimmed layers get back the room left. Every
    put-back is a ``restored`` step, so ``meta.truncated`` tells what was lost in the end.

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
    try:
        tokens_estimated = assembly.total()
        assembly.fit_npc_budget()
        assembly.npc_fit = [(state.tier, state.dropped) for state in assembly.npc_layer.npcs]
        blocks, prompt, tokens = assembly.fit_token_budget()
        over_budget = tokens > request.token_budget
        if over_budget and request.strict:
            raise OverBudgetError(
                {scope: assembly.layer(scope).tokens() for scope in PROTECTED_SCOPES},
                tokens,
                request.token_budget,
            )
        return assembly.result(blocks, prompt, tokens, tokens_estimated, over_budget)
    finally:
        assembly.release()


class _Assembly:
    """The layers of one request and the budget policy applied to them."""

    def __init__(self, request: AssemblyRequest, tokenizer: Tokenizer) -> None:
        self.request = request
        self.tokenizer = tokenizer
        block_format = request.policy.block_format

        segment_layers = {
            "core": priced((request.core,), tokenizer),
            "ruleset": priced(tuple(ruleset.segments for ruleset in request.rulesets), tokenizer),
            "world": priced((request.world,), tokenizer),
            "entry": priced((request.entry,), tokenizer),
            "entry_start": priced((request.entry_start,), tokenizer, emit=request.first_turn),
        }
        self._total: int | None = None
        changed = self._layer_changed
        self.segment_layers = {
            scope: SegmentLayer(scope, items, block_format, tokenizer, changed)
            for scope, items in segment_layers.items()
        }
        self.npc_layer = NpcLayer(
            [NpcState(npc, tokenizer) for npc in request.npcs], block_format, tokenizer, changed
        )
        self.npcs_emitted_initially = not self.npc_layer.empty()
        # Each NPC's tier, and whether it was dropped, once the NPC budget was fitted.
        self.npc_fit: list[tuple[int, bool]] = []
        self.history_layer = HistoryLayer(request.history, block_format, tokenizer, changed)
        self.text_layers: dict[str, TextLayer] = {
            scope: TextLayer(scope, _state_text(request, scope), block_format, tokenizer, changed)
            for scope in DYNAMIC_SCOPES
        }
        self.lore_budget = request.lore.budget_for(request.token_budget)
        self.lore_activations = self._activate_lore()
        # The lore block's entries, by their index in the book, and where each is in it.
        self.lore_indices: list[int] = []
        self.lore_positions: dict[int, int] = {}
        # Why each entry activated but not emitted was left out, by its index in the book:
        # in words, and as the outcome's reason (None: it has no text, which is no loss).
        self.lore_left_out: dict[int, tuple[str, OutcomeReason | None]] = {}
        self.lore_put_back = False
        # How the lore budget was filled, remembered for the same activations (see
        # _LoreFill); None without lore.
        self.lore_fill: _LoreFill | None = None
        self.lore_layer = self._lore_layer()
        self.layers: list[Layer] = [
            *self.segment_layers.values(),
            self.npc_layer,
            self.lore_layer,
            self.history_layer,
            *self.text_layers.values(),
        ]
        self.by_scope = {layer.scope: layer for layer in self.layers}
        if blocks_join_on_token_boundaries(block_format):
            self._price_whole_texts()
        self.text_layers[HISTORY_SCOPE] = self.history_layer
        self.floors = {
            scope: request.policy.floor(scope, request.token_budget) for scope in DYNAMIC_SCOPES
        }
        self.steps: list[TruncationStep] = []
        # The budget policy's rules, in order (see _shrink_prompt), and the first of them
        # that may still find something to remove.
        self.rules: tuple[Callable[[int], bool], ...] = (
            self._trim_to_floor,
            self._lower_or_drop_npc,
            self._drop_last_segment,
            self._trim_below_floor,
        )
        self.first_rule = 0
        self.previous_step = ""
        # How to undo each step of the phase under way, in the order taken.
        self.put_backs: list[Callable[[Callable[[], bool], bool], None]] = []
        # What the last step did, in plain words, for the next step's explanation.
        self.previous_done = ""
        self.npcs_put_back = False

    def layer(self, scope: str) -> Layer:
        return self.by_scope[scope]

    def release(self) -> None:
        """Drop what refers back to this assembly (each layer's ``on_change``, the budget
        rules, the put-backs: methods of it), once its result is made: the assembly and all
        it holds then go by reference counting as soon as the request is answered, rather
        than wait for the cyclic garbage collector, which would walk every object of the
        turn first (on a lore turn, 0.14 ms of each request)."""
        for layer in self.layers:
            layer.on_change = _unchanged
        self.rules = ()
        self.put_backs = []

    def _layer_changed(self, layer: Layer, before: int | None) -> None:
        if self._total is None:
            return
        if before is None or layer.close is None:
            # The joins to the neighbouring blocks may have moved with the layer's text.
            self._total = None
            return
        after = layer.tokens()
        if before and after:
            # Still emitted and framed by the same closing line: the joins to the
            # neighbouring blocks are unchanged, only the layer's own price moved.
            self._total += after - before
        elif before or after:
            # Left out whole or back in: its joins to the blocks around it go or come, and
            # those blocks join each other instead.
            self._total += after - before + self._joins_around(layer) * (1 if after else -1)

    def _joins_around(self, layer: Layer) -> int:
        """What emitting ``layer`` adds in joins between the blocks emitted around it."""
        index = self.layers.index(layer)
        previous = next((x for x in reversed(self.layers[:index]) if not x.empty()), None)
        following = next((x for x in self.layers[index + 1 :] if not x.empty()), None)
        join_cost = self.tokenizer.join_cost
        cost = 0
        if previous is not None:
            cost += join_cost(previous.tail(), BLOCK_SEPARATOR, layer.open)
        if following is not None:
            cost += join_cost(layer.tail(), BLOCK_SEPARATOR, following.open)
        if previous is not None and following is not None:
            cost -= join_cost(previous.tail(), BLOCK_SEPARATOR, following.open)
        return cost

    def total(self) -> int:
        """Estimated tokens of the prompt as it stands."""
        if self._total is None:
            self._total = self._measure()
        return self._total

    def _measure(self) -> int:
        total = 0
        previous: Layer | None = None
        for layer in self.layers:
            if layer.empty():
                continue
            total += layer.tokens()
            if previous is not None:
                total += self.tokenizer.join_cost(previous.tail(), BLOCK_SEPARATOR, layer.open)
            previous = layer
        return total

    def _price_whole_texts(self) -> None:
        """Price every dynamic text by its whole block when the prompt fits its budget with
        those blocks counted exactly.

        Then no text will be cut (barring a stale cached count), and the exact count of
        the prompt finds each block counted: one encode of a new text, not two (4 KB of
        text take half a millisecond to encode). The blocks are counted only when the
        prompt would fit with each at a guessed count
        (:meth:`~assembler.layers.TextLayer.block_size_guess`): a wrong guess costs an
        encode, never a different prompt. The total is kept as :meth:`_measure` would sum
        it, with the blocks' exact counts.
        """
        budget = self.request.token_budget
        total = guesses = 0
        previous: Layer | None = None
        for layer in self.layers:
            if layer.empty():
                continue
            if layer.scope in DYNAMIC_SCOPES:
                guesses += self.text_layers[layer.scope].block_size_guess()
            else:
                total += layer.tokens()
            if previous is not None:
                total += self.tokenizer.join_cost(previous.tail(), BLOCK_SEPARATOR, layer.open)
            if total + guesses > budget:
                return
            previous = layer
        texts = list(self.text_layers.values())
        for text in texts:
            text.price_whole_block()
        exact = sum(text.tokens() for text in texts)
        if total + exact > budget:
            for text in texts:
                text.price_by_parts()  # some text will be cut: it is counted on its own
            return
        self._total = total + exact

    def blocks(self) -> tuple[Block, ...]:
        """The emitted layers' blocks, in order; the prompt is them joined."""
        return tuple(
            Block(layer.scope, layer.render()) for layer in self.layers if not layer.empty()
        )

    # Lore

    def _activate_lore(self) -> list[lore.Activated]:
        request = self.request
        book = request.lore_book
        if book is None or not request.lore.enabled or not book.entries:
            return []
        texts = lore.scanned_texts(
            input=self.text_layers["input"].original,
            game_state=self.text_layers["game_state"].original,
            player=self.text_layers["player"].original,
            history=() if request.history is None else request.history.messages,
            scan_depth=request.lore.scan_depth,
        )
        return lore.activated(book, texts, request.lore.recursion, constants=True, every=False)

    def _lore_layer(self) -> LoreLayer:
        """The lore block, holding the entries the lore budget lets in (see
        :meth:`_fill_lore_budget`): remembered for the same activations, which consecutive
        turns of a scene mostly share."""
        request, activations = self.request, self.lore_activations
        book, tokenizer = request.lore_book, self.tokenizer
        block_format, changed = request.policy.block_format, self._layer_changed
        if book is None or not activations:
            return LoreLayer([], [], block_format, tokenizer, changed)
        key = (
            id(tokenizer),
            block_format,
            self.lore_budget,
            tuple(map(_first, activations)),
            tuple(map(_kept, activations)),
        )
        fills = book.fills
        fill = fills.get(key)
        if fill is not None and fill.tokenizer is tokenizer:
            self.lore_indices, self.lore_positions = fill.indices, fill.positions
            layer = LoreLayer(fill.entries, fill.counts, block_format, tokenizer, changed)
            layer.restore(fill.emitted, fill.body_tokens)
            self.lore_left_out = dict(fill.left_out)
            self.lore_fill = fill
            return layer
        indices = self.lore_indices = book.emittable(activations)
        self.lore_positions = {index: position for position, index in enumerate(indices)}
        entries = [book.entries[index] for index in indices]
        counts = book.counts(indices, tokenizer)
        layer = self.lore_layer = LoreLayer(entries, counts, block_format, tokenizer, changed)
        self._fill_lore_budget()
        fill = _LoreFill(
            tokenizer,
            self.lore_indices,
            self.lore_positions,
            entries,
            counts,
            tuple(layer.emitted),
            layer.body_tokens(),
            dict(self.lore_left_out),
        )
        if len(fills) >= _LORE_FILLS:
            fills.clear()
        fills[key] = self.lore_fill = fill
        return layer

    def _fill_lore_budget(self) -> None:
        """Let activated entries into the lore block, in the order activation listed them,
        each only if the block still fits the lore budget; then check the block exactly,
        leaving out the last let in while it is over."""
        layer, budget = self.lore_layer, self.lore_budget
        positions, counts, left_out = self.lore_positions, layer.counts, self.lore_left_out
        # What an empty block takes besides its entries' text (the joins aside).
        frame = layer.open_tokens + layer.close_tokens
        let_in: list[int] = []
        before = layer.tokens()
        for index, _trigger, _by, _matches, kept in self.lore_activations:
            if kept != index:
                continue  # grouped out
            position = positions.get(index)
            if position is None:
                left_out[index] = (lore.NO_TEXT, None)
                continue
            room = budget - (before or frame)
            needs = counts[position]
            if needs <= room + 2 * _JOIN_SLACK:
                layer.add(position)
                after = layer.tokens()
                if after <= budget:
                    let_in.append(position)
                    before = after
                    continue
                needs = after - before
                layer.drop(position)
            left_out[index] = (
                (lore.lore_budget_full(budget, room, needs), "over_lore_budget")
                if before
                else (lore.larger_than_lore_budget(budget), "larger_than_lore_budget")
            )
        self._check_lore_block(let_in)

    def _check_lore_block(self, let_in: list[int]) -> None:
        """Leave out the last of ``let_in`` while the lore block is over its budget,
        counted exactly."""
        layer = self.lore_layer
        while let_in and self.tokenizer.count_block(layer.render()) > self.lore_budget:
            position = let_in.pop()
            layer.drop(position)
            self.lore_left_out[self.lore_indices[position]] = (
                lore.lore_budget_full(self.lore_budget),
                "over_lore_budget",
            )

    def _lore_block_fits(self) -> bool:
        return self.lore_layer.tokens() <= self.lore_budget

    # NPC budget

    def fit_npc_budget(self) -> None:
        """Lower tiers, then drop NPCs, until the NPC block fits ``npc_budget`` exactly.

        Steps are priced from the parts; once the block fits, what was removed is put back
        where it still fits (:meth:`_put_back`). One exact count then checks the result, and
        should the parts have understated it (a stale cached count, say), the policy goes on
        one step at a time, each checked exactly.
        """
        layer = self.npc_layer
        budget = self.request.npc_budget
        # The outcome depends on the NPCs and the budget alone: the same scene, turn after
        # turn, is fitted once and then replayed.
        key, held = self._npc_fit_key()
        found = _npc_fits.get(key)
        if found is not None and all(map(operator.is_, found[0], held)):
            for state, (tier, dropped) in zip(layer.npcs, found[1], strict=True):
                state.set(tier, dropped=dropped)
            layer.changed()
            self.steps += map(_copy_step, found[2])
            return
        first_step = len(self.steps)
        self.put_backs = []
        while layer.tokens() > budget and self._shrink_npcs(layer.tokens() - budget):
            pass
        if layer.tokens() <= budget:
            self._put_back(self._npc_block_fits, npc=True)
        self._check_npc_block()
        if len(_npc_fits) >= _NPC_FITS:
            _npc_fits.clear()
        _npc_fits[key] = (
            held,
            tuple((state.tier, state.dropped) for state in layer.npcs),
            tuple(map(_copy_step, self.steps[first_step:])),
        )

    def _npc_fit_key(self) -> tuple[tuple[object, ...], tuple[object, ...]]:
        """What the NPC budget's outcome depends on, and the objects named in it by id."""
        layer = self.npc_layer
        key = (
            self.request.npc_budget,
            layer.open,
            layer.close,
            id(self.tokenizer),
            *((id(s.items), s.npc.name, s.npc.slug, s.npc.requested_tier) for s in layer.npcs),
        )
        return key, (self.tokenizer, *(state.items for state in layer.npcs))

    def _check_npc_block(self) -> None:
        """Shrink the NPC block, one exactly checked step at a time, until it fits."""
        layer = self.npc_layer
        budget = self.request.npc_budget
        while not layer.empty():
            exact = self.tokenizer.count_block(layer.render())
            if exact <= budget or not self._shrink_npcs(exact - budget):
                return

    def _npc_block_fits(self) -> bool:
        return self.npc_layer.tokens() <= self.request.npc_budget

    def _shrink_npcs(self, over: int) -> bool:
        """Apply one NPC-budget step; False when there is nothing left to remove."""
        layer = self.npc_layer
        budget = self.request.npc_budget
        before = layer.tokens()
        state = _npc_to_lower(layer.npcs)
        if state is not None:
            from_tier = state.tier
            layer.lower(state)
            self._record(
                "npc",
                "tier_lowered",
                before,
                layer.tokens(),
                f"NPC '{state.npc.name}' lowered from tier {from_tier} to tier "
                f"{state.tier}: NPC block {over} tokens over its budget of {budget}",
                explain.lower_tier(
                    state.npc.name,
                    state.tier,
                    from_tier,
                    explain.npc_block_over(over),
                    npc_budget=budget,
                ),
                npc=state.npc.slug,
            )
            self.put_backs.append(functools.partial(self._raise_tier, state, from_tier))
            return True
        emitting = layer.emitting()
        if not emitting:
            return False
        state = emitting[-1]
        tokens = state.tokens
        layer.drop(state)
        if len(emitting) == 1:
            why = f"alone at tier {state.tier} it takes {before} tokens, over the NPC budget"
            why += f" of {budget}"
            plain = f"even alone at tier {state.tier} it is larger than that budget"
        else:
            why = f"NPC block {over} tokens over its budget of {budget} and no NPC can go lower"
            plain = explain.npc_block_over(over) + " and no NPC could be shown at a lower tier"
        self._record(
            "npc",
            "npc_dropped",
            before,
            layer.tokens(),
            f"NPC '{state.npc.name}' dropped: {why}",
            explain.npc_left_out(state.npc.name, tokens, budget, plain),
            npc=state.npc.slug,
        )
        self.put_backs.append(functools.partial(self._restore_npc, state))
        return True

    # Token budget

    def fit_token_budget(self) -> tuple[tuple[Block, ...], str, int]:
        """Apply the budget policy; return the blocks, the prompt and its exact token count.

        As for the NPC block: steps priced from the parts, then what now fits is put back,
        then an exact count, then, if needed, single steps each checked exactly.
        """
        budget = self.request.token_budget
        self.previous_step = self.previous_done = ""
        self.put_backs = []
        while (over := self.total() - budget) > 0 and self._shrink_prompt(over):
            pass
        if over <= 0:
            self.npcs_put_back = self.lore_put_back = False
            self._put_back(self._prompt_fits, npc=False)
            if self.npcs_put_back:
                self._check_npc_block()
            if self.lore_put_back:
                self._check_lore_block(list(self.lore_layer.emitted))
        while True:
            blocks = self.blocks()
            prompt = BLOCK_SEPARATOR.join(block.text for block in blocks)
            tokens = self._exact_count(blocks, prompt)
            if tokens <= budget or not self._shrink_prompt(tokens - budget):
                return blocks, prompt, tokens

    def _prompt_fits(self) -> bool:
        return self.total() <= self.request.token_budget and self._npc_block_fits()

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
        1. trim a dynamic layer still above its floor (in FIRST_PHASE) towards the floor,
           or leave out the last lore entry (when FIRST_PHASE comes to lore);
        2. lower the lowest-priority NPC that can go a tier lower; once none can, drop the
           lowest-priority NPC; then drop the last segment of a DROP_ORDER layer;
        3. trim a dynamic layer that still has text (in TRIM_ORDER) towards nothing.
        For the same reason a rule that finds nothing to do finds nothing again until
        something is put back, so the search starts at the last rule that applied.
        """
        rules = self.rules
        while self.first_rule < len(rules):
            if rules[self.first_rule](over):
                return True
            self.first_rule += 1
        return False

    def _trim_to_floor(self, over: int) -> bool:
        for scope in FIRST_PHASE:
            if scope == LORE_SCOPE:
                if not self.lore_layer.empty():
                    self._drop_lore_entry(self.lore_layer.last_emitted(), over)
                    return True
            elif self.text_layers[scope].count > self.floor(scope):
                self._trim(scope, self.floor(scope), over, below_floor=False)
                return True
        return False

    def _lower_or_drop_npc(self, over: int) -> bool:
        state = _npc_to_lower(self.npc_layer.npcs)
        if state is not None:
            self._lower_npc(state, over)
            return True
        for state in reversed(self.npc_layer.npcs):
            if state.kept:
                self._drop_npc(state, over)
                return True
        return False

    def _drop_last_segment(self, over: int) -> bool:
        for scope in DROP_ORDER:
            layer = self.segment_layers[scope]
            if layer.kept:
                self._drop_segment(layer, layer.last_kept(), over)
                return True
        return False

    def _trim_below_floor(self, over: int) -> bool:
        for scope in TRIM_ORDER:
            if not self.text_layers[scope].empty():
                self._trim(scope, 0, over, below_floor=True)
                return True
        return False

    def floor(self, scope: str) -> int:
        """The tokens layer ``scope`` keeps in the first phase: the policy's floor, and for
        the history at least its newest exchange (worked out only when it comes to that)."""
        if scope not in self.floors:
            floor = self.request.policy.floor(scope, self.request.token_budget)
            self.floors[scope] = max(floor, self.history_layer.exchange_tokens())
        return self.floors[scope]

    def _trim(self, scope: str, floor: int, over: int, *, below_floor: bool) -> None:
        """Cut layer ``scope`` by ``over`` tokens of prompt, not below ``floor`` tokens."""
        layer = self.text_layers[scope]
        target = self.total() - over
        before, had = layer.tokens(), layer.count
        self.put_backs.append(functools.partial(self._lengthen, scope, layer.allowed))
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
            explain.shortened(
                scope, had, layer.count, self._prompt_over(over), below_floor=below_floor
            ),
        )
        self.previous_step = f"trimming {scope}"
        self.previous_done = explain.was_shortened(scope, layer.count)

    def _lower_npc(self, state: NpcState, over: int) -> None:
        before = self.npc_layer.tokens()
        from_tier = state.tier
        self.npc_layer.lower(state)
        self._record(
            "npc",
            "tier_lowered",
            before,
            self.npc_layer.tokens(),
            f"NPC '{state.npc.name}' lowered from tier {from_tier} to tier {state.tier}: "
            f"prompt {over} tokens over budget{self._after()}",
            explain.lower_tier(state.npc.name, state.tier, from_tier, self._prompt_over(over)),
            npc=state.npc.slug,
        )
        self.put_backs.append(functools.partial(self._raise_tier, state, from_tier))
        self.previous_step = f"lowering NPC '{state.npc.name}'"
        self.previous_done = explain.was_lowered(state.npc.name, state.tier)

    def _drop_npc(self, state: NpcState, over: int) -> None:
        before, tokens = self.npc_layer.tokens(), state.tokens
        self.npc_layer.drop(state)
        name = explain.npc_name(state.npc.name)
        self._record(
            "npc",
            "npc_dropped",
            before,
            self.npc_layer.tokens(),
            f"NPC '{state.npc.name}' dropped: prompt {over} tokens over budget{self._after()}",
            explain.left_out(name, tokens, self._prompt_over(over)),
            npc=state.npc.slug,
        )
        self.put_backs.append(functools.partial(self._restore_npc, state))
        self.previous_step = f"dropping NPC '{state.npc.name}'"
        self.previous_done = explain.was_left_out(name)

    def _drop_lore_entry(self, index: int, over: int) -> None:
        layer = self.lore_layer
        before = layer.tokens()
        entry = layer.drop(index)
        why = self._prompt_over(over)
        self._record(
            LORE_SCOPE,
            "dropped",
            before,
            layer.tokens(),
            f"lore entry #{entry.id} '{entry.label}' dropped: prompt {over} tokens over budget"
            f"{self._after()}",
            explain.left_out(entry.name, layer.counts[index], why),
        )
        larger = layer.counts[index] > self.request.token_budget
        self.lore_left_out[self.lore_indices[index]] = (
            f"left out: {why}",
            "larger_than_budget" if larger else "over_budget",
        )
        self.put_backs.append(functools.partial(self._restore_lore_entry, index))
        self.previous_step = f"dropping lore entry #{entry.id}"
        self.previous_done = explain.was_left_out(explain.layer_in_sentence(entry.name))

    def _restore_lore_entry(self, index: int, fits: Callable[[], bool], npc: bool) -> None:
        layer = self.lore_layer
        if layer.counts[index] > self._room(npc) + 2 * _JOIN_SLACK:
            return
        before = layer.tokens()
        layer.add(index)
        if not fits() or not self._lore_block_fits():
            layer.drop(index)
            return
        entry = layer.entries[index]
        del self.lore_left_out[self.lore_indices[index]]
        self.lore_put_back = True
        self._record(
            LORE_SCOPE,
            "restored",
            before,
            layer.tokens(),
            f"lore entry #{entry.id} '{entry.label}' restored: "
            f"it fits the {self._budget_words(npc)} again",
            explain.put_back(entry.name, layer.counts[index], self.request.token_budget),
        )

    def _drop_segment(self, layer: SegmentLayer, index: int, over: int) -> None:
        before = layer.tokens()
        segment = layer.drop(index)
        names = layer.items.names(layer.scope, index)
        self._record(
            layer.scope,
            "dropped",
            before,
            layer.tokens(),
            f"{names.terse} '{segment.label}' dropped: prompt {over} tokens over budget"
            f"{self._after()}",
            explain.left_out(names.plain, layer.items.counts[index], self._prompt_over(over)),
            segment_id=segment.id,
        )
        self.put_backs.append(functools.partial(self._restore_segment, layer, index))
        self.previous_step = f"dropping {names.terse}"
        self.previous_done = names.left_out

    def _after(self) -> str:
        return f" after {self.previous_step}" if self.previous_step else ""

    def _prompt_over(self, over: int) -> str:
        return explain.prompt_over(over, self.request.token_budget, self.previous_done)

    def _budget_words(self, npc: bool) -> str:
        if npc:
            return f"NPC budget of {self.request.npc_budget}"
        return f"budget of {self.request.token_budget}"

    # Putting back

    def _put_back(self, fits: Callable[[], bool], *, npc: bool) -> None:
        """Undo the steps taken, last first, each only if the result still ``fits``.

        The steps were taken least important first, so this puts back the most important
        first. Each put-back that holds is recorded as a ``restored`` step; one that would
        not fit is undone at once, leaving everything as it was. Nothing cut could then have
        stayed: whatever is still left out did not fit when its turn came, and the prompt
        has only grown since.
        """
        attempts, self.put_backs = self.put_backs, []
        for attempt in reversed(attempts):
            attempt(fits, npc)
        self.first_rule = 0

    def _room(self, npc: bool, *, for_npcs: bool = False) -> int:
        """Tokens left under the budget being fitted; for NPCs, under the NPC budget too."""
        npc_room = self.request.npc_budget - self.npc_layer.tokens()
        if npc:
            return npc_room
        room = self.request.token_budget - self.total()
        return min(npc_room, room) if for_npcs else room

    def _restore_segment(
        self, layer: SegmentLayer, index: int, fits: Callable[[], bool], npc: bool
    ) -> None:
        if layer.items.counts[index] > self._room(npc) + 2 * _JOIN_SLACK:
            return
        before = layer.tokens()
        segment = layer.restore(index)
        if not fits():
            layer.drop(index)
            return
        names = layer.items.names(layer.scope, index)
        self._record(
            layer.scope,
            "restored",
            before,
            layer.tokens(),
            f"{names.terse} '{segment.label}' restored: "
            f"it fits the {self._budget_words(npc)} again",
            explain.put_back(names.plain, layer.items.counts[index], self.request.token_budget),
            segment_id=segment.id,
        )

    def _restore_npc(self, state: NpcState, fits: Callable[[], bool], npc: bool) -> None:
        if state.priced[state.within_tier] > self._room(npc, for_npcs=True) + 2 * _JOIN_SLACK:
            return
        layer = self.npc_layer
        before = layer.tokens()
        layer.restore(state)
        if not state.kept:
            return
        if not fits():
            layer.drop(state)
            return
        self.npcs_put_back = True
        self._record(
            "npc",
            "restored",
            before,
            layer.tokens(),
            f"NPC '{state.npc.name}' restored at tier {state.tier}: "
            f"it fits the {self._budget_words(npc)} again",
            explain.put_back(
                f"{explain.npc_name(state.npc.name)} at tier {state.tier}",
                state.tokens,
                self.request.npc_budget if npc else self.request.token_budget,
                npc=npc,
            ),
            npc=state.npc.slug,
        )

    def _raise_tier(self, state: NpcState, tier: int, fits: Callable[[], bool], npc: bool) -> None:
        if state.dropped:
            return
        more = state.priced[bisect_right(state.tiers, tier)] - state.tokens
        if more > self._room(npc, for_npcs=True) + 2 * _JOIN_SLACK:
            return
        layer = self.npc_layer
        before, from_tier = layer.tokens(), state.tier
        layer.set_tier(state, tier)
        if not fits():
            layer.set_tier(state, from_tier)
            return
        self.npcs_put_back = True
        self._record(
            "npc",
            "restored",
            before,
            layer.tokens(),
            f"NPC '{state.npc.name}' raised from tier {from_tier} to tier {tier}: "
            f"it fits the {self._budget_words(npc)} again",
            explain.tier_raised(
                state.npc.name,
                tier,
                self.request.npc_budget if npc else self.request.token_budget,
                npc=npc,
            ),
            npc=state.npc.slug,
        )

    def _lengthen(self, scope: str, cap: int | None, fits: Callable[[], bool], npc: bool) -> None:
        """Give layer ``scope`` back as much of its text as fits, up to allowance ``cap``.

        First a jump to the room priced with the text as it is; then, since a longer cut
        may cost no more (BPE merges its new end with the old, or it joins what follows for
        a token less) and cuts are not monotonic in the allowance, the next longer cut
        (:meth:`TextLayer.next_longer`) while it fits. So the longer cut nearest to what is
        kept does not fit. The cuts share their work, so this costs about one encode per
        distinct text tried, and none when nothing longer can be had.
        """
        layer = self.text_layers[scope]
        allowed_before, count_before, before = layer.allowed, layer.count, layer.tokens()
        if allowed_before is None:
            return
        # The allowance that gave the text as it is; a jump that fits keeps it only if it
        # keeps no less text (a cut is not monotonic in its allowance).
        best, text_before = allowed_before, layer.text
        allowed = layer.count + self.request.token_budget - self.total()
        if cap is not None:
            allowed = min(allowed, cap)
        while allowed > best:
            layer.cut(allowed)
            if fits():
                if len(layer.text) >= len(text_before):
                    best = allowed
                break
            over = self.total() - self.request.token_budget
            allowed = min(allowed - 1, layer.count - over)
        layer.cut(best)
        while (longer := layer.next_longer(cap)) is not None:
            layer.cut(longer)
            if not fits():
                break
            best = longer
        layer.cut(best)
        if layer.text == text_before:
            layer.cut(allowed_before)
            return
        self._record(
            scope,
            "restored",
            before,
            layer.tokens(),
            f"{scope} lengthened from {count_before} to {layer.count} tokens: "
            f"it fits the {self._budget_words(npc)}",
            explain.lengthened(
                scope, count_before, layer.count, layer.original_count, self.request.token_budget
            ),
        )

    def _record(
        self,
        scope: str,
        action: StepAction,
        before: int,
        after: int,
        reason: str,
        explanation: str,
        *,
        segment_id: int | None = None,
        npc: str | None = None,
    ) -> None:
        self.steps.append(
            TruncationStep(scope, action, before, after, reason, segment_id, npc, explanation)
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
            ids[scope] = layer.kept_ids()
        for state in self.npc_layer.npcs:
            ids["npc"] += state.items.ids[: state.kept]
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
            content_hash=_content_hash(blocks, prompt),
            history=self._history_report(),
            lore=self._lore_reports(),
            outcome=self._outcome(),
        )
        return AssemblyResult(prompt=prompt, meta=meta, blocks=blocks, explain=self._fates)

    def _outcome(self) -> Outcome:
        """What the prompt lost in the end, from the layers as they are: the put-backs are
        done, so whatever is still out did not fit when its turn came.

        The reason is the budget that had the last word: for an NPC, the NPC budget when
        the token budget took nothing more from it. "Larger than" a budget when the thing
        alone (an NPC at the tier it was left out at, or the tier it did not get) is.
        """
        if not self.steps and not self.lore_left_out:
            return _NOTHING_LOST
        budget = self.request.token_budget
        left_out: list[Change] = []
        shortened: list[Change] = []
        lowered: list[Change] = []
        for layer in self.segment_layers.values():
            if layer.kept == len(layer.items.segments):
                continue
            for index, kept in enumerate(layer.included):
                if kept:
                    continue
                segment, tokens = layer.items.segments[index], layer.items.counts[index]
                name = layer.items.names(layer.scope, index).plain
                reason: OutcomeReason = "larger_than_budget" if tokens > budget else "over_budget"
                why = explain.outcome_why(reason, budget)
                left_out.append(
                    Change(
                        "left_out",
                        f"segment:{segment.id}",
                        layer.scope,
                        name,
                        tokens,
                        0,
                        reason,
                        explain.left_out(name, tokens, why),
                        segment_id=segment.id,
                    )
                )
        for state, fitted in zip(self.npc_layer.npcs, self.npc_fit, strict=True):
            if state.dropped or state.lowered:
                change = self._npc_change(state, fitted)
                (left_out if change.kind == "left_out" else lowered).append(change)
        left_out += self._lore_changes()
        for scope in SCOPES:
            text = self.text_layers.get(scope)
            if text is None or not text.original or text.text == text.original:
                continue
            had, kept_tokens = text.original_count, text.count if text.text else 0
            reason = "larger_than_budget" if had > budget else "over_budget"
            what = "it" if reason == "larger_than_budget" else "the rest of it"
            why = explain.outcome_why(reason, budget, what if kept_tokens else "it")
            name = explain.text_name(scope)
            (shortened if kept_tokens else left_out).append(
                Change(
                    "shortened" if kept_tokens else "left_out",
                    f"layer:{scope}",
                    scope,
                    name,
                    had,
                    kept_tokens,
                    reason,
                    explain.shortened(scope, had, kept_tokens, why),
                )
            )
        return Outcome(tuple(left_out), tuple(shortened), tuple(lowered))

    def _npc_change(self, state: NpcState, fitted: tuple[int, bool]) -> Change:
        """How NPC ``state`` ended up left out or lowered; ``fitted``: its tier, and whether
        it was dropped, once the NPC budget was fitted."""
        npc = state.npc
        fitted_tier, fitted_dropped = fitted
        # Steps the token budget took were put back where they fitted: the NPC budget had
        # the last word when nothing more was taken from this NPC after it.
        npc_budget = fitted_dropped or (not state.dropped and state.tier == fitted_tier)
        limit = self.request.npc_budget if npc_budget else self.request.token_budget
        asked = state.priced[bisect_right(state.tiers, npc.requested_tier)]
        reason: OutcomeReason
        if state.dropped:
            # Left out at the lowest tier it could go to: its size there.
            alone = state.priced[state.within_tier]
            if npc_budget:
                reason = "larger_than_npc_budget" if alone > limit else "over_npc_budget"
            else:
                reason = "larger_than_budget" if alone > limit else "over_budget"
            name = explain.npc_name(npc.name)
            return Change(
                "left_out",
                f"npc:{npc.slug}",
                "npc",
                name,
                asked,
                0,
                reason,
                explain.left_out(name, asked, explain.outcome_why(reason, limit)),
                npc=npc.slug,
                tier_before=npc.requested_tier,
            )
        # The next tier up that has segments is the one that did not fit.
        refused = state.tiers[state.within_tier]
        needs = state.priced[bisect_right(state.tiers, refused)]
        if npc_budget:
            reason = "larger_than_npc_budget" if needs > limit else "over_npc_budget"
        else:
            reason = "larger_than_budget" if needs > limit else "over_budget"
        return Change(
            "lowered",
            f"npc:{npc.slug}",
            "npc",
            explain.npc_name(npc.name),
            asked,
            state.tokens,
            reason,
            explain.lowered(
                npc.name,
                (npc.requested_tier, state.tier),
                (asked, state.tokens),
                explain.outcome_why(reason, limit, f"tier {refused}"),
            ),
            npc=npc.slug,
            tier_before=npc.requested_tier,
            tier_after=state.tier,
        )

    def _lore_fill_kept(self) -> _LoreFill | None:
        """The lore budget's fill this assembly replayed or made, while the lore block is
        as that fill left it (the token budget took no lore); else None."""
        if any(step.scope == LORE_SCOPE for step in self.steps):
            return None
        return self.lore_fill

    def _lore_changes(self) -> list[Change]:
        """The lore entries left out in the end, in the block's order (those without text
        are no loss): remembered with the lore budget's fill when the token budget took
        no lore."""
        fill = self._lore_fill_kept()
        if fill is None:
            return self._lore_changes_now()
        if fill.changes is None:
            fill.changes = tuple(self._lore_changes_now())
        return list(fill.changes)

    def _lore_changes_now(self) -> list[Change]:
        layer, changes, left_out = self.lore_layer, [], self.lore_left_out
        # Why, in words, by reason: many entries are left out for the same one.
        whys: dict[OutcomeReason, str] = {}
        for index, entry, tokens in zip(
            self.lore_indices, layer.entries, layer.counts, strict=True
        ):
            found = left_out.get(index)
            if found is None or found[1] is None:
                continue
            reason = found[1]
            why = whys.get(reason)
            if why is None:
                lore_reason = reason in ("larger_than_lore_budget", "over_lore_budget")
                limit = self.lore_budget if lore_reason else self.request.token_budget
                why = whys[reason] = explain.outcome_why(reason, limit)
            name = entry.name
            changes.append(
                Change(
                    "left_out",
                    f"lore:{entry.id}",
                    LORE_SCOPE,
                    name,
                    tokens,
                    0,
                    reason,
                    explain.left_out(name, tokens, why),
                    lore_id=entry.id,
                )
            )
        return changes

    def _history_report(self) -> HistoryReport | None:
        history, fit = self.request.history, self.history_layer.fit
        if history is None or fit is None:
            return None
        return HistoryReport(
            conversation=history.conversation,
            mode=fit.mode,
            messages=list(fit.positions),
            summary_id=history.summary_id if fit.summary_used else None,
            covers_through=fit.covers_through,
            trimmed=None if fit.trimmed is None else fit.trimmed.position,
        )

    def _lore_reports(self) -> list[LoreReport]:
        """Every entry activated, in the order activation listed them, and its fate: what
        does not depend on the triggers is remembered with the lore budget's fill when the
        token budget took no lore."""
        book = self.request.lore_book
        if book is None or not self.lore_activations:
            return []
        fill = self._lore_fill_kept()
        if fill is None:
            fates = self._lore_fates()
        elif fill.fates is None:
            fates = fill.fates = self._lore_fates()
        else:
            fates = fill.fates
        entries, reports = book.entries, []
        for activation, fate in zip(self.lore_activations, fates, strict=True):
            _index, trigger, by, _matches, _kept = activation
            entry_id, title, status, tokens, reason = fate
            by_entry = None if by is None else entries[by]
            if reason is None:
                reason = f"included: {lore.trigger_words(trigger, by_entry)}"
            reports.append(
                LoreReport(
                    entry_id,
                    title,
                    status,
                    trigger,
                    None if by_entry is None else by_entry.id,
                    tokens,
                    reason,
                )
            )
        return reports

    def _lore_fates(self) -> tuple[tuple[int, str, LoreStatus, int, str | None], ...]:
        """Of each entry activated: its id, title, status, tokens and why, in words (None
        when included: that is said by its trigger)."""
        book, activations = self.request.lore_book, self.lore_activations
        assert book is not None
        entries, left_out, indices = book.entries, self.lore_left_out, self.lore_indices
        emitted = {indices[position] for position in self.lore_layer.emitted}
        counts = book.counts([activation[0] for activation in activations], self.tokenizer)
        fates = []
        for (index, _trigger, _by, _matches, kept), tokens in zip(activations, counts, strict=True):
            entry = entries[index]
            status: LoreStatus
            reason: str | None
            if kept != index:
                status, reason = "grouped_out", lore.grouped_out_words(entry, entries[kept])
            elif index in emitted:
                status, reason = "included", None
            else:
                status, reason = "left_out", left_out[index][0]
            fates.append((entry.id, entry.title, status, tokens, reason))
        return tuple(fates)

    def _fates(self) -> list[SegmentFate]:
        fates: list[SegmentFate] = []
        for layer in self.segment_layers.values():
            kept: list[Fate] = ["included" if kept else "dropped" for kept in layer.included]
            fates += self._fates_of(layer.items, kept, None)
        for state in self.npc_layer.npcs:
            emitted: Fate = "dropped" if state.dropped else "included"
            tiers: list[Fate] = [
                emitted if index < state.within_tier else "skipped"
                for index in range(len(state.items.segments))
            ]
            fates += self._fates_of(state.items, tiers, state.npc.slug)
        return fates

    def _fates_of(
        self, items: Segments, emittable: list[Fate], npc: str | None
    ) -> list[SegmentFate]:
        """``emittable[i]`` for the i-th emittable segment, and ``skipped`` for those that
        could not be emitted."""
        fates: list[SegmentFate] = []
        index = 0
        for segment in items.ordered:
            if index < len(items.segments) and items.segments[index] is segment:
                tokens, this = items.counts[index], emittable[index]
                index += 1
            else:
                tokens, this = declared_count(segment, self.tokenizer), "skipped"
            fates.append(SegmentFate(segment.id, segment.scope, npc, segment.label, tokens, this))
        return fates

    def _segment_lints(self) -> list[Lint]:
        """An error for each segment that alone exceeds the budget it has to fit in."""
        budget, npc_budget = self.request.token_budget, self.request.npc_budget
        found: list[Lint] = []
        for layer in self.segment_layers.values():
            if layer.items.max_count <= budget:
                continue
            for segment, count in zip(layer.items.segments, layer.items.counts, strict=True):
                if count > budget:
                    found.append(
                        lint_rules.segment_over_budget(layer.scope, segment, count, budget)
                    )
        for state in self.npc_layer.npcs:
            if state.items.max_count <= min(budget, npc_budget):
                continue
            for segment, count in zip(state.items.segments, state.items.counts, strict=True):
                if segment.tier > state.npc.requested_tier:
                    break
                if count > npc_budget:
                    found.append(
                        lint_rules.segment_over_budget(
                            "npc", segment, count, npc_budget, npc_budget=True
                        )
                    )
                elif count > budget:
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
        if scope == LORE_SCOPE:
            if not self.lore_layer.entries:
                return "empty"
            emitted, entries = self.lore_layer.emitted, self.lore_layer.entries
            if not emitted:
                return "dropped"
            return "trimmed" if len(emitted) < len(entries) else "included"
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


_NOTHING_LOST = Outcome()

# Stored layers whose blocks lead the prompt. Their texts are the very same strings from
# one turn to the next (see Segments.framed), so the hash of the prompt up to the end of
# them is kept, by the identity of those strings, and only what follows is hashed anew.
_LEADING_SCOPES = frozenset(("core", "ruleset", "world", "entry", "entry_start"))
_HASHED_PREFIXES = 64
_hashed_prefixes: dict[tuple[int, ...], tuple[tuple[str, ...], hashlib._Hash]] = {}


def _content_hash(blocks: tuple[Block, ...], prompt: str) -> str:
    """``sha256:`` and the hex digest of ``prompt``, the ``blocks`` joined."""
    leading = 0
    while leading < len(blocks) - 1 and blocks[leading].scope in _LEADING_SCOPES:
        leading += 1
    if not leading:
        return "sha256:" + hashlib.sha256(prompt.encode()).hexdigest()
    texts = tuple(block.text for block in blocks[:leading])
    key = tuple(map(id, texts))
    found = _hashed_prefixes.get(key)
    if found is not None and all(map(operator.is_, found[0], texts)):
        hasher = found[1].copy()
    else:
        hasher = hashlib.sha256((BLOCK_SEPARATOR.join(texts) + BLOCK_SEPARATOR).encode())
        if len(_hashed_prefixes) >= _HASHED_PREFIXES:
            _hashed_prefixes.clear()
        _hashed_prefixes[key] = (texts, hasher.copy())
    rest = BLOCK_SEPARATOR.join(block.text for block in blocks[leading:])
    hasher.update(rest.encode())
    return "sha256:" + hasher.hexdigest()


# How the NPC block of a scene was fitted (see _Assembly.fit_npc_budget): by what the
# outcome depends on, the objects named in that key by id (held, so that no id is reused
# while its entry is here), each NPC's tier and whether it was dropped, and the steps.
_NPC_FITS = 256
_npc_fits: dict[
    tuple[object, ...],
    tuple[tuple[object, ...], tuple[tuple[int, bool], ...], tuple[TruncationStep, ...]],
] = {}


@dataclass(slots=True)
class _LoreFill:
    """How the lore budget was filled for one list of activations, kept in the book's
    ``fills`` (see _Assembly._lore_layer): the tokenizer it was worked out with (held, so
    that its id in the key is not reused while it is remembered), the block's entries by
    index in the book and where each is in the block, their texts' counts, the entries
    let in and the tokens of the block's body, why the others were left out; and, for
    when the token budget takes no lore, the outcome's changes and each activated entry's
    fate (see _Assembly._lore_fates), worked out when first asked for. Shared by the
    assemblies that replay it: never changed after it is made, but for ``changes`` and
    ``fates``."""

    tokenizer: Tokenizer
    indices: list[int]
    positions: dict[int, int]
    entries: list[lore.LoreEntry]
    counts: list[int]
    emitted: tuple[int, ...]
    body_tokens: int
    left_out: dict[int, tuple[str, OutcomeReason | None]]
    changes: tuple[Change, ...] | None = None
    fates: tuple[tuple[int, str, LoreStatus, int, str | None], ...] | None = None


# How many lists of activations a book remembers the lore budget's fill for.
_LORE_FILLS = 256
_first = operator.itemgetter(0)
_kept = operator.itemgetter(4)


def _copy_step(step: TruncationStep) -> TruncationStep:
    """A copy of ``step``, so that no result shares a record with another."""
    return TruncationStep(
        step.scope,
        step.action,
        step.tokens_before,
        step.tokens_after,
        step.reason,
        step.segment_id,
        step.npc,
        step.explanation,
    )


def _state_text(request: AssemblyRequest, scope: str) -> str:
    try:
        return render_state(request.state.get(scope))
    except (TypeError, ValueError) as error:
        raise ValueError(f"state[{scope!r}] cannot be rendered as JSON: {error}") from error


def _npc_to_lower(npcs: list[NpcState]) -> NpcState | None:
    """The lowest-priority NPC that still emits something above tier 0, if any."""
    return next((state for state in reversed(npcs) if state.can_lower()), None)


def _npc_status(state: NpcState) -> NpcStatus:
    if state.dropped:
        return "dropped"
    return "lowered" if state.lowered else "included"


def _unchanged(layer: Layer, before: int | None) -> None:
    """A released assembly's layers tell no one of a change (see _Assembly.release)."""
