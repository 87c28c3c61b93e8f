"""Invariants of assembly over random content, NPCs, state and budgets."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from assembler import (
    DROP_ORDER,
    TRIM_ORDER,
    AssemblyRequest,
    AssemblyResult,
    Npc,
    Policy,
    Ruleset,
    Segment,
    assemble,
    get_tokenizer,
)

# Content is random text around a marker "Q<id>Z". Neither Q nor Z nor a digit occurs in the
# random text, the frames or the NPC names, so a marker is found exactly where its segment is.
CHUNKS = [
    *"abc .,!?;:'\"()-\n\t",
    " the gate",
    " stands open",
    "Fog rolls in",
    "\n\n",
    ". ",
    "...",
    "  ",
    "🐉",
    "龍の門",
    "。",
    "é",
    "👩‍👧",
    "<|endoftext|>",
    "====",
]
text = st.lists(st.sampled_from(CHUNKS), max_size=5).map("".join)
names = st.text(alphabet="abcdefghijklmnoprstuvwxy", min_size=1, max_size=8)


def marker(segment_id: int) -> str:
    return f"Q{segment_id}Z"


SMALL_NPC_BUDGETS = st.integers(0, 200)


@st.composite
def requests(
    draw: st.DrawFn, npc_budget: st.SearchStrategy[int] = SMALL_NPC_BUDGETS
) -> AssemblyRequest:
    ids = itertools.count(1)

    def segments(scope: str, max_size: int = 3, tiers: bool = False) -> list[Segment]:
        made = []
        for _ in range(draw(st.integers(0, max_size))):
            segment_id = next(ids)
            content = draw(text) + marker(segment_id) + draw(text)
            made.append(
                Segment(
                    segment_id,
                    scope,
                    content,
                    sort_order=draw(st.integers(0, 3)),
                    tier=draw(st.integers(0, 3)) if tiers else 0,
                    # Counts are cached in the database; here some are, some are not.
                    token_count=COUNT(content) if draw(st.booleans()) else None,
                )
            )
        return made

    rulesets = [
        Ruleset(f"rules-{index}", f"Rules {index}", segments("ruleset", 2))
        for index in range(draw(st.integers(0, 2)))
    ]
    npc_names = draw(st.lists(names, max_size=3, unique=True))
    npcs = [
        Npc(name, name.title(), draw(st.integers(0, 3)), segments("npc", tiers=True))
        for name in npc_names
    ]
    json_values = st.one_of(st.integers(-5, 500), text, st.booleans(), st.none())
    state_value = st.one_of(
        st.none(),
        text,
        st.dictionaries(
            names,
            st.one_of(
                json_values,
                st.lists(json_values, max_size=3),
                st.dictionaries(names, json_values, max_size=2),
            ),
            max_size=4,
        ),
    )
    return AssemblyRequest(
        core=segments("core", 2),
        rulesets=rulesets,
        world=segments("world"),
        entry=segments("entry"),
        entry_start=segments("entry_start", 2),
        npcs=npcs,
        state={scope: draw(state_value) for scope in ("game_state", "player", "rng", "input")},
        first_turn=draw(st.booleans()),
        token_budget=draw(st.integers(0, 400)),
        npc_budget=draw(npc_budget),
        policy=Policy(block_format=draw(st.sampled_from(["delimited", "xml", "markdown"]))),
    )


TOKENIZER = get_tokenizer()
COUNT: Callable[[str], int] = TOKENIZER.count


def all_segments(request: AssemblyRequest) -> list[Segment]:
    return [
        *request.core,
        *(segment for ruleset in request.rulesets for segment in ruleset.segments),
        *request.world,
        *request.entry,
        *request.entry_start,
        *(segment for npc in request.npcs for segment in npc.segments),
    ]


PROPERTY = settings(max_examples=100, deadline=None)


@PROPERTY
@given(requests())
def test_prompt_fits_the_budget_unless_over_budget_and_meta_counts_it_exactly(
    request: AssemblyRequest,
) -> None:
    result = assemble(request, TOKENIZER)
    tokens = TOKENIZER.count(result.prompt)
    assert result.meta.tokens == tokens
    if result.meta.over_budget:
        assert tokens > request.token_budget
        assert [lint.code for lint in result.meta.lints][-1] == "over_budget"
    else:
        assert tokens <= request.token_budget


@PROPERTY
@given(requests())
def test_listed_segments_are_in_the_prompt_and_dropped_ones_are_not(
    request: AssemblyRequest,
) -> None:
    result = assemble(request, TOKENIZER)
    listed = {segment_id for ids in result.meta.segment_ids_by_scope.values() for segment_id in ids}
    for segment in all_segments(request):
        if segment.id in listed:
            assert segment.content in result.prompt
        else:
            assert marker(segment.id) not in result.prompt
    fates = {fate.id: fate.fate for fate in result.segments}
    assert {segment.id for segment in all_segments(request)} == set(fates)
    assert listed == {segment_id for segment_id, fate in fates.items() if fate == "included"}


@PROPERTY
@given(requests())
def test_core_and_ruleset_text_is_always_present_in_full(request: AssemblyRequest) -> None:
    result = assemble(request, TOKENIZER)
    protected = [*request.core, *(s for ruleset in request.rulesets for s in ruleset.segments)]
    for segment in protected:
        assert segment.content in result.prompt
    if result.meta.over_budget:
        # Nothing but the protected layers is left.
        assert all(
            layer.tokens == 0
            for scope, layer in result.meta.layers.items()
            if scope not in ("core", "ruleset")
        )


@PROPERTY
@given(requests())
def test_npc_block_fits_the_npc_budget_exactly(request: AssemblyRequest) -> None:
    result = assemble(request, TOKENIZER)
    prompt = result.prompt
    block_format = request.policy.block_format
    if block_format == "markdown" or result.meta.layers["npc"].tokens == 0:
        return
    start, end = {
        "delimited": ("=== NPC_BEGIN ===", "=== NPC_END ==="),
        "xml": ("<npc>", "</npc>"),
    }[block_format]
    npc_block = prompt[prompt.index(start) : prompt.index(end) + len(end)]
    assert TOKENIZER.count(npc_block) <= request.npc_budget


def step_rank(step: Any, request: AssemblyRequest) -> tuple[int, int]:
    """Where a global-budget step sits in the documented policy order."""
    if step.action == "trimmed":
        below = "below its floor" in step.reason
        return (3 if below else 1, TRIM_ORDER.index(step.scope))
    if step.action == "npc_dropped":
        return (2, 0)
    assert step.action == "dropped"
    return (2, 1 + DROP_ORDER.index(step.scope))


@PROPERTY
@given(requests(npc_budget=st.just(100_000)))
def test_truncation_follows_the_documented_order(request: AssemblyRequest) -> None:
    result = assemble(request, TOKENIZER)
    ranks = [step_rank(step, request) for step in result.meta.truncated]
    assert ranks == sorted(ranks)
    npc_drops = [step.npc or "" for step in result.meta.truncated if step.action == "npc_dropped"]
    priority = [npc.slug for npc in request.npcs]
    assert npc_drops == sorted(npc_drops, key=priority.index, reverse=True)


@settings(max_examples=40, deadline=None)
@given(requests())
def test_assembly_is_deterministic(request: AssemblyRequest) -> None:
    first: AssemblyResult = assemble(request, TOKENIZER)
    second = assemble(request, TOKENIZER)
    assert first.prompt == second.prompt
    assert first.meta.to_dict() == second.meta.to_dict()


@PROPERTY
@given(
    bodies=st.lists(
        st.lists(
            st.sampled_from([*CHUNKS, "===", "<", ">", "=== X_END ===", " \n "]), max_size=12
        ).map("".join),
        min_size=2,
        max_size=4,
    ),
    block_format=st.sampled_from(["delimited", "xml"]),
)
def test_framed_blocks_join_on_token_boundaries(bodies: list[str], block_format: str) -> None:
    # The fast exact count of a prompt sums its blocks' counts plus a fixed join cost; this
    # holds whatever the authors wrote inside the blocks.
    from assembler.render import BLOCK_SEPARATOR, block, block_close, block_open

    tokenizer = get_tokenizer()
    scopes = ["core", "world", "entry_start", "input"]
    blocks = [
        block(scope, body, block_format)  # type: ignore[arg-type]
        for scope, body in zip(scopes[: len(bodies)], bodies, strict=True)
    ]
    close = block_close("core", block_format) or ""  # type: ignore[arg-type]
    join = tokenizer.join_cost(close, BLOCK_SEPARATOR, block_open("core", block_format))  # type: ignore[arg-type]
    summed = sum(tokenizer.count(text) for text in blocks) + join * (len(blocks) - 1)
    assert tokenizer.count(BLOCK_SEPARATOR.join(blocks)) == summed
