"""Small builders for assembler tests: requests with sensible defaults."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from assembler import (
    AssemblyRequest,
    History,
    HistoryMessage,
    LoreBook,
    LoreEntry,
    LoreOptions,
    Npc,
    Policy,
    Ruleset,
    Segment,
    SummaryText,
)

PROSE = (
    "The harbour master keeps a ledger of every ship that enters the bay. "
    "Fog rolls in from the sea and muffles every sound. "
    "Gulls quarrel over scraps on the warehouse roofs. "
    "Somewhere a bell rings, slow and out of tune. "
)


def seg(id: int, scope: str, content: str | None = None, **fields: Any) -> Segment:
    """A segment whose default content names it, so tests can find it in the prompt."""
    return Segment(id, scope, content if content is not None else f"{scope} text {id}.", **fields)


def npc(slug: str, tiers: Sequence[int] = (0,), requested_tier: int = 0, first_id: int = 0) -> Npc:
    """An NPC with one segment per tier in ``tiers``, ids counting up from ``first_id``."""
    segments = [
        seg(first_id + index, "npc", f"{slug} detail at tier {tier}.", tier=tier)
        for index, tier in enumerate(tiers)
    ]
    return Npc(slug, slug.title(), requested_tier=requested_tier, segments=segments)


def request(
    *,
    core: Sequence[Segment] = (),
    rulesets: Sequence[Ruleset] = (),
    world: Sequence[Segment] = (),
    entry: Sequence[Segment] = (),
    entry_start: Sequence[Segment] = (),
    npcs: Sequence[Npc] = (),
    state: Mapping[str, Any] | None = None,
    first_turn: bool = False,
    token_budget: int = 100_000,
    npc_budget: int = 100_000,
    policy: Policy | None = None,
    strict: bool = False,
    history: History | None = None,
    lore_book: LoreBook | None = None,
    lore: LoreOptions | None = None,
) -> AssemblyRequest:
    return AssemblyRequest(
        core=list(core),
        rulesets=list(rulesets),
        world=list(world),
        entry=list(entry),
        entry_start=list(entry_start),
        npcs=list(npcs),
        state=dict(state or {}),
        first_turn=first_turn,
        token_budget=token_budget,
        npc_budget=npc_budget,
        policy=policy or Policy(),
        strict=strict,
        history=history,
        lore_book=lore_book,
        lore=lore or LoreOptions(),
    )


def conversation(
    turns: int = 10, *, budget: int = 100_000, summary: str | None = None, covers: int = 0
) -> History:
    """A conversation of ``turns`` messages alternating user and assistant (the newest a
    user message), each naming its position; with ``summary``, one covering ``covers``."""
    newest = covers + turns
    messages = [
        HistoryMessage(
            position,
            "user" if (newest - position) % 2 == 0 else "assistant",
            f"Message {position}: the scouts report on the river crossing number {position}.",
        )
        for position in range(covers + 1, covers + turns + 1)
    ]
    return History(
        messages=messages,
        summary=SummaryText(summary, covers) if summary is not None else None,
        budget=budget,
        conversation="quest",
        summary_id=7 if summary is not None else None,
    )


def full_request(**overrides: Any) -> AssemblyRequest:
    """Every layer filled: one or more segments each, two NPCs, a constant lore entry, a
    conversation's history, all four dynamic layers."""
    fields: dict[str, Any] = {
        "core": [seg(1, "core"), seg(2, "core")],
        "rulesets": [
            Ruleset("combat", "Combat", [seg(10, "ruleset")]),
            Ruleset("magic", "Magic", [seg(11, "ruleset")]),
        ],
        "world": [seg(20, "world"), seg(21, "world")],
        "entry": [seg(30, "entry")],
        "entry_start": [seg(40, "entry_start")],
        "npcs": [npc("ida", first_id=50), npc("bo", first_id=60)],
        "lore_book": LoreBook([LoreEntry(70, "Lore", "lore text 70.", constant=True)]),
        "history": conversation(2),
        "state": {
            "game_state": "game_state text.",
            "player": "player text.",
            "rng": "rng text.",
            "input": "input text.",
        },
        "first_turn": True,
    }
    fields.update(overrides)
    return request(**fields)
