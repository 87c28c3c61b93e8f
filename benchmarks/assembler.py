"""Benchmark assembly against a single encode of the prompt it produces, and lore.

Run ``python -m benchmarks.assembler [--iterations N]`` (``make bench-assembler``). It
assembles the benchmark entry (:func:`benchmarks.data.build_request`) under three budgets,
each turn with new player input. The target is assembly at most 3x one
``encode_ordinary`` of the final prompt.

Then lore, with a world of 10,000 entries and 30,000 keys and 4 KB of text scanned per
turn (:func:`benchmarks.data.lore_request`): the time to build the book (once per bundle
of content), lore activation alone (target: under 0.5 ms at p50) and the same three
assemblies with that lore, against the same assemblies without it.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from assembler import lore
from assembler.assembly import assemble
from assembler.lore import LoreActivation, LoreBook
from assembler.render import render_state
from assembler.request import AssemblyRequest
from assembler.result import AssemblyResult
from assembler.tokens import Tokenizer, get_tokenizer
from benchmarks.data import (
    LORE_ENTRIES,
    LORE_KEYS,
    LORE_SCANNED,
    build_request,
    lore_entries,
    lore_request,
    new_turns,
)


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
    activation_ms = bench_lore(tokenizer, args.iterations)
    return 0 if worst <= 3 and activation_ms <= ACTIVATION_TARGET_MS else 1


ACTIVATION_TARGET_MS = 0.5


def _activate_next(book: LoreBook, turns: Iterator[AssemblyRequest]) -> list[LoreActivation]:
    """Lore activation as assembly does it, for the next turn (its texts rendered)."""
    request = next(turns)
    assert request.history is not None
    texts = lore.scanned_texts(
        input=render_state(request.state.get("input")),
        game_state=render_state(request.state.get("game_state")),
        player=render_state(request.state.get("player")),
        history=request.history.messages,
        scan_depth=request.lore.scan_depth,
    )
    return lore.activate(book, texts, recursion=request.lore.recursion)


def bench_lore(tokenizer: Tokenizer, iterations: int) -> float:
    """Print the lore figures; return activation's p50 in milliseconds."""
    entries = lore_entries(tokenizer)
    keys = sum(len(entry.keys) for entry in entries)
    builds = []
    for _ in range(3):
        start = time.perf_counter_ns()
        book = LoreBook(entries)
        builds.append((time.perf_counter_ns() - start) / 1e6)
    print(
        f"\nlore: {len(entries):,} entries, {keys:,} keys in the world; "
        f"{LORE_SCANNED:,} characters scanned a turn"
    )
    print(f"book built (once per bundle): {min(builds):.0f} ms (best of 3)")
    first = lore_request(tokenizer, CASES[0][1], CASES[0][2], book)
    activated = _activate_next(book, iter([first]))
    sources: dict[str, int] = {}
    for activation in activated:
        sources[activation.trigger.source] = sources.get(activation.trigger.source, 0) + 1
    turns = iter(new_turns(first, iterations + 20))
    [activation] = measure([functools.partial(_activate_next, book, turns)], iterations)
    print(
        f"activation alone: {len(activated)} entries triggered "
        f"({', '.join(f'{count} {source}' for source, count in sources.items())}); "
        f"{activation.per_second:.0f}/s, p50 {activation.p50_ms:.3f} ms, "
        f"p99 {activation.p99_ms:.3f} ms (target p50 {ACTIVATION_TARGET_MS})"
    )
    header = (
        f"{'case':<17} {'final':>6} {'lore in':>7} | {'without/s':>9} {'p50 ms':>7} | "
        f"{'with lore/s':>11} {'p50 ms':>7} {'p99 ms':>7} | {'ratio':>5}"
    )
    print(header)
    print("-" * len(header))
    for name, token_budget, npc_budget in CASES:
        request = lore_request(tokenizer, token_budget, npc_budget, book)
        result = assemble(request, tokenizer)
        with_lore = iter(new_turns(request, iterations + 20))
        without = iter(new_turns(dataclasses.replace(request, lore_book=None), iterations + 20))
        bare, lored = measure(
            [
                functools.partial(_assemble_next, without, tokenizer),
                functools.partial(_assemble_next, with_lore, tokenizer),
            ],
            iterations,
        )
        included = sum(report.status == "included" for report in result.meta.lore)
        print(
            f"{name:<17} {result.meta.tokens:>6} {included:>7} | "
            f"{bare.per_second:>9.0f} {bare.p50_ms:>7.3f} | "
            f"{lored.per_second:>11.0f} {lored.p50_ms:>7.3f} {lored.p99_ms:>7.3f} | "
            f"{lored.p50_ms / bare.p50_ms:>5.2f}"
        )
    print("ratio = p50 with lore / p50 without (same entry, history and input)")
    assert len(entries) == LORE_ENTRIES and keys == LORE_KEYS
    return activation.p50_ms


if __name__ == "__main__":
    raise SystemExit(main())
