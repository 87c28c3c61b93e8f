from __future__ import annotations

import pytest

from assembler import Tokenizer, fit_history, get_tokenizer
from benchmarks.history import CASES, MESSAGES, SUMMARIZED, build_conversation, main


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return get_tokenizer()


def test_benchmark_conversation_is_long_with_counts_stored_and_a_summary(
    tokenizer: Tokenizer,
) -> None:
    messages, summary = build_conversation(tokenizer)
    assert len(messages) == MESSAGES
    assert all(message.token_count == tokenizer.count(message.content) for message in messages)
    assert summary.covers_through == SUMMARIZED
    full = fit_history(messages=messages, summary=None, budget=10**6, tokenizer=tokenizer)
    assert 15_000 <= full.tokens <= 25_000


def test_benchmark_cases_range_from_every_message_to_a_few(tokenizer: Tokenizer) -> None:
    messages, summary = build_conversation(tokenizer)
    shown = [
        len(
            fit_history(
                messages=messages,
                summary=summary if with_summary else None,
                budget=budget,
                tokenizer=tokenizer,
            ).positions
        )
        for _, budget, with_summary in CASES
    ]
    assert shown[0] == MESSAGES > shown[1] > shown[2] > 0


def test_benchmark_prints_a_row_per_case(capsys: pytest.CaptureFixture[str]) -> None:
    main(["--iterations", "2"])
    output = capsys.readouterr().out
    for name, _, _ in CASES:
        assert name in output
    assert "ratio" in output
