"""The assembler benchmark: its data is realistic and its runner reports every case."""

from __future__ import annotations

import pytest

from assembler import Tokenizer, assemble, get_tokenizer
from benchmarks.assembler import CASES, main
from benchmarks.data import build_request


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
