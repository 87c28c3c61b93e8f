"""Truncation steps, layers and whole results explained in plain words for authors."""

from __future__ import annotations

import re

from assembler import Npc, Policy, Tokenizer, assemble
from assembler.explain import explain_layer, explain_result
from tests.assembler.builders import PROSE, npc, request, seg


def test_each_step_names_the_layer_segment_tokens_and_why(tokenizer: Tokenizer) -> None:
    world = [seg(3, "world", "Small."), seg(12, "world", PROSE, title="Old wars", sort_order=1)]
    state = {"input": "The player speaks at length. " * 30}
    half = Policy(floors={"input": 0.5})  # the input keeps 60 of its tokens before drops
    result = assemble(request(world=world, state=state, token_budget=120, policy=half), tokenizer)
    assert tokenizer.count(PROSE) == 50
    assert [step.explanation for step in result.meta.truncated] == [
        "Input shortened from 181 to 60 tokens: "
        "the prompt was 132 tokens over the 120-token budget",
        "World segment #12 'Old wars' (50 tokens) left out: "
        "the prompt was still 11 tokens over the 120-token budget after the input was shortened",
        "Input given back room, from 60 to 96 of its 181 tokens: "
        "once the prompt fitted the 120-token budget there was room for more",
    ]
    # The terse reasons stay as they were, for API clients and logs.
    assert result.meta.truncated[1].reason == (
        "world segment #12 'Old wars' dropped: prompt 11 tokens over budget after trimming input"
    )


def test_npc_budget_steps_say_which_tier_was_used_instead(tokenizer: Tokenizer) -> None:
    marta = Npc(
        "marta-vell",
        "Marta Vell",
        2,
        [seg(1, "npc", "Marta keeps the inn.", tier=0), seg(2, "npc", PROSE, tier=2)],
    )
    result = assemble(request(npcs=[marta], npc_budget=30), tokenizer)
    [step] = result.meta.truncated
    assert step.explanation.startswith(
        "NPC 'Marta Vell' shown at tier 0 instead of 2 to fit the 30-token NPC budget: "
        "the NPC block was "
    )
    assert step.explanation.endswith(" tokens over it")


def test_an_npc_too_large_for_its_budget_is_explained(tokenizer: Tokenizer) -> None:
    giant = Npc("wyrm", "Wyrm", 0, [seg(1, "npc", PROSE * 3)])
    [step] = assemble(request(npcs=[giant], npc_budget=50), tokenizer).meta.truncated
    assert re.fullmatch(
        r"NPC 'Wyrm' \(\d+ tokens\) left out to fit the 50-token NPC budget: "
        r"even alone at tier 0 it is larger than that budget",
        step.explanation,
    ), step.explanation


def test_put_backs_are_explained(tokenizer: Tokenizer) -> None:
    ida = npc("ida", tiers=(0, 1), requested_tier=1, first_id=10)
    world = [
        seg(1, "world", PROSE * 4, sort_order=1, title="Chronicle"),
        seg(2, "world", "Harbour.", sort_order=2, title="Harbour"),
    ]
    fits = assemble(request(world=[world[1]], npcs=[ida]), tokenizer).meta.tokens
    result = assemble(request(world=world, npcs=[ida], token_budget=fits), tokenizer)
    restored = [step.explanation for step in result.meta.truncated if step.action == "restored"]
    when = f"once the prompt fitted the {fits}-token budget"
    assert restored == [
        f"World segment #2 'Harbour' (3 tokens) put back: {when} there was room for it again",
        f"NPC 'Ida' at tier 0 (13 tokens) put back: {when} there was room for it again",
        f"NPC 'Ida' shown at tier 1 again: {when} there was room for it",
    ]


def test_a_trimmed_layer_given_all_its_room_back_is_explained(tokenizer: Tokenizer) -> None:
    long_input = "The player speaks at length. " * 40
    whole = tokenizer.count(long_input)
    fits = assemble(request(state={"input": long_input}), tokenizer).meta.tokens
    world = [seg(1, "world", PROSE * 12)]
    result = assemble(
        request(world=world, state={"input": long_input}, token_budget=fits), tokenizer
    )
    trimmed, _, restored = result.meta.truncated
    # Cut back to the end of a sentence, within its floor of 10% of the budget.
    kept = fits // 10 - 1
    assert trimmed.explanation.startswith(f"Input shortened from {whole} to {kept} tokens: ")
    assert restored.explanation == (
        f"Input given back all its {whole} tokens (it had been cut to {kept}): "
        f"once the prompt fitted the {fits}-token budget there was room for it"
    )


def test_explanations_are_served_with_the_steps(tokenizer: Tokenizer) -> None:
    world = [seg(3, "world", "Small."), seg(12, "world", PROSE, title="Old wars", sort_order=1)]
    full = assemble(request(world=world), tokenizer).meta.tokens
    meta = assemble(request(world=world, token_budget=full - 1), tokenizer).meta.to_dict()
    [step] = meta["truncated"]
    assert step["explanation"] == (
        "World segment #12 'Old wars' (50 tokens) left out: "
        f"the prompt was 1 token over the {full - 1}-token budget"
    )
    assert step["reason"] == "world segment #12 'Old wars' dropped: prompt 1 tokens over budget"


def test_a_layer_left_out_is_not_called_empty(tokenizer: Tokenizer) -> None:
    entry = [seg(30, "entry", PROSE * 4)]
    core = [seg(1, "core")]
    within = assemble(request(core=core), tokenizer).meta.tokens
    meta = assemble(request(core=core, entry=entry, token_budget=within), tokenizer).meta
    assert explain_layer("entry", meta.layers["entry"]) == "Entry: left out to fit the budget"
    assert explain_layer("world", meta.layers["world"]) == "World: empty (no segments)"
    assert explain_layer("core", meta.layers["core"]) == "Core: included"


def test_a_layer_cut_is_worded_for_what_was_cut_from_it(tokenizer: Tokenizer) -> None:
    world = [seg(3, "world", "Harbour.", sort_order=0), seg(12, "world", PROSE * 4, sort_order=1)]
    state = {"input": "The player speaks at length. " * 30}
    fits = assemble(request(world=world[:1], state={"input": "Hi."}), tokenizer).meta.tokens
    meta = assemble(request(world=world, state=state, token_budget=fits + 40), tokenizer).meta
    ida = npc("ida", tiers=(0, 1), requested_tier=1)
    tier_0 = assemble(request(npcs=[npc("ida")]), tokenizer).meta.layers["npc"].tokens
    npcs = assemble(request(npcs=[ida], npc_budget=tier_0), tokenizer).meta
    # The API's statuses stay machine-readable; the words say what each layer lost.
    assert [meta.layers["world"].status, meta.layers["input"].status] == ["trimmed", "trimmed"]
    assert npcs.layers["npc"].status == "trimmed"
    assert explain_layer("world", meta.layers["world"]) == "World: some segments left out"
    assert explain_layer("input", meta.layers["input"]) == "Input: shortened"
    assert explain_layer("npc", npcs.layers["npc"]) == (
        "NPCs: some NPCs shown at a lower tier or left out"
    )


def test_only_a_layer_given_nothing_is_called_empty(tokenizer: Tokenizer) -> None:
    meta = assemble(request(state={"input": "Hi."}), tokenizer).meta
    assert explain_layer("input", meta.layers["input"]) == "Input: included"
    assert explain_layer("player", meta.layers["player"]) == "Player: empty (nothing given)"
    assert explain_layer("entry", meta.layers["entry"]) == "Entry: empty (no segments)"
    assert explain_layer("npc", meta.layers["npc"]) == "NPCs: empty (no NPC segments to show)"
    assert explain_layer("history", meta.layers["history"]) == (
        "Conversation history: empty (no conversation)"
    )
    assert explain_layer("entry_start", meta.layers["entry_start"]) == (
        "Entry start: skipped (not the first turn)"
    )


def test_a_result_is_summed_up_in_one_line(tokenizer: Tokenizer) -> None:
    world = [
        seg(1, "world", PROSE * 4, sort_order=1),
        seg(2, "world", "Harbour.", sort_order=2),
    ]
    fits = assemble(request(world=[world[1]]), tokenizer).meta.tokens
    meta = assemble(request(world=world, token_budget=fits), tokenizer).meta
    # Two steps left segments out and one put one back: one is lost in the end.
    assert [step.action for step in meta.truncated] == ["dropped", "dropped", "restored"]
    assert explain_result(meta) == f"{fits} of {fits} tokens, 1 left out"
    core = [seg(1, "core", PROSE)]
    over = assemble(request(core=core, token_budget=10), tokenizer).meta
    assert explain_result(over) == (
        f"{over.tokens} of 10 tokens: the core and ruleset layers alone are over the budget"
    )
