from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from assembler import (
    SCOPES,
    AssemblyRequest,
    AssemblyResult,
    LoreOptions,
    Npc,
    OverBudgetError,
    Policy,
    Ruleset,
    Tokenizer,
    assemble,
)
from assembler.assembly import _copy_step
from assembler.render import block
from assembler.result import TruncationStep
from benchmarks.data import build_request as bench_request
from benchmarks.data import prose
from tests.assembler.builders import PROSE, conversation, full_request, npc, request, seg

ROOT = Path(__file__).resolve().parents[2]


def positions(prompt: str, *texts: str) -> list[int]:
    found = [prompt.index(text) for text in texts]
    return found


def steps(result: object) -> list[tuple[str, str, object]]:
    """(scope, action, segment id or NPC) for each truncation step."""
    return [
        (step.scope, step.action, step.segment_id or step.npc)
        for step in result.meta.truncated  # type: ignore[attr-defined]
    ]


# Order and layout


def test_layers_are_assembled_in_the_documented_order(tokenizer: Tokenizer) -> None:
    prompt = assemble(full_request(), tokenizer).prompt
    frames = [f"=== {scope.upper()}_BEGIN ===" for scope in SCOPES]
    assert positions(prompt, *frames) == sorted(positions(prompt, *frames))


def test_blocks_and_segments_are_separated_by_blank_lines(tokenizer: Tokenizer) -> None:
    result = assemble(
        request(core=[seg(1, "core", "First."), seg(2, "core", "Second.")], state={"rng": "4"}),
        tokenizer,
    )
    assert result.prompt == (
        "=== CORE_BEGIN ===\nFirst.\n\nSecond.\n=== CORE_END ===\n\n"
        "=== RNG_BEGIN ===\n4\n=== RNG_END ==="
    )


def test_the_result_lists_each_emitted_block_and_the_prompt_is_them_joined(
    tokenizer: Tokenizer,
) -> None:
    result = assemble(
        request(core=[seg(1, "core", "First.")], state={"rng": "4"}),
        tokenizer,
    )
    assert [(block.scope, block.text) for block in result.blocks] == [
        ("core", "=== CORE_BEGIN ===\nFirst.\n=== CORE_END ==="),
        ("rng", "=== RNG_BEGIN ===\n4\n=== RNG_END ==="),
    ]
    assert result.prompt == "\n\n".join(block.text for block in result.blocks)


def test_segments_within_a_layer_go_by_sort_order_then_id(tokenizer: Tokenizer) -> None:
    world = [
        seg(5, "world", "fifth", sort_order=1),
        seg(9, "world", "ninth", sort_order=0),
        seg(3, "world", "third", sort_order=1),
    ]
    result = assemble(request(world=world), tokenizer)
    assert positions(result.prompt, "ninth", "third", "fifth") == sorted(
        positions(result.prompt, "ninth", "third", "fifth")
    )
    assert result.meta.segment_ids_by_scope["world"] == [9, 3, 5]


def test_rulesets_follow_the_entry_order_in_one_block(tokenizer: Tokenizer) -> None:
    rulesets = [
        Ruleset(
            "magic",
            "Magic",
            [seg(8, "ruleset", "magic B", sort_order=1), seg(9, "ruleset", "magic A")],
        ),
        Ruleset("combat", "Combat", [seg(1, "ruleset", "combat rule")]),
    ]
    result = assemble(request(rulesets=rulesets), tokenizer)
    assert result.prompt.count("=== RULESET_BEGIN ===") == 1
    assert result.meta.segment_ids_by_scope["ruleset"] == [9, 8, 1]
    assert positions(result.prompt, "magic A", "magic B", "combat rule") == sorted(
        positions(result.prompt, "magic A", "magic B", "combat rule")
    )


def test_empty_layers_emit_nothing(tokenizer: Tokenizer) -> None:
    result = assemble(request(world=[seg(1, "world")], state={"input": "  "}), tokenizer)
    assert result.prompt == block("world", "world text 1.", "delimited")
    assert result.meta.layers["input"].status == "empty"
    assert result.meta.layers["core"].status == "empty"


@pytest.mark.parametrize("block_format", ["delimited", "xml", "markdown"])
def test_every_block_format_frames_each_layer(tokenizer: Tokenizer, block_format: str) -> None:
    policy = Policy(block_format=block_format)  # type: ignore[arg-type]
    result = assemble(full_request(policy=policy), tokenizer)
    first = {"delimited": "=== CORE_BEGIN ===", "xml": "<core>", "markdown": "## Core"}
    assert result.prompt.startswith(first[block_format] + "\ncore text 1.")
    assert result.meta.tokens == tokenizer.count(result.prompt)


def test_json_state_is_rendered_as_sorted_key_value_lines_in_its_block(
    tokenizer: Tokenizer,
) -> None:
    player = {"name": "Åsa", "hp": 12, "bag": {"rope": 1, "gold": 3}}
    result = assemble(request(state={"player": player}), tokenizer)
    assert result.prompt == block(
        "player", 'bag: {"gold":3,"rope":1}\nhp: 12\nname: Åsa', "delimited"
    )


# First turn


def test_entry_start_is_included_on_the_first_turn_only(tokenizer: Tokenizer) -> None:
    first = assemble(full_request(first_turn=True), tokenizer)
    later = assemble(full_request(first_turn=False), tokenizer)
    assert "entry_start text 40." in first.prompt
    assert first.meta.segment_ids_by_scope["entry_start"] == [40]
    assert "ENTRY_START" not in later.prompt
    assert later.meta.layers["entry_start"].status == "skipped"
    assert later.meta.segment_ids_by_scope["entry_start"] == []
    fates = {fate.id: fate.fate for fate in later.segments}
    assert fates[40] == "skipped"


# NPCs


def test_npc_gets_a_heading_then_its_segments_up_to_the_requested_tier(
    tokenizer: Tokenizer,
) -> None:
    ida = Npc(
        "ida",
        "Ida",
        requested_tier=1,
        segments=[
            seg(3, "npc", "ida tier two", tier=2),
            seg(2, "npc", "ida tier one", tier=1),
            seg(1, "npc", "ida tier zero", tier=0, sort_order=5),
            seg(4, "npc", "ida tier zero first", tier=0),
        ],
    )
    result = assemble(request(npcs=[ida]), tokenizer)
    assert (
        block(
            "npc", "[NPC: Ida]\nida tier zero first\n\nida tier zero\n\nida tier one", "delimited"
        )
        == result.prompt
    )
    assert result.meta.segment_ids_by_scope["npc"] == [4, 1, 2]
    fates = {fate.id: (fate.npc, fate.fate) for fate in result.segments}
    assert fates[3] == ("ida", "skipped")
    assert fates[2] == ("ida", "included")


def test_npcs_are_separated_by_a_blank_line_in_priority_order(tokenizer: Tokenizer) -> None:
    result = assemble(request(npcs=[npc("bo", first_id=1), npc("al", first_id=5)]), tokenizer)
    assert "[NPC: Bo]\nbo detail at tier 0.\n\n[NPC: Al]\nal detail at tier 0." in result.prompt


def test_over_npc_budget_lowers_the_lowest_priority_npc_first_one_tier_at_a_time(
    tokenizer: Tokenizer,
) -> None:
    npcs = [
        npc("ida", tiers=(0, 1, 2), requested_tier=2, first_id=10),
        npc("bo", tiers=(0, 1, 3), requested_tier=3, first_id=20),
    ]
    whole = assemble(request(npcs=npcs), tokenizer).meta.layers["npc"].tokens
    # Room for everything but Bo's top tier.
    result = assemble(request(npcs=npcs, npc_budget=whole - 1), tokenizer)
    assert steps(result) == [("npc", "tier_lowered", "bo")]
    step = result.meta.truncated[0]
    assert "from tier 3 to tier 1" in step.reason
    assert step.tokens_before == whole
    assert step.tokens_after < whole
    reports = {report.npc: report for report in result.meta.npcs}
    assert (reports["bo"].tier, reports["bo"].status) == (1, "lowered")
    assert (reports["ida"].tier, reports["ida"].status) == (2, "included")
    assert result.meta.layers["npc"].status == "trimmed"
    assert "bo detail at tier 3." not in result.prompt


def test_npcs_are_dropped_lowest_priority_first_once_all_are_at_tier_0(
    tokenizer: Tokenizer,
) -> None:
    npcs = [
        npc("ida", tiers=(0, 1), requested_tier=1, first_id=10),
        npc("bo", tiers=(0, 1), requested_tier=1, first_id=20),
    ]
    only_ida_tier0 = assemble(request(npcs=[npc("ida", first_id=10)]), tokenizer)
    budget = only_ida_tier0.meta.layers["npc"].tokens
    result = assemble(request(npcs=npcs, npc_budget=budget), tokenizer)
    assert steps(result) == [
        ("npc", "tier_lowered", "bo"),
        ("npc", "tier_lowered", "ida"),
        ("npc", "npc_dropped", "bo"),
    ]
    assert result.prompt == only_ida_tier0.prompt
    assert [report.status for report in result.meta.npcs] == ["lowered", "dropped"]
    assert {fate.id: fate.fate for fate in result.segments}[20] == "dropped"


def test_a_single_npc_larger_than_its_budget_is_dropped_and_reported(
    tokenizer: Tokenizer,
) -> None:
    giant = Npc("wyrm", "Wyrm", 0, [seg(1, "npc", PROSE * 3)])
    result = assemble(request(npcs=[giant], npc_budget=50), tokenizer)
    assert result.prompt == ""
    [step] = result.meta.truncated
    assert (step.scope, step.action, step.npc) == ("npc", "npc_dropped", "wyrm")
    assert "alone" in step.reason and "50" in step.reason
    assert result.meta.npcs[0].status == "dropped"
    assert result.meta.layers["npc"].status == "dropped"
    assert result.segments[0].fate == "dropped"


def test_npc_without_segments_at_its_tier_emits_nothing(tokenizer: Tokenizer) -> None:
    result = assemble(request(npcs=[npc("ida", tiers=(2,), requested_tier=1)]), tokenizer)
    assert result.prompt == ""
    assert result.meta.layers["npc"].status == "empty"
    assert "npc_without_tier0" in [lint.code for lint in result.meta.lints]


def test_npc_block_fits_its_budget_exactly_even_with_stale_cached_counts(
    tokenizer: Tokenizer,
) -> None:
    # Cached counts far below the truth make the estimate wrong; the exact check catches it.
    stale = [
        Npc(slug, slug.title(), 0, [seg(index, "npc", PROSE, token_count=1)])
        for index, slug in enumerate(["ida", "bo", "al"], start=1)
    ]
    result = assemble(request(npcs=stale, npc_budget=120), tokenizer)
    assert tokenizer.count(result.prompt) <= 120
    # Only as much as needed goes: each step is checked against the exact count.
    assert [report.status for report in result.meta.npcs] == ["included", "included", "dropped"]


# Token budget


def budget_request(token_budget: int) -> AssemblyRequest:
    """Every layer filled; dynamic layers large enough to stay above their floors."""
    filler = "word " * 150
    return full_request(
        world=[seg(20, "world", "world one. " + PROSE), seg(21, "world", "world two. " + PROSE)],
        entry=[seg(30, "entry", "entry one. " + PROSE), seg(31, "entry", "entry two. " + PROSE)],
        entry_start=[seg(40, "entry_start", "start. " + PROSE)],
        state={scope: f"{scope} {filler}" for scope in ("game_state", "player", "rng", "input")},
        history=conversation(20),
        # The history keeps its newest exchange in the first phase: a fixed size, so the
        # steps taken grow with every smaller budget (a floor would keep whole messages).
        policy=Policy(floors={"history": 0.0}),
        # A lore budget of its own, so the lore entry is in whatever the token budget.
        lore=LoreOptions(budget=100),
        token_budget=token_budget,
    )


def test_a_prompt_within_budget_is_not_truncated(tokenizer: Tokenizer) -> None:
    result = assemble(budget_request(100_000), tokenizer)
    assert result.meta.truncated == []
    assert all(layer.status == "included" for scope, layer in result.meta.layers.items())
    assert result.meta.tokens == result.meta.tokens_estimated == tokenizer.count(result.prompt)


def test_truncation_steps_fire_in_the_documented_order_as_the_budget_shrinks(
    tokenizer: Tokenizer,
) -> None:
    full = assemble(budget_request(100_000), tokenizer).meta.tokens
    protected = assemble(
        dataclasses.replace(
            budget_request(100_000),
            world=[],
            entry=[],
            entry_start=[],
            npcs=[],
            state={},
            history=None,
            lore_book=None,
        ),
        tokenizer,
    ).meta.tokens
    documented = [
        ("input", "trimmed", None),
        ("rng", "trimmed", None),
        ("player", "trimmed", None),
        ("game_state", "trimmed", None),
        ("lore", "dropped", None),
        ("history", "trimmed", None),
        ("npc", "npc_dropped", "bo"),
        ("npc", "npc_dropped", "ida"),
        ("entry_start", "dropped", 40),
        ("entry", "dropped", 31),
        ("entry", "dropped", 30),
        ("world", "dropped", 21),
        ("world", "dropped", 20),
        ("input", "trimmed", None),
        ("rng", "trimmed", None),
        ("player", "trimmed", None),
        ("game_state", "trimmed", None),
        ("history", "trimmed", None),
    ]
    seen = 0
    for budget in range(full, protected - 1, -7):
        result = assemble(budget_request(budget), tokenizer)
        applied = [step for step in steps(result) if step[1] != "restored"]
        assert applied == documented[: len(applied)], budget
        # Put-backs come once the prompt fits, after every step that removed something.
        actions = [step.action for step in result.meta.truncated]
        assert actions[len(applied) :] == ["restored"] * (len(actions) - len(applied))
        assert len(applied) >= seen
        seen = len(applied)
        assert result.meta.tokens <= budget
        assert not result.meta.over_budget
    at_protected = assemble(budget_request(protected), tokenizer)
    assert [step for step in steps(at_protected) if step[1] != "restored"] == documented
    assert at_protected.meta.tokens == protected


def test_trimming_cuts_only_what_is_needed(tokenizer: Tokenizer) -> None:
    full = assemble(budget_request(100_000), tokenizer).meta
    result = assemble(budget_request(full.tokens - 5), tokenizer)
    [step] = result.meta.truncated
    assert (step.scope, step.action) == ("input", "trimmed")
    assert step.tokens_before - step.tokens_after == 5
    assert result.meta.tokens == full.tokens - 5
    assert result.meta.layers["input"].status == "trimmed"


def test_dynamic_layers_are_first_trimmed_only_down_to_their_floor(
    tokenizer: Tokenizer,
) -> None:
    result = assemble(budget_request(600), tokenizer)
    assert [step.scope for step in result.meta.truncated[:7]] == [
        "input",
        "rng",
        "player",
        "game_state",
        "lore",
        "history",
        "npc",
    ]
    for step in result.meta.truncated[:4]:
        assert "towards its floor of 60 tokens" in step.reason  # 10% of the budget
    for scope in ("input", "rng", "player", "game_state"):
        frames = scope.upper()
        text = result.prompt.split(f"=== {frames}_BEGIN ===\n")[1].split(f"\n=== {frames}_END")[0]
        # Never below the floor: what dropping NPCs freed beyond need may be given back.
        assert tokenizer.count(text) >= 60


def test_a_trim_backs_up_to_the_end_of_a_sentence(tokenizer: Tokenizer) -> None:
    full = assemble(full_request(state={"input": PROSE}), tokenizer).meta.tokens
    result = assemble(full_request(state={"input": PROSE}, token_budget=full - 8), tokenizer)
    assert "bell rings" not in result.prompt
    assert "warehouse roofs.\n=== INPUT_END ===" in result.prompt


def test_drop_reasons_name_the_segment_and_the_overshoot(tokenizer: Tokenizer) -> None:
    world = [seg(12, "world", PROSE, title="Old wars"), seg(3, "world", "Small.")]
    full = assemble(request(world=world), tokenizer).meta.tokens
    result = assemble(request(world=world, token_budget=full - 1), tokenizer)
    [step] = result.meta.truncated
    assert step.reason == "world segment #12 'Old wars' dropped: prompt 1 tokens over budget"
    assert step.segment_id == 12
    assert result.meta.layers["world"].status == "trimmed"
    assert result.meta.segment_ids_by_scope["world"] == [3]


def test_core_and_ruleset_are_never_touched(tokenizer: Tokenizer) -> None:
    result = assemble(budget_request(30), tokenizer)
    assert result.meta.over_budget
    assert result.prompt == (
        block("core", "core text 1.\n\ncore text 2.", "delimited")
        + "\n\n"
        + block("ruleset", "ruleset text 10.\n\nruleset text 11.", "delimited")
    )
    assert result.meta.layers["core"].status == "included"
    assert result.meta.layers["ruleset"].status == "included"
    assert result.meta.segment_ids_by_scope["ruleset"] == [10, 11]
    assert [lint.code for lint in result.meta.lints][-1] == "over_budget"


def test_strict_mode_raises_when_protected_layers_exceed_the_budget(
    tokenizer: Tokenizer,
) -> None:
    with pytest.raises(OverBudgetError) as raised:
        assemble(dataclasses.replace(budget_request(20), strict=True), tokenizer)
    error = raised.value
    assert set(error.layers) == {"core", "ruleset"}
    assert error.budget == 20
    assert error.over == error.tokens - 20 > 0
    assert f"{error.over} over the token budget of 20" in str(error)
    assert "core" in str(error) and "ruleset" in str(error)


def test_strict_mode_still_truncates_what_may_be_truncated(tokenizer: Tokenizer) -> None:
    result = assemble(dataclasses.replace(budget_request(400), strict=True), tokenizer)
    assert result.meta.tokens <= 400
    assert result.meta.truncated


def test_budget_holds_exactly_even_with_stale_cached_counts(tokenizer: Tokenizer) -> None:
    stale_world = [seg(20 + index, "world", PROSE, token_count=1) for index in range(4)]
    for budget in (150, 200, 300):
        result = assemble(request(world=stale_world, token_budget=budget), tokenizer)
        assert result.meta.tokens == tokenizer.count(result.prompt) <= budget
        assert not result.meta.over_budget


def test_precomputed_token_counts_are_used_instead_of_recounting(
    tokenizer: Tokenizer,
) -> None:
    honest = assemble(request(world=[seg(1, "world", PROSE)]), tokenizer).meta
    cached = assemble(request(world=[seg(1, "world", PROSE, token_count=1000)]), tokenizer).meta
    assert cached.tokens_estimated - honest.tokens_estimated == 1000 - tokenizer.count(PROSE)
    assert cached.tokens == honest.tokens


# Multi-byte text


def test_multibyte_text_is_never_split_when_trimmed(tokenizer: Tokenizer) -> None:
    text = "龍の門は閉ざされた🐉衛兵が夜通し見張る👩‍👩‍👧 " * 20
    full = assemble(full_request(state={"input": text}), tokenizer).meta.tokens
    for cut in range(1, 60, 3):
        result = assemble(full_request(state={"input": text}, token_budget=full - cut), tokenizer)
        kept = result.prompt.split("=== INPUT_BEGIN ===\n")[1].split("\n=== INPUT_END ===")[0]
        assert text.startswith(kept)
        assert result.meta.tokens <= full - cut


# Report


def test_meta_has_exactly_the_documented_keys_and_is_json_safe(tokenizer: Tokenizer) -> None:
    meta = assemble(budget_request(900), tokenizer).meta.to_dict()
    assert list(meta) == [
        "order",
        "segment_ids_by_scope",
        "tokens_estimated",
        "tokens",
        "token_budget",
        "npc_budget",
        "encoding",
        "over_budget",
        "truncated",
        "outcome",
        "layers",
        "npcs",
        "lints",
        "content_hash",
        "history",
        "lore",
    ]
    assert json.loads(json.dumps(meta)) == meta
    assert meta["order"] == list(SCOPES)
    assert list(meta["segment_ids_by_scope"]) == list(SCOPES)
    assert list(meta["layers"]) == list(SCOPES)
    assert meta["encoding"] == "cl100k_base"
    assert set(meta["truncated"][0]) == {
        "scope",
        "action",
        "tokens_before",
        "tokens_after",
        "segment_id",
        "npc",
        "reason",
        "explanation",
    }
    assert set(meta["layers"]["world"]) == {"status", "tokens", "segment_ids"}
    assert set(meta["npcs"][0]) == {"npc", "requested_tier", "tier", "status", "tokens"}


def test_meta_reports_tokens_before_truncation_and_the_exact_final_count(
    tokenizer: Tokenizer,
) -> None:
    untruncated = assemble(budget_request(100_000), tokenizer).meta.tokens
    result = assemble(budget_request(900), tokenizer)
    assert result.meta.tokens_estimated == untruncated
    assert result.meta.tokens == tokenizer.count(result.prompt) <= 900
    assert result.meta.token_budget == 900


def test_content_hash_is_the_sha256_of_the_prompt(tokenizer: Tokenizer) -> None:
    result = assemble(full_request(), tokenizer)
    digest = hashlib.sha256(result.prompt.encode("utf-8")).hexdigest()
    assert result.meta.content_hash == f"sha256:{digest}"


def test_segment_fates_cover_every_segment_considered(tokenizer: Tokenizer) -> None:
    result = assemble(dataclasses.replace(budget_request(500), history=None), tokenizer)
    fates = {(fate.scope, fate.id): fate.fate for fate in result.segments}
    assert fates[("core", 1)] == "included"
    assert fates[("entry", 30)] == "included"
    assert fates[("entry", 31)] == "dropped"
    assert fates[("npc", 60)] == "dropped"
    assert len(fates) == 11
    assert all(fate.title for fate in result.segments)


def test_request_lints_are_reported_in_meta(tokenizer: Tokenizer) -> None:
    result = assemble(
        request(
            rulesets=[Ruleset("empty", "Empty")],
            npcs=[npc("ida", tiers=(1,))],
            world=[seg(1, "world", PROSE)],
            first_turn=True,
            token_budget=30,
        ),
        tokenizer,
    )
    assert [(lint.code, lint.level) for lint in result.meta.lints] == [
        ("missing_ruleset_segment", "error"),
        ("missing_entry_segment", "error"),
        ("missing_entry_start", "warning"),
        ("npc_without_tier0", "warning"),
        ("segment_over_budget", "error"),
    ]
    assert result.meta.lints[-1].message.startswith("World segment #1 'The harbour master keeps")


def test_a_segment_over_its_budget_is_an_error_naming_it(tokenizer: Tokenizer) -> None:
    world = [seg(7, "world", PROSE * 4, title="Old wars"), seg(8, "world", "Small.")]
    marta = Npc("marta", "Marta Vell", 1, [seg(9, "npc", PROSE * 2, tier=1, title="Past")])
    result = assemble(
        request(world=world, npcs=[marta], token_budget=150, npc_budget=60), tokenizer
    )
    over = [lint for lint in result.meta.lints if lint.code == "segment_over_budget"]
    assert [lint.level for lint in over] == ["error", "error"]
    assert over[0].message.startswith("World segment #7 'Old wars' has ")
    assert "more than the whole 150-token budget: it is always left out" in over[0].message
    assert over[1].message.startswith("NPC segment #9 'Past' has ")
    assert "more than the 60-token NPC budget" in over[1].message
    assert result.meta.segment_ids_by_scope["world"] == [8]


# Determinism


def test_same_request_gives_the_same_bytes_whatever_the_input_order(
    tokenizer: Tokenizer,
) -> None:
    forward = budget_request(900)
    backward = dataclasses.replace(
        forward,
        core=list(reversed(forward.core)),
        world=list(reversed(forward.world)),
        entry=list(reversed(forward.entry)),
        state=dict(reversed(list(forward.state.items()))),
    )
    first, second = assemble(forward, tokenizer), assemble(backward, tokenizer)
    assert first.prompt == second.prompt
    assert first.meta.to_dict() == second.meta.to_dict()


def test_same_request_gives_the_same_bytes_in_another_process() -> None:
    script = (
        "from assembler import assemble, get_tokenizer\n"
        "from tests.assembler.builders import full_request\n"
        "r = full_request(state={'player': {'b': {'z': 1, 'a': [1, 2]}, 'a': 'x'}}, "
        "token_budget=80)\n"
        "print(assemble(r, get_tokenizer()).meta.content_hash)\n"
    )
    hashes = {
        subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2")
    }
    assert len(hashes) == 1


# Static content priced once (tuples, as promptadmin passes its cached content)


def frozen(request: AssemblyRequest) -> AssemblyRequest:
    """``request`` with every segment sequence a tuple, so its pricing can be reused."""
    return dataclasses.replace(
        request,
        core=tuple(request.core),
        rulesets=tuple(
            dataclasses.replace(ruleset, segments=tuple(ruleset.segments))
            for ruleset in request.rulesets
        ),
        world=tuple(request.world),
        entry=tuple(request.entry),
        entry_start=tuple(request.entry_start),
        npcs=tuple(dataclasses.replace(n, segments=tuple(n.segments)) for n in request.npcs),
    )


def report(result: AssemblyResult) -> tuple[str, dict[str, object], list[object]]:
    return result.prompt, result.meta.to_dict(), [fate.to_dict() for fate in result.segments]


@pytest.mark.parametrize(("token_budget", "npc_budget"), [(12000, 3000), (6000, 600), (2500, 300)])
def test_reused_pricing_gives_what_fresh_pricing_gives(
    tokenizer: Tokenizer, token_budget: int, npc_budget: int
) -> None:
    fresh = bench_request(tokenizer, token_budget, npc_budget)
    reused = frozen(fresh)
    expected = report(assemble(fresh, tokenizer))
    # The first call prices the tuples, the next ones reuse that, also on other turns.
    assert report(assemble(reused, tokenizer)) == expected
    assert report(assemble(reused, tokenizer)) == expected
    other_turn = dataclasses.replace(reused, state={**reused.state, "input": "I wait."})
    assert report(assemble(other_turn, tokenizer)) == report(
        assemble(dataclasses.replace(fresh, state=other_turn.state), tokenizer)
    )


def test_reused_pricing_follows_edited_content(tokenizer: Tokenizer) -> None:
    before = frozen(full_request(token_budget=10_000))
    assemble(before, tokenizer)
    edited = dataclasses.replace(
        before,
        core=(before.core[0], seg(2, "core", "An edited rule, much longer than before. " * 20)),
        npcs=(before.npcs[0], dataclasses.replace(before.npcs[1], segments=())),
    )
    result = assemble(edited, tokenizer)
    assert "An edited rule" in result.prompt
    assert result.meta.tokens == tokenizer.count(result.prompt)
    assert result.meta.segment_ids_by_scope["npc"] == [
        segment.id for segment in before.npcs[0].segments
    ]


def test_the_content_hash_is_the_prompts_when_its_leading_blocks_are_reused(
    tokenizer: Tokenizer,
) -> None:
    reused = frozen(bench_request(tokenizer, 12_000, 3_000))
    for token_budget, text in ((12_000, "I wait."), (12_000, "I run."), (3_000, "I run.")):
        turn = dataclasses.replace(
            reused, token_budget=token_budget, state={**reused.state, "input": text}
        )
        result = assemble(turn, tokenizer)
        digest = hashlib.sha256(result.prompt.encode("utf-8")).hexdigest()
        assert result.meta.content_hash == f"sha256:{digest}"


class CountingEncoding:
    """A tiktoken encoding that records every text it encodes."""

    def __init__(self, encoding: Any) -> None:
        self.encoding = encoding
        self.encoded: list[str] = []

    def encode_ordinary(self, text: str) -> list[int]:
        self.encoded.append(text)
        tokens: list[int] = self.encoding.encode_ordinary(text)
        return tokens

    def decode_single_token_bytes(self, token: int) -> bytes:
        return bytes(self.encoding.decode_single_token_bytes(token))


def test_a_new_dynamic_text_that_cannot_be_cut_is_encoded_once(tokenizer: Tokenizer) -> None:
    encoding = CountingEncoding(tokenizer._encoding)
    counting = Tokenizer(tokenizer.name, encoding)  # type: ignore[arg-type]
    fresh = bench_request(tokenizer, 12_000, 3_000)
    new_input = "I ask the harbour master about the ship with black sails."
    turn = dataclasses.replace(fresh, state={**fresh.state, "input": new_input})
    result = assemble(turn, counting)
    assert [text for text in encoding.encoded if new_input in text] == [
        block("input", new_input, "delimited")
    ]
    assert report(result) == report(assemble(turn, tokenizer))
    assert result.meta.tokens == result.meta.tokens_estimated == tokenizer.count(result.prompt)


def test_a_long_dynamic_text_that_fits_is_encoded_once(tokenizer: Tokenizer) -> None:
    # 4 KB of prose: at a token per byte (the most it could take) the prompt would be over
    # its budget, though it fits with room to spare.
    encoding = CountingEncoding(tokenizer._encoding)
    counting = Tokenizer(tokenizer.name, encoding)  # type: ignore[arg-type]
    fresh = bench_request(tokenizer, 12_000, 3_000)
    new_input = prose(random.Random(3), tokenizer, 1_200)[:4_000]
    without = assemble(dataclasses.replace(fresh, state={**fresh.state, "input": ""}), tokenizer)
    turn = dataclasses.replace(
        fresh,
        token_budget=without.meta.tokens + 2_000,
        state={**fresh.state, "input": new_input},
    )
    result = assemble(turn, counting)
    assert [text for text in encoding.encoded if new_input in text] == [
        block("input", new_input, "delimited")
    ]
    assert report(result) == report(assemble(turn, tokenizer))
    assert result.meta.tokens == result.meta.tokens_estimated == tokenizer.count(result.prompt)
    assert not result.meta.truncated


def test_a_dynamic_text_denser_than_guessed_is_still_cut_to_the_budget(
    tokenizer: Tokenizer,
) -> None:
    # Three tokens per four bytes (4,500 tokens), where a token per three bytes was
    # guessed (2,000): counting its block whole shows the prompt over budget, so the text
    # is counted on its own after all, and cut.
    fresh = bench_request(tokenizer, 12_000, 3_000)
    dragons = "🐉" * 1_500
    without = assemble(dataclasses.replace(fresh, state={**fresh.state, "input": ""}), tokenizer)
    budget = without.meta.tokens + 3_000
    turn = dataclasses.replace(fresh, token_budget=budget, state={**fresh.state, "input": dragons})
    result = assemble(turn, tokenizer)
    assert result.meta.tokens == tokenizer.count(result.prompt) <= budget
    assert result.meta.layers["input"].status == "trimmed"
    assert [change.key for change in result.meta.outcome.shortened] == ["layer:input"]


@pytest.mark.parametrize("block_format", ["delimited", "xml"])
def test_an_uncut_dynamic_layer_reports_the_exact_count_of_its_block(
    tokenizer: Tokenizer, block_format: str
) -> None:
    # Thirty line breaks at the join: longer than the window a join is priced on.
    text = "text" + "\n" * 30
    turn = request(
        core=[seg(1, "core", "Rules.")],
        state={"player": text},
        policy=Policy(block_format=block_format),  # type: ignore[arg-type]
    )
    result = assemble(turn, tokenizer)
    assert result.meta.layers["player"].tokens == tokenizer.count(
        block("player", text, block_format)  # type: ignore[arg-type]
    )
    assert result.meta.tokens == result.meta.tokens_estimated == tokenizer.count(result.prompt)


def test_a_text_priced_by_its_block_is_still_cut_when_a_stale_count_hid_the_need(
    tokenizer: Tokenizer,
) -> None:
    # The stale counts say the world is tiny: the input seems safe from any cut, and is
    # priced by its block; the exact count then shows the prompt over, and the policy
    # trims the input (now counted) and drops world segments as ever.
    stale_world = [seg(20 + index, "world", PROSE * 3, token_count=1) for index in range(4)]
    result = assemble(
        request(world=stale_world, state={"input": PROSE, "player": "Aster"}, token_budget=400),
        tokenizer,
    )
    assert steps(result) == [
        ("input", "trimmed", None),
        *[("world", "dropped", 23 - i) for i in range(2)],
    ]
    assert result.meta.tokens == tokenizer.count(result.prompt) <= 400


def test_a_scene_fitted_to_its_npc_budget_again_gives_the_same_steps_not_the_same_records(
    tokenizer: Tokenizer,
) -> None:
    # A token budget the prompt fits: every step is the NPC budget's.
    fresh = bench_request(tokenizer, 100_000, 300)
    reused = frozen(fresh)
    first = assemble(reused, tokenizer)
    again = assemble(
        dataclasses.replace(reused, state={**reused.state, "input": "I wait."}), tokenizer
    )
    npc_steps = [step for step in first.meta.truncated if step.scope == "npc"]
    assert npc_steps
    assert [step for step in again.meta.truncated if step.scope == "npc"] == npc_steps
    assert not {id(step) for step in again.meta.truncated} & {id(s) for s in first.meta.truncated}
    assert again.meta.npcs == first.meta.npcs
    assert report(assemble(reused, tokenizer)) == report(assemble(fresh, tokenizer))
    smaller = dataclasses.replace(reused, npc_budget=150)
    assert report(assemble(smaller, tokenizer)) == report(
        assemble(dataclasses.replace(fresh, npc_budget=150), tokenizer)
    )


def test_a_copied_step_keeps_every_field() -> None:
    values: dict[str, Any] = {
        field.name: f"value of {field.name}" for field in dataclasses.fields(TruncationStep)
    }
    step = TruncationStep(**values)
    copied = _copy_step(step)
    assert copied == step and copied is not step


def test_fates_are_worked_out_when_first_read(tokenizer: Tokenizer) -> None:
    result = assemble(full_request(), tokenizer)
    assert "segments" not in vars(result)
    included = {fate.id for fate in result.segments if fate.fate == "included"}
    assert included == {id_ for ids in result.meta.segment_ids_by_scope.values() for id_ in ids}
    assert result.segments is result.segments


# Putting back what fits once the prompt fits

DEFAULT_TOKEN_BUDGET = 8000  # promptadmin's default budgets
DEFAULT_NPC_BUDGET = 600


def dropped_ids(result: AssemblyResult) -> list[int]:
    return [fate.id for fate in result.segments if fate.fate == "dropped"]


def test_an_oversized_world_segment_is_the_only_thing_left_out(tokenizer: Tokenizer) -> None:
    # The defect: a 24,000-token paste saved active in a world emptied the entry. Everything
    # before it in the drop order went first and never came back: a 191-token prompt.
    normal = bench_request(tokenizer, DEFAULT_TOKEN_BUDGET, DEFAULT_NPC_BUDGET)
    paste = prose(random.Random(3), tokenizer, 24_400)
    oversized = seg(9_999, "world", paste, sort_order=2, title="Pasted chronicle")
    assert tokenizer.count(paste) >= 24_000
    with_paste = dataclasses.replace(normal, world=(*normal.world, oversized))

    expected = assemble(normal, tokenizer)
    result = assemble(with_paste, tokenizer)

    assert not any(step.scope != "npc" for step in expected.meta.truncated)
    assert result.prompt == expected.prompt
    assert result.meta.tokens == expected.meta.tokens > 6_000
    assert set(dropped_ids(result)) == {*dropped_ids(expected), 9_999}
    assert result.meta.layers["world"].status == "trimmed"
    assert all(result.meta.layers[scope].status == "included" for scope in ("entry", "input"))


def test_segments_dropped_before_the_one_that_made_room_are_put_back(
    tokenizer: Tokenizer,
) -> None:
    world = [
        seg(1, "world", "First.", sort_order=1),
        seg(2, "world", PROSE * 4, sort_order=2),
        seg(3, "world", "Third.", sort_order=3),
    ]
    without_2 = assemble(request(world=[world[0], world[2]]), tokenizer).meta.tokens
    result = assemble(request(world=world, token_budget=without_2), tokenizer)
    assert steps(result) == [
        ("world", "dropped", 3),
        ("world", "dropped", 2),
        ("world", "restored", 3),
    ]
    assert result.meta.segment_ids_by_scope["world"] == [1, 3]
    assert "First.\n\nThird." in result.prompt
    assert result.meta.tokens == tokenizer.count(result.prompt) == without_2
    assert dropped_ids(result) == [2]


def test_the_most_important_of_what_was_dropped_is_put_back_first(
    tokenizer: Tokenizer,
) -> None:
    # Entry segments go before world segments, so a world segment comes back first.
    entry = [seg(10, "entry", "An entry segment of about the same size as the next.")]
    world = [
        seg(20, "world", PROSE * 4, sort_order=1),
        seg(21, "world", "A world segment of about the same size as the last.", sort_order=2),
    ]
    room_for_one = assemble(request(world=[world[1]]), tokenizer).meta.tokens + 3
    result = assemble(request(world=world, entry=entry, token_budget=room_for_one), tokenizer)
    assert steps(result) == [
        ("entry", "dropped", 10),
        ("world", "dropped", 21),
        ("world", "dropped", 20),
        ("world", "restored", 21),
    ]
    assert result.meta.layers["entry"].status == "dropped"


def test_a_trimmed_dynamic_layer_gets_back_the_room_left(tokenizer: Tokenizer) -> None:
    long_input = "The player speaks at length. " * 40
    world = [seg(1, "world", PROSE * 12)]
    fits_input = assemble(request(state={"input": long_input}), tokenizer).meta.tokens
    result = assemble(
        request(world=world, state={"input": long_input}, token_budget=fits_input + 2),
        tokenizer,
    )
    assert steps(result) == [
        ("input", "trimmed", None),
        ("world", "dropped", 1),
        ("input", "restored", None),
    ]
    trimmed, _, restored = result.meta.truncated
    assert restored.tokens_before == trimmed.tokens_after
    assert restored.tokens_after == trimmed.tokens_before
    assert long_input.strip() in result.prompt
    assert result.meta.layers["input"].status == "included"


def test_npc_tiers_are_lowered_before_any_npc_is_dropped_for_the_token_budget(
    tokenizer: Tokenizer,
) -> None:
    npcs = [
        npc("ida", tiers=(0, 1), requested_tier=1, first_id=10),
        npc("bo", tiers=(0, 1), requested_tier=1, first_id=20),
    ]
    at_tier_0 = [npc("ida", first_id=10), npc("bo", first_id=20)]
    budget = assemble(request(npcs=at_tier_0), tokenizer).meta.tokens
    result = assemble(request(npcs=npcs, token_budget=budget), tokenizer)
    assert steps(result) == [("npc", "tier_lowered", "bo"), ("npc", "tier_lowered", "ida")]
    assert [report.status for report in result.meta.npcs] == ["lowered", "lowered"]
    assert "lowered from tier 1 to tier 0: prompt" in result.meta.truncated[0].reason


def test_an_npc_lowered_before_another_was_dropped_gets_its_tier_back(
    tokenizer: Tokenizer,
) -> None:
    ida = npc("ida", tiers=(0, 1), requested_tier=1, first_id=10)
    giant = Npc("wyrm", "Wyrm", 0, [seg(30, "npc", PROSE * 3)])
    only_ida = assemble(request(npcs=[ida]), tokenizer).meta.layers["npc"].tokens
    result = assemble(request(npcs=[ida, giant], npc_budget=only_ida), tokenizer)
    assert steps(result) == [
        ("npc", "tier_lowered", "ida"),
        ("npc", "npc_dropped", "wyrm"),
        ("npc", "restored", "ida"),
    ]
    assert [(report.tier, report.status) for report in result.meta.npcs] == [
        (1, "included"),
        (0, "dropped"),
    ]
    assert "ida detail at tier 1." in result.prompt
