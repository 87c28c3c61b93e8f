"""The net outcome of fitting the budgets (``meta.outcome``): what is left out, shortened
and lowered once everything that fitted again was put back, each with its reason."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from assembler import (
    AssemblyRequest,
    LoreBook,
    LoreEntry,
    LoreOptions,
    Segment,
    assemble,
    get_tokenizer,
)
from assembler.explain import explain_result
from assembler.lore import NO_TEXT
from assembler.request import DYNAMIC_SCOPES, HISTORY_SCOPE
from assembler.result import OUTCOME_REASONS
from tests.assembler.builders import PROSE, cinder_gate, npc, request, seg
from tests.assembler.test_properties import PROPERTY, TOKENIZER, requests

COUNT = get_tokenizer().count


def test_the_cinder_gate_nets_three_facts_and_keeps_its_trace() -> None:
    meta = assemble(cinder_gate(), TOKENIZER).meta
    outcome = meta.outcome
    assert [(c.key, c.reason) for c in outcome.left_out] == [
        ("segment:44", "larger_than_budget"),
        ("npc:lysa-quill", "over_npc_budget"),
    ]
    assert outcome.shortened == ()
    [oren] = outcome.lowered
    assert (oren.key, oren.tier_before, oren.tier_after) == ("npc:oren-flint", 2, 1)
    assert oren.reason == "larger_than_npc_budget"
    assert oren.explanation.startswith("NPC 'Oren Flint' lowered from tier 2 to 1 (")
    assert oren.explanation.endswith("tier 2 alone is larger than the 60-token NPC budget")
    assert outcome.left_out[0].explanation == (
        "World segment #44 'The long war' (1201 tokens) left out: it alone is larger than the "
        "whole 700-token budget"
    )
    assert outcome.left_out[1].explanation.endswith(
        "left out: the 60-token NPC budget had no room left for it"
    )
    # The step-by-step trace is as it was: Oren was left out on the way and put back.
    actions = [(step.action, step.npc) for step in meta.truncated]
    assert ("npc_dropped", "oren-flint") in actions
    assert ("restored", "oren-flint") in actions
    assert len(meta.truncated) == 14
    assert explain_result(meta) == f"{meta.tokens} of 700 tokens, 2 left out, 1 lowered"
    assert meta.to_dict()["outcome"] == outcome.to_dict()


def test_nothing_lost_is_an_empty_outcome() -> None:
    meta = assemble(request(world=[seg(2, "world")], token_budget=1000), TOKENIZER).meta
    assert len(meta.outcome) == 0
    assert meta.to_dict()["outcome"] == {"left_out": [], "shortened": [], "lowered": []}


def test_an_npc_the_token_budget_lowers_names_the_token_budget() -> None:
    cast = [npc("marta", tiers=(0, 1), requested_tier=1, first_id=10)]
    roomy = assemble(request(npcs=cast, token_budget=2000, npc_budget=5000), TOKENIZER).meta
    # A budget with room for Marta at tier 0 only.
    at_tier_0 = assemble(
        request(npcs=[npc("marta", tiers=(0,), first_id=10)], token_budget=2000), TOKENIZER
    ).meta.tokens
    assert roomy.tokens > at_tier_0
    meta = assemble(request(npcs=cast, token_budget=at_tier_0, npc_budget=5000), TOKENIZER).meta
    [marta] = meta.outcome.lowered
    assert (marta.tier_before, marta.tier_after, marta.reason) == (1, 0, "over_budget")
    assert marta.explanation.endswith(f"the {at_tier_0}-token budget had no room left for tier 1")


def test_a_layer_cut_short_is_shortened_and_one_cut_to_nothing_is_left_out() -> None:
    state = {"input": PROSE * 3, "player": PROSE * 3}
    whole = assemble(request(state=state, token_budget=5000), TOKENIZER).meta.tokens
    meta = assemble(request(state=state, token_budget=whole - 40), TOKENIZER).meta
    [cut] = meta.outcome.shortened
    assert (cut.key, cut.reason) == ("layer:input", "over_budget")
    assert 0 < cut.tokens_after < cut.tokens_before
    assert cut.explanation.startswith(f"Input shortened from {cut.tokens_before} to ")
    assert cut.explanation.endswith("had no room left for the rest of it")
    core = [seg(1, "core", PROSE)]
    core_only = assemble(request(core=core), TOKENIZER).meta.tokens
    tiny = assemble(
        request(core=core, state={"input": PROSE}, token_budget=core_only), TOKENIZER
    ).meta
    assert [(c.key, c.kind, c.tokens_after) for c in tiny.outcome.left_out] == [
        ("layer:input", "left_out", 0)
    ]


def test_a_lore_entry_the_lore_budget_leaves_out_names_the_lore_budget() -> None:
    book = LoreBook(
        [
            LoreEntry(7, "Bell", "The bell of the chapel. " * 30, keys=("bell",)),
            LoreEntry(8, "Draft", " ", keys=("bell",)),
        ]
    )
    lore_request = AssemblyRequest(
        core=[Segment(1, "core", "You narrate.")],
        rulesets=[],
        world=[Segment(2, "world", "The sea is old.")],
        entry=[],
        entry_start=[],
        npcs=[],
        state={"input": "I ring the bell."},
        first_turn=False,
        token_budget=2000,
        lore=LoreOptions(budget=40),
        lore_book=book,
    )
    [bell] = assemble(lore_request, TOKENIZER).meta.outcome.left_out
    assert (bell.key, bell.lore_id, bell.reason) == ("lore:7", 7, "larger_than_lore_budget")
    assert bell.explanation.endswith("it alone is larger than the 40-token lore budget")


@PROPERTY
@given(requests(npc_budget=st.one_of(st.integers(0, 200), st.just(100_000))))
def test_the_outcome_is_what_the_prompt_lost_and_nothing_else(request: AssemblyRequest) -> None:
    result = assemble(request, TOKENIZER)
    meta, outcome = result.meta, result.meta.outcome
    left_out = {change.key for change in outcome.left_out}
    # Segments: exactly those whose fate is dropped.
    dropped = {
        f"segment:{fate.id}"
        for fate in result.segments
        if fate.fate == "dropped" and fate.scope != "npc"
    }
    assert {key for key in left_out if key.startswith("segment:")} == dropped
    # NPCs: dropped ones left out, lowered ones lowered to the tier the report shows.
    lowered = {change.npc: change for change in outcome.lowered}
    for report in meta.npcs:
        key = f"npc:{report.npc}"
        assert (key in left_out) == (report.status == "dropped"), report
        assert (report.npc in lowered) == (report.status == "lowered"), report
        if report.status == "lowered":
            change = lowered[report.npc]
            assert (change.tier_before, change.tier_after) == (report.requested_tier, report.tier)
            assert change.tokens_after == report.tokens
    # Lore: entries left out, but for those without text.
    lore_left_out = {
        f"lore:{report.id}"
        for report in meta.lore
        if report.status == "left_out" and report.reason != NO_TEXT
    }
    assert {key for key in left_out if key.startswith("lore:")} == lore_left_out
    # Dynamic layers and the history: shortened or left out as their status says.
    shortened = {change.key for change in outcome.shortened}
    for scope in (HISTORY_SCOPE, *DYNAMIC_SCOPES):
        status = meta.layers[scope].status
        assert (f"layer:{scope}" in shortened) == (status == "trimmed"), scope
        assert (f"layer:{scope}" in left_out) == (status == "dropped"), scope
    for change in outcome.changes():
        assert change.reason in OUTCOME_REASONS
        assert change.explanation.startswith(change.name), change
        assert change.tokens_after <= change.tokens_before, change
        assert change.tokens_after == 0 or change.kind != "left_out"
        if change.key.startswith("segment:"):
            larger = change.tokens_before > request.token_budget
            assert (change.reason == "larger_than_budget") == larger, change
    # The one-line summary counts the outcome's own lists.
    if not meta.over_budget:
        said = explain_result(meta).split(" tokens, ", 1)[1]
        groups = {"left out": outcome.left_out, "shortened": outcome.shortened}
        groups["lowered"] = outcome.lowered
        expected = [f"{len(group)} {words}" for words, group in groups.items() if group]
        assert said == (", ".join(expected) or "nothing cut")


def test_a_segment_left_out_then_put_back_is_no_loss() -> None:
    world = [seg(1, "world", PROSE * 4, sort_order=1), seg(2, "world", "Harbour.", sort_order=2)]
    fits = assemble(request(world=[world[1]]), TOKENIZER).meta.tokens
    meta = assemble(request(world=world, token_budget=fits), TOKENIZER).meta
    assert ("restored", 2) in [(step.action, step.segment_id) for step in meta.truncated]
    assert [change.key for change in meta.outcome.changes()] == ["segment:1"]
