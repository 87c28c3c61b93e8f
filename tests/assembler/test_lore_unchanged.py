"""Without lore, prompts and truncation steps are byte for byte what they were before the
lore layer existed: the digests below were taken on the commit before it."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
from collections.abc import Iterator

import pytest

from assembler import (
    AssemblyRequest,
    AssemblyResult,
    History,
    HistoryMessage,
    LoreBook,
    LoreEntry,
    LoreOptions,
    Npc,
    Policy,
    Ruleset,
    Segment,
    Tokenizer,
    assemble,
)
from benchmarks.data import build_request

_CHUNKS = [
    *"abc .,!?;:'\"()-\n\t",
    " the gate",
    " stands open",
    "Fog rolls in",
    " bell",
    "\n\n",
    ". ",
    "...",
    "🐉",
    "龍の門",
    "é",
    "<|endoftext|>",
    "====",
]


def _text(rng: random.Random, most: int = 12) -> str:
    return "".join(rng.choice(_CHUNKS) for _ in range(rng.randrange(most)))


def _random_request(rng: random.Random) -> AssemblyRequest:
    ids = iter(range(1, 1000))

    def segments(scope: str, most: int = 3, tiers: bool = False) -> list[Segment]:
        return [
            Segment(
                next(ids),
                scope,
                _text(rng) + f"#{rng.randrange(100)}" + _text(rng),
                sort_order=rng.randrange(3),
                tier=rng.randrange(3) if tiers else 0,
            )
            for _ in range(rng.randrange(most + 1))
        ]

    state_values = [
        None,
        _text(rng, 40),
        {"hp": rng.randrange(30), "bag": ["rope", _text(rng)], "where": _text(rng)},
    ]
    history = None
    if rng.random() < 0.5:
        roles = ("user", "assistant")
        messages = [
            HistoryMessage(position, roles[position % 2], _text(rng, 30) or "Go on.")
            for position in range(1, rng.randrange(2, 8))
        ]
        history = History(messages=messages, summary=None, budget=rng.randrange(20, 400))
    return AssemblyRequest(
        core=segments("core", 2),
        rulesets=[Ruleset("rules", "Rules", segments("ruleset", 2))],
        world=segments("world"),
        entry=segments("entry"),
        entry_start=segments("entry_start", 2),
        npcs=[
            Npc(slug, slug.title(), rng.randrange(3), segments("npc", tiers=True))
            for slug in ("ida", "bo")[: rng.randrange(3)]
        ],
        state={
            scope: rng.choice(state_values) for scope in ("game_state", "player", "rng", "input")
        },
        first_turn=rng.random() < 0.5,
        token_budget=rng.randrange(0, 600),
        npc_budget=rng.randrange(0, 300),
        history=history,
        policy=Policy(block_format=rng.choice(["delimited", "xml", "markdown"])),
    )


def golden_cases(tokenizer: Tokenizer) -> Iterator[tuple[str, AssemblyRequest]]:
    """The benchmark entry under three budgets in each block format, then random requests."""
    for token_budget, npc_budget in ((12_000, 3_000), (6_000, 1_200), (2_500, 400)):
        base = build_request(tokenizer, token_budget, npc_budget)
        for block_format in ("delimited", "xml", "markdown"):
            request = dataclasses.replace(base, policy=Policy(block_format=block_format))
            yield f"bench-{token_budget}-{block_format}", request
    rng = random.Random(23)
    for index in range(150):
        yield f"random-{index}", _random_request(rng)


def digest_of(result: AssemblyResult) -> str:
    """The prompt, its exact count and the truncation steps, hashed."""
    steps = [step.to_dict() for step in result.meta.truncated]
    data = json.dumps([result.prompt, result.meta.tokens, steps], ensure_ascii=False)
    return hashlib.sha256(data.encode()).hexdigest()[:16]


# Taken on the parent of the commit that added the lore layer.
PINNED = {
    "bench-12000-delimited": "50c776fc5b8bf0d2",
    "bench-12000-xml": "3dc82e367598036c",
    "bench-12000-markdown": "cf7f6286dfa037ea",
    "bench-6000-delimited": "719b9ab1a36b3fb8",
    "bench-6000-xml": "31bae4680a4e1a3f",
    "bench-6000-markdown": "29d742cf674c94de",
    "bench-2500-delimited": "e07862d57c5023f4",
    "bench-2500-xml": "6e17082b9a5ac637",
    "bench-2500-markdown": "897ae9be784d5c39",
}
# The digests of the 150 random requests, one per line, hashed.
PINNED_RANDOM = "5885b1543b96bf5e"


def test_prompts_without_lore_are_byte_identical_to_before_lore(tokenizer: Tokenizer) -> None:
    found = {
        name: digest_of(assemble(request, tokenizer)) for name, request in golden_cases(tokenizer)
    }
    assert {name: found[name] for name in PINNED} == PINNED
    randoms = [digest for name, digest in found.items() if name.startswith("random-")]
    assert hashlib.sha256("\n".join(randoms).encode()).hexdigest()[:16] == PINNED_RANDOM


QUIET_BOOK = LoreBook(
    [
        LoreEntry(1, "Kraken", "The kraken sleeps under the bay.", keys=("kraken",)),
        LoreEntry(2, "Crown", "The crown was lost.", keys=("CROWN",), case_sensitive=True),
    ]
)


@pytest.mark.parametrize(
    "lore",
    [
        {"lore_book": LoreBook([])},
        {"lore_book": QUIET_BOOK},
        {
            "lore_book": LoreBook([LoreEntry(3, "Sea", "The sea.", constant=True)]),
            "lore": LoreOptions(enabled=False),
        },
    ],
    ids=["empty book", "nothing triggered", "lore disabled"],
)
def test_lore_that_adds_nothing_changes_nothing(
    tokenizer: Tokenizer, lore: dict[str, object]
) -> None:
    for name, request in golden_cases(tokenizer):
        if name.startswith("random-") and int(name.split("-")[1]) >= 40:
            break
        bare = assemble(request, tokenizer)
        with_lore = assemble(dataclasses.replace(request, **lore), tokenizer)  # type: ignore[arg-type]
        assert with_lore.prompt == bare.prompt, name
        assert with_lore.meta.to_dict() == bare.meta.to_dict(), name
        assert with_lore.meta.to_dict()["lore"] == []
        assert with_lore.meta.layers["lore"].status == "empty"
