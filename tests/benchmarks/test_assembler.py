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
    "no truncation, turn 0, history None": "4be3fcfbecefb367",
    "no truncation, turn 0, history 300": "7f9456735943835a",
    "no truncation, turn 0, history 1500": "526789aca59cb579",
    "no truncation, turn 1, history None": "e6ffb8b5c7231502",
    "no truncation, turn 1, history 300": "b65ffdc1293bfe84",
    "no truncation, turn 1, history 1500": "681588ef86926504",
    "some truncation, turn 0, history None": "1df6ba74bba2abf2",
    "some truncation, turn 0, history 300": "a0b5aadaea6a1b12",
    "some truncation, turn 0, history 1500": "a1f19161bb11d269",
    "some truncation, turn 1, history None": "9a2290703cc5849a",
    "some truncation, turn 1, history 300": "1067510025b83f2d",
    "some truncation, turn 1, history 1500": "93ce7032ce849b16",
    "heavy truncation, turn 0, history None": "db30b1c3f0b8fd76",
    "heavy truncation, turn 0, history 300": "80206ee15e0e2328",
    "heavy truncation, turn 0, history 1500": "79fb035e76a2b077",
    "heavy truncation, turn 1, history None": "3ccd0688d06dfaf8",
    "heavy truncation, turn 1, history 300": "3bbaa66f1ec4eb96",
    "heavy truncation, turn 1, history 1500": "2c4a0f1863010c8c",
    "budget 1500": "27fb02425caa321f",
    "budget 2000": "274dc05b876c72c6",
    "budget 2500": "74fbb6350b1c675b",
    "budget 3000": "87d53b6980252236",
    "budget 3500": "e121852d094f7fa1",
    "budget 4000": "ebf4dcd5bb8670d1",
    "budget 4500": "8ec8b2431820035c",
    "budget 5000": "ba81dd4c99632d26",
    "budget 5500": "07f0036006a98392",
    "budget 6000": "1df6ba74bba2abf2",
    "budget 6500": "73af98f4dac1b9d7",
    "budget 7000": "415a3d5a9347e714",
    "budget 7500": "4942e000e313a3d8",
    "budget 8000": "7c85aebf2c5713cb",
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
