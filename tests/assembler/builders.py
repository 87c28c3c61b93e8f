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


# Issue 21's scene at the cinder gate: with a budget of 700, an NPC budget of 60, Oren at
# tier 2 and Lysa at tier 1, the net result is three facts: the long war (larger than the
# whole budget) left out, Lysa left out, Oren at tier 1 instead of 2. The texts are kept
# here so that the database tests build the same scene through the services.
CINDER_GATE: dict[str, Any] = {
    "core": ("Narrator", "You narrate a dark fantasy game. " * 5),
    "ruleset": ("Dice", "Rolls use a d20. " * 10),
    "world": [
        ("Ash plains", "The ash plains are grey. " * 20),
        ("The long war", "The old war. " * 300),
    ],
    "entry": ("Gate", "The cinder gate is shut at night. " * 10),
    "npcs": {
        "oren-flint": (
            "Oren Flint",
            [
                (0, "Oren basics", "Oren Flint keeps the cinder gate."),
                (1, "Oren past", "He limps from an old burn and hates the smell of smoke."),
                (
                    2,
                    "Oren secret",
                    "He owes the smugglers a debt he can never repay, and they know it well; "
                    "they visit him every seventh night to remind him, and he pays in secrets "
                    "about the gate.",
                ),
            ],
        ),
        "lysa-quill": (
            "Lysa Quill",
            [
                (
                    0,
                    "Lysa basics",
                    "Lysa Quill sells maps at the gate, shouting prices over the crowd of "
                    "pilgrims and traders, and she remembers every face that ever cheated her "
                    "at the gate.",
                ),
                (1, "Lysa maps", "Her maps are always a little wrong, on purpose."),
            ],
        ),
    },
    "cast": [("oren-flint", 2), ("lysa-quill", 1)],
    "input": "I knock on the gate. " * 20,
    "token_budget": 700,
    "npc_budget": 60,
}


def cinder_gate(**overrides: Any) -> AssemblyRequest:
    """Issue 21's scene (:data:`CINDER_GATE`) as a request; the long war is segment #44."""
    scene = CINDER_GATE
    npcs_by_slug = {
        slug: Npc(
            slug,
            name,
            dict(scene["cast"])[slug],
            [
                Segment(100 * number + index, "npc", text, title=title, tier=tier)
                for index, (tier, title, text) in enumerate(rows)
            ],
        )
        for number, (slug, (name, rows)) in enumerate(scene["npcs"].items(), start=1)
    }
    values: dict[str, Any] = {
        "core": [Segment(1, "core", scene["core"][1], title=scene["core"][0])],
        "rulesets": [
            Ruleset("d20", "D20 rules", [Segment(2, "ruleset", scene["ruleset"][1], title="Dice")])
        ],
        "world": [
            Segment(43, "world", scene["world"][0][1], title=scene["world"][0][0], sort_order=1),
            Segment(44, "world", scene["world"][1][1], title=scene["world"][1][0], sort_order=2),
        ],
        "entry": [Segment(5, "entry", scene["entry"][1], title=scene["entry"][0])],
        "entry_start": [],
        "npcs": [npcs_by_slug[slug] for slug, _tier in scene["cast"]],
        "state": {"input": scene["input"]},
        "first_turn": False,
        "token_budget": scene["token_budget"],
        "npc_budget": scene["npc_budget"],
    }
    values.update(overrides)
    return AssemblyRequest(**values)
