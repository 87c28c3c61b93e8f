"""The assembler benchmark: its data is realistic and its runner reports every case."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest

from assembler import AssemblyResult, History, LoreBook, Tokenizer, assemble, get_tokenizer
from assembler.render import render_state
from benchmarks.assembler import CASES, main
from benchmarks.data import (
    LORE_ENTRIES,
    LORE_KEYS,
    LORE_SCANNED,
    build_request,
    lore_entries,
    lore_request,
    new_turns,
)
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
    assert "book built" in output
    assert "activation alone" in output


def test_lore_benchmark_world_and_turn_are_the_size_announced(tokenizer: Tokenizer) -> None:
    entries = lore_entries(tokenizer)
    assert len(entries) == LORE_ENTRIES
    assert sum(len(entry.keys) for entry in entries) == LORE_KEYS
    assert all(entry.token_count is not None for entry in entries)
    request = lore_request(tokenizer, 12_000, 3_000, LoreBook(entries))
    assert request.history is not None
    scanned = [
        *(render_state(request.state.get(scope)) for scope in ("input", "game_state", "player")),
        *(message.content for message in request.history.messages),
    ]
    assert sum(map(len, scanned)) == LORE_SCANNED
    # The turn triggers entries from every source and by recursion, and the lore layer
    # is filled to its budget.
    result = assemble(request, tokenizer)
    sources = {report.trigger.source for report in result.meta.lore}
    assert sources == {"constant", "input", "game_state", "history", "lore"}
    included = sum(report.status == "included" for report in result.meta.lore)
    assert 10 <= included < len(result.meta.lore)


# What the assembler returned for each benchmark case on its first two turns, with and
# without the benchmark conversation as history, and for the first turn under budgets in
# between: a hash of the prompt, the meta and every segment's fate. Work on the assembler's
# speed must leave every one of them unchanged.
PINNED_OUTPUTS: dict[str, str] = {
    "no truncation, turn 0, history None": "d4e5252393c3f150",
    "no truncation, turn 0, history 300": "8f5b4a53ae335714",
    "no truncation, turn 0, history 1500": "4e6eed63ab79d73c",
    "no truncation, turn 1, history None": "b4994cd48b635bfe",
    "no truncation, turn 1, history 300": "6acf56d821af10d8",
    "no truncation, turn 1, history 1500": "9c954ce5f1519618",
    "some truncation, turn 0, history None": "0d7499e1e272e865",
    "some truncation, turn 0, history 300": "b513beadda1d8208",
    "some truncation, turn 0, history 1500": "8293c7927dd958f8",
    "some truncation, turn 1, history None": "182bef6a4ab51c68",
    "some truncation, turn 1, history 300": "c6105eb318a9574f",
    "some truncation, turn 1, history 1500": "9d014f1c676aede6",
    "heavy truncation, turn 0, history None": "69c24cd7f47b45a4",
    "heavy truncation, turn 0, history 300": "68be4cea8f18a572",
    "heavy truncation, turn 0, history 1500": "fa97ba96f2f3ebb8",
    "heavy truncation, turn 1, history None": "3960f0523989c11e",
    "heavy truncation, turn 1, history 300": "359f69972437834b",
    "heavy truncation, turn 1, history 1500": "9a2887fa309231e4",
    "budget 1500": "c2f37d06f728a0c6",
    "budget 2000": "f68b78629602e091",
    "budget 2500": "3fe8309a371d5ed1",
    "budget 3000": "ebb0d0c97aa16fad",
    "budget 3500": "bb953e309bbdf2ea",
    "budget 4000": "9baccb5b77ac76b6",
    "budget 4500": "0fa87a47700c481e",
    "budget 5000": "7d3c60884352a456",
    "budget 5500": "b9ed33fbe1e0b559",
    "budget 6000": "0d7499e1e272e865",
    "budget 6500": "869eb7f9dc906af0",
    "budget 7000": "d74e9d54d2fc8376",
    "budget 7500": "0886af0b39da8883",
    "budget 8000": "9fbaa9dff43510d3",
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
