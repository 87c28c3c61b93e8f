"""Benchmark assembly against a single encode of the prompt it produces.

Run ``python -m benchmarks.assembler [--iterations N]`` (``make bench-assembler``). It
assembles the benchmark entry (:func:`benchmarks.data.build_request`) under three budgets,
each turn with new player input. The target is assembly at most 3x one
``encode_ordinary`` of the final prompt.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from assembler.assembly import assemble
from assembler.request import AssemblyRequest
from assembler.result import AssemblyResult
from assembler.tokens import Tokenizer, get_tokenizer
from benchmarks.data import build_request, new_turns


def _assemble_next(turns: Iterator[AssemblyRequest], tokenizer: Tokenizer) -> AssemblyResult:
    return assemble(next(turns), tokenizer)


@dataclass(frozen=True)
class Timing:
    per_second: float
    p50_ms: float
    p99_ms: float

    @classmethod
    def of(cls, samples_ms: list[float]) -> Timing:
        ordered = sorted(samples_ms)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
        return cls(1000 / statistics.fmean(ordered), statistics.median(ordered), p99)


def measure(calls: list[Callable[[], object]], iterations: int) -> list[Timing]:
    """Per-call timings of each of ``calls``, after a short warm-up.

    The calls take turns within each iteration, so that load on the machine weighs on all
    of them alike and their ratio stays meaningful.
    """
    for _ in range(min(20, iterations)):
        for call in calls:
            call()
    samples: list[list[float]] = [[] for _ in calls]
    for _ in range(iterations):
        for call, timings in zip(calls, samples, strict=True):
            start = time.perf_counter_ns()
            call()
            timings.append((time.perf_counter_ns() - start) / 1e6)
    return [Timing.of(timings) for timings in samples]


CASES = [
    ("no truncation", 12_000, 3_000),
    ("some truncation", 6_000, 1_200),
    ("heavy truncation", 2_500, 400),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=500, help="calls timed per case")
    args = parser.parse_args(argv)
    tokenizer = get_tokenizer()

    header = (
        f"{'case':<17} {'tokens':>6} {'budget':>6} {'final':>6} {'steps':>5} | "
        f"{'assemble/s':>10} {'p50 ms':>7} {'p99 ms':>7} | "
        f"{'encode/s':>9} {'p50 ms':>7} {'p99 ms':>7} | {'ratio':>5}"
    )
    print(header)
    print("-" * len(header))
    worst = 0.0
    for name, token_budget, npc_budget in CASES:
        request = build_request(tokenizer, token_budget, npc_budget)
        result = assemble(request, tokenizer)
        prompt = result.prompt
        # Every turn brings new player input, as in a game: counts remembered from one
        # call cannot answer for the dynamic blocks of the next.
        turns = iter(new_turns(request, args.iterations + 20))
        assembly, encode = measure(
            [
                functools.partial(_assemble_next, turns, tokenizer),
                functools.partial(tokenizer.encode, prompt),
            ],
            args.iterations,
        )
        ratio = assembly.p50_ms / encode.p50_ms
        worst = max(worst, ratio)
        meta = result.meta
        print(
            f"{name:<17} {meta.tokens_estimated:>6} {token_budget:>6} {meta.tokens:>6} "
            f"{len(meta.truncated):>5} | "
            f"{assembly.per_second:>10.0f} {assembly.p50_ms:>7.3f} {assembly.p99_ms:>7.3f} | "
            f"{encode.per_second:>9.0f} {encode.p50_ms:>7.3f} {encode.p99_ms:>7.3f} | "
            f"{ratio:>5.2f}"
        )
    print(f"\nratio = assembly p50 / encode p50 of the final prompt; worst {worst:.2f} (target 3)")
    return 0 if worst <= 3 else 1


if __name__ == "__main__":
    raise SystemExit(main())
