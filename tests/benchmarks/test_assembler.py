"""The assembler benchmark: its data is realistic and its runner reports every case."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest

from assembler import AssemblyResult, History, LoreBook, Tokenizer, assemble, get_tokenizer
from assembler.lore import test_lore
from assembler.render import render_state
from assembler.request import LoreOptions
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


# The same for the lore benchmark (10,000 entries, 4 KB scanned): the three cases on their
# first two turns with the default lore options, a larger lore budget and no recursion,
# budgets from 2,000 to 14,000 tokens, and what test_lore reports for the turn's input.
PINNED_LORE_OUTPUTS: dict[str, str] = {
    "lore, no truncation, turn 0, {}": "4b7283c060aa589b",
    "lore, no truncation, turn 0, {'budget': 3000}": "533b124a8bf21c77",
    "lore, no truncation, turn 0, {'recursion': 0}": "2b8e4fd30d1ab6eb",
    "lore, no truncation, turn 1, {}": "0da79e9a96d29336",
    "lore, no truncation, turn 1, {'budget': 3000}": "2893a5ed4bbceaf0",
    "lore, no truncation, turn 1, {'recursion': 0}": "03804341f1aeb867",
    "lore, some truncation, turn 0, {}": "cdb8ff5e518c90fd",
    "lore, some truncation, turn 0, {'budget': 3000}": "5684273d77bd5b09",
    "lore, some truncation, turn 0, {'recursion': 0}": "e788921624a219eb",
    "lore, some truncation, turn 1, {}": "656e0e33b9009e02",
    "lore, some truncation, turn 1, {'budget': 3000}": "e7bac77c3b8a13b6",
    "lore, some truncation, turn 1, {'recursion': 0}": "fd4f1dd0c4f19fba",
    "lore, heavy truncation, turn 0, {}": "103068fbd51fe6ff",
    "lore, heavy truncation, turn 0, {'budget': 3000}": "8df4b45f6dc676a2",
    "lore, heavy truncation, turn 0, {'recursion': 0}": "bdc8931ad92cc33a",
    "lore, heavy truncation, turn 1, {}": "e06b5de75488fa9e",
    "lore, heavy truncation, turn 1, {'budget': 3000}": "8f3a2dcd88a2d5de",
    "lore, heavy truncation, turn 1, {'recursion': 0}": "753b267f6cbc35ba",
    "lore, budget 2000": "b2ada4f268932f84",
    "lore, budget 3000": "f2527b7174cc271c",
    "lore, budget 4000": "14de466c681ddc89",
    "lore, budget 5000": "dfd508b40b46394d",
    "lore, budget 6000": "ecf827364f4da86c",
    "lore, budget 7000": "21d016287c34cd76",
    "lore, budget 8000": "f8f1d87bbdbe9303",
    "lore, budget 9000": "8a6e0ed5037704c9",
    "lore, budget 10000": "e0818d1bd8ac8aa8",
    "lore, budget 11000": "59dd181a2d497b94",
    "lore, budget 12000": "4b7283c060aa589b",
    "lore, budget 13000": "1e69c23200c0414c",
    "lore, budget 14000": "490bfa8e100e276a",
    "test_lore": "4e46567f4acf645d",
}


@pytest.fixture(scope="module")
def lore_book(tokenizer: Tokenizer) -> LoreBook:
    return LoreBook(lore_entries(tokenizer))


def _lore_outputs(tokenizer: Tokenizer, book: LoreBook) -> dict[str, str]:
    found = {}
    for name, token_budget, npc_budget in CASES:
        request = lore_request(tokenizer, token_budget, npc_budget, book)
        for turn, each in enumerate([request, *new_turns(request, 1)]):
            for options in (LoreOptions(), LoreOptions(budget=3_000), LoreOptions(recursion=0)):
                found[f"lore, {name}, turn {turn}, {options.to_dict()}"] = _hash(
                    assemble(dataclasses.replace(each, lore=options), tokenizer)
                )
    for token_budget in range(2_000, 14_001, 1_000):
        request = lore_request(tokenizer, token_budget, token_budget // 4, book)
        found[f"lore, budget {token_budget}"] = _hash(assemble(request, tokenizer))
    text = str(lore_request(tokenizer, 12_000, 3_000, book).state["input"])
    tested = [activation.to_dict() for activation in test_lore(book, text)]
    found["test_lore"] = hashlib.sha256(json.dumps(tested).encode()).hexdigest()[:16]
    return found


def test_lore_benchmark_outputs_are_those_pinned(tokenizer: Tokenizer, lore_book: LoreBook) -> None:
    assert _lore_outputs(tokenizer, lore_book) == PINNED_LORE_OUTPUTS
