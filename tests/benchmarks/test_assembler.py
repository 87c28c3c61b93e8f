"""The assembler benchmark: its data is realistic and its runner reports every case."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest

from assembler import AssemblyResult, History, Tokenizer, assemble, get_tokenizer
from benchmarks.assembler import CASES, main
from benchmarks.data import build_request, new_turns
from benchmarks.history import build_conversation


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return get_tokenizer()


def test_benchmark_entry_is_realistic_in_size(tokenizer: Tokenizer) -> None:
    request = build_request(tokenizer, token_budget=100_000, npc_budget=100_000)
    segments = [
        *request.core,
        *(segment for ruleset in request.rulesets for segment in ruleset.segments),
        *request.world,
        *request.entry,
        *request.entry_start,
        *(segment for npc in request.npcs for segment in npc.segments),
    ]
    assert 55 <= len(segments) <= 65
    assert len(request.npcs) == 6
    assert all(segment.token_count is not None for segment in segments)
    assert 7_500 <= assemble(request, tokenizer).meta.tokens <= 8_500


def test_benchmark_cases_range_from_no_truncation_to_heavy(tokenizer: Tokenizer) -> None:
    steps = [
        len(assemble(build_request(tokenizer, budget, npcs), tokenizer).meta.truncated)
        for _, budget, npcs in CASES
    ]
    assert steps[0] == 0 < steps[1] < steps[2]


def test_benchmark_prints_a_row_per_case(capsys: pytest.CaptureFixture[str]) -> None:
    main(["--iterations", "2"])
    output = capsys.readouterr().out
    for name, _, _ in CASES:
        assert name in output
    assert "ratio" in output


# What the assembler returned for each benchmark case on its first two turns, with and
# without the benchmark conversation as history, and for the first turn under budgets in
# between: a hash of the prompt, the meta and every segment's fate. Work on the assembler's
# speed must leave every one of them unchanged.
PINNED_OUTPUTS: dict[str, str] = {
    "no truncation, turn 0, history None": "df996029bb3a3f55",
    "no truncation, turn 0, history 300": "2d4f25b950fe91e0",
    "no truncation, turn 0, history 1500": "2277f7552fef6bd6",
    "no truncation, turn 1, history None": "908e1204b13ad8b4",
    "no truncation, turn 1, history 300": "72d54d3598bbc501",
    "no truncation, turn 1, history 1500": "b15045f42649c27f",
    "some truncation, turn 0, history None": "0d559ffdd5a97938",
    "some truncation, turn 0, history 300": "d4e47f6316cfbcf9",
    "some truncation, turn 0, history 1500": "07685c4bcf3f3f29",
    "some truncation, turn 1, history None": "60169db32a90ae76",
    "some truncation, turn 1, history 300": "8d6c089db11040be",
    "some truncation, turn 1, history 1500": "b3716a64928f9ce4",
    "heavy truncation, turn 0, history None": "99063cb23fa1aab5",
    "heavy truncation, turn 0, history 300": "3fe0bd9b3c0b0fa7",
    "heavy truncation, turn 0, history 1500": "6c6a8e29c7cbd304",
    "heavy truncation, turn 1, history None": "5655ded85d0bd773",
    "heavy truncation, turn 1, history 300": "06d88a67d24872d0",
    "heavy truncation, turn 1, history 1500": "dbcbb28c94db5f99",
    "budget 1500": "0233c87aee6501bd",
    "budget 2000": "181ee9cace9b2b5f",
    "budget 2500": "4c70858095910d45",
    "budget 3000": "ef7fcc5709abe488",
    "budget 3500": "c5ed3284a02182e8",
    "budget 4000": "2fbb67a37a72ccb8",
    "budget 4500": "265e0af64ea531f9",
    "budget 5000": "755cc2ca3b0661cf",
    "budget 5500": "774285c45aa34894",
    "budget 6000": "0d559ffdd5a97938",
    "budget 6500": "ee428fc6385e4464",
    "budget 7000": "ecdf4ba2f6e837d1",
    "budget 7500": "1b45caf873c62e2f",
    "budget 8000": "75a87ab37e7fd529",
}


def _hash(result: AssemblyResult) -> str:
    output = {
        "prompt": result.prompt,
        "meta": result.meta.to_dict(),
        "segments": [fate.to_dict() for fate in result.segments],
    }
    return hashlib.sha256(json.dumps(output, sort_keys=True).encode()).hexdigest()[:16]


def _outputs(tokenizer: Tokenizer) -> dict[str, str]:
    messages, summary = build_conversation(tokenizer)
    found = {}
    for name, token_budget, npc_budget in CASES:
        request = build_request(tokenizer, token_budget, npc_budget)
        for turn, each in enumerate([request, *new_turns(request, 1)]):
            for history_budget in (None, 300, 1_500):
                if history_budget is not None:
                    history = History(messages, summary, history_budget, "bench", 1)
                    each = dataclasses.replace(each, history=history)
                found[f"{name}, turn {turn}, history {history_budget}"] = _hash(
                    assemble(each, tokenizer)
                )
    for token_budget in range(1_500, 8_001, 500):
        request = build_request(tokenizer, token_budget, token_budget // 5)
        found[f"budget {token_budget}"] = _hash(assemble(request, tokenizer))
    return found


def test_benchmark_outputs_are_those_pinned(tokenizer: Tokenizer) -> None:
    assert _outputs(tokenizer) == PINNED_OUTPUTS
