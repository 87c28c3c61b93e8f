"""Benchmark history fitting against a single encode of the block it produces.

Run ``python -m benchmarks.history [--iterations N]``. It builds a conversation in
memory (400 messages of generated prose, about 20,000 tokens, token counts precomputed as
the database stores them, and a summary of the first 300) and fits it under three
budgets, each turn with a new user message, as in a game. Fitting is timed with and
without its final exact check, beside one ``encode_ordinary`` of the block. The target is
a fit without the check at most one encode (assembly then counts the prompt once).
"""

from __future__ import annotations

import argparse
import functools
import random
from collections.abc import Iterator

from assembler.history import HistoryFit, HistoryMessage, Role, SummaryText, fit_history
from assembler.tokens import Tokenizer, get_tokenizer
from benchmarks.assembler import measure

_WORDS = [
    *("the", "gate", "bridge", "river", "masons", "guild", "silver", "north", "winter"),
    *("tower", "road", "mill", "ledger", "captain", "harbour", "storm", "lantern", "salt"),
    *("iron", "letter", "council", "tide", "fog", "bell", "smith", "courier"),
]
_ENDINGS = [".", ".", ".", "?", "!"]

MESSAGES = 400
SUMMARIZED = 300

CASES = [
    ("recent only, wide", 100_000, False),
    ("summary + recent", 4_000, True),
    ("summary + few", 1_000, True),
]


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(6, 18))]
    if rng.random() < 0.3:
        words.insert(rng.randrange(len(words)), str(rng.randint(2, 900)))
    return " ".join(words).capitalize() + rng.choice(_ENDINGS)


def build_conversation(tokenizer: Tokenizer) -> tuple[list[HistoryMessage], SummaryText]:
    """The benchmark's messages (oldest first) and a summary of the first ones."""
    rng = random.Random(7)
    messages = []
    for position in range(1, MESSAGES + 1):
        role: Role = "user" if position % 2 else "assistant"
        sentences = rng.randint(1, 3) if role == "user" else rng.randint(2, 8)
        content = " ".join(_sentence(rng) for _ in range(sentences))
        messages.append(HistoryMessage(position, role, content, tokenizer.count(content)))
    summary = " ".join(_sentence(rng) for _ in range(40))
    return messages, SummaryText(summary, SUMMARIZED, tokenizer.count(summary))


def _turns(messages: list[HistoryMessage], count: int) -> Iterator[list[HistoryMessage]]:
    """The conversation, each time with a new user message at the end."""
    position = messages[-1].position
    for turn in range(count):
        yield [*messages, HistoryMessage(position + 1, "user", f"And then, on turn {turn}?")]


def _fit_next(
    turns: Iterator[list[HistoryMessage]],
    summary: SummaryText | None,
    budget: int,
    tokenizer: Tokenizer,
    exact_check: bool,
) -> HistoryFit:
    return fit_history(
        messages=next(turns),
        summary=summary,
        budget=budget,
        tokenizer=tokenizer,
        exact_check=exact_check,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=300, help="calls timed per case")
    args = parser.parse_args(argv)
    tokenizer = get_tokenizer()
    messages, summary = build_conversation(tokenizer)

    header = (
        f"{'case':<18} {'budget':>6} {'tokens':>6} {'shown':>5} | "
        f"{'priced ms':>9} {'exact ms':>8} {'encode ms':>9} | {'ratio':>5}"
    )
    print(header)
    print("-" * len(header))
    worst = 0.0
    for name, budget, with_summary in CASES:
        used = summary if with_summary else None
        result = fit_history(messages=messages, summary=used, budget=budget, tokenizer=tokenizer)
        count = args.iterations + 20
        priced, exact, encode = measure(
            [
                functools.partial(
                    _fit_next, _turns(messages, count), used, budget, tokenizer, False
                ),
                functools.partial(
                    _fit_next, _turns(messages, count), used, budget, tokenizer, True
                ),
                functools.partial(tokenizer.encode, result.text),
            ],
            args.iterations,
        )
        ratio = priced.p50_ms / encode.p50_ms
        worst = max(worst, ratio)
        print(
            f"{name:<18} {budget:>6} {result.tokens:>6} {len(result.positions):>5} | "
            f"{priced.p50_ms:>9.3f} {exact.p50_ms:>8.3f} {encode.p50_ms:>9.3f} | {ratio:>5.2f}"
        )
    print(
        f"\nratio = fit without the exact check p50 / encode p50 of the block; worst "
        f"{worst:.2f} (target 1)"
    )
    return 0 if worst <= 1 else 1


if __name__ == "__main__":
    raise SystemExit(main())
