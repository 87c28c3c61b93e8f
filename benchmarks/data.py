"""Benchmark data: a realistic game entry built from deterministic generated prose.

:func:`build_request` makes an entry in memory (about 60 segments across every layer, two
rulesets, six NPCs with tiers, dynamic state; about 8,000 tokens untruncated), with token
counts precomputed as the database caches them. :func:`prose` is shared with the API
benchmark (``scripts/bench_api.py``), which seeds a database with the same kind of text.
:func:`lore_entries` makes a world's lore (10,000 entries, 30,000 keys) and
:func:`lore_request` a turn that scans 4 KB of text against it.
"""

from __future__ import annotations

import dataclasses
import random

from assembler.history import HistoryMessage
from assembler.lore import LoreBook, LoreEntry
from assembler.render import render_state
from assembler.request import AssemblyRequest, History, Npc, Ruleset, Segment
from assembler.tokens import Tokenizer

_PEOPLE = [
    "the harbour master",
    "an old sailor with one boot",
    "the Duchess of Varn",
    "a tired courier",
    "the keeper of the salt archive",
    "two guards from the river gate",
    "a priest of the drowned god",
    "the smith's apprentice",
    "a merchant from the southern isles",
    "the captain of the night watch",
]
_ACTIONS = [
    "keeps a ledger of every ship that enters the bay",
    "has not slept since the bells rang twice at midnight",
    "trades rumours for dried fish and copper coins",
    "remembers the siege and will not speak of it",
    "owes money to half the taverns on Rope Street",
    "watches the lighthouse for signals from the wreckers",
    "was promised a seat on the council and never got it",
    "hides a letter sealed with black wax",
    "sells charms against fever that do not work",
    "knows which tunnels flood when the tide turns",
]
_PLACES = [
    "in the lower city",
    "near the customs house",
    "beyond the broken aqueduct",
    "along the quays",
    "under the chapel of lanterns",
    "at the edge of the marsh",
    "inside the old counting hall",
    "on the road to Highfold",
]
RULES = [
    "Describe only what the player character can perceive.",
    "Never decide the player's actions, words or feelings for them.",
    "Keep each reply under three short paragraphs unless the player asks for more.",
    "When a roll is given, narrate the outcome it implies without naming the number.",
    "Non-player characters speak in their own voice and pursue their own goals.",
    "Violence has consequences: wounds linger, and the watch investigates.",
    "Prices are in copper, silver and gold; ten of one make one of the next.",
    "If the player attempts something impossible, say why it fails in the fiction.",
]
_MOODS = [
    "Fog rolls in from the sea and muffles every sound.",
    "The smell of tar and wet rope hangs over everything.",
    "Gulls quarrel over scraps on the warehouse roofs.",
    "Somewhere a bell rings, slow and out of tune.",
    "Rain has turned the cobbles slick and black.",
    "Lamplight flickers in the windows of the tavern.",
]


def _sentence(rng: random.Random) -> str:
    kind = rng.randrange(4)
    if kind == 0:
        sentence = f"{rng.choice(_PEOPLE)} {rng.choice(_ACTIONS)} {rng.choice(_PLACES)}."
        return sentence[0].upper() + sentence[1:]
    if kind == 1:
        return rng.choice(_MOODS)
    if kind == 2:
        first, second = rng.sample(_PEOPLE, 2)
        sentence = f"{first} distrusts {second}, because {second} {rng.choice(_ACTIONS)}."
        return sentence[0].upper() + sentence[1:]
    number = rng.randrange(3, 400)
    return f"There are {number} steps from the quay to the gate {rng.choice(_PLACES)}."


def prose(rng: random.Random, tokenizer: Tokenizer, tokens: int) -> str:
    """Deterministic English prose of about ``tokens`` tokens, in short paragraphs."""
    paragraphs: list[str] = []
    total = 0
    while total < tokens:
        paragraph = " ".join(_sentence(rng) for _ in range(rng.randrange(2, 6)))
        paragraphs.append(paragraph)
        total += tokenizer.count(paragraph) + 1
    return "\n".join(paragraphs)


def build_request(
    tokenizer: Tokenizer, token_budget: int, npc_budget: int, seed: int = 7
) -> AssemblyRequest:
    """The benchmark entry under the given budgets (same content for every seed use)."""
    rng = random.Random(seed)
    ids = iter(range(1, 10_000))

    def segment(scope: str, size: int, *, text: str = "", tier: int = 0) -> Segment:
        content = text or prose(rng, tokenizer, size)
        return Segment(
            next(ids),
            scope,
            content,
            sort_order=rng.randrange(5),
            tier=tier,
            token_count=tokenizer.count(content),
        )

    # Tuples, as promptadmin passes its cached content: the assembler prices static content
    # once and reuses it turn after turn.
    core = tuple(segment("core", 150) for _ in range(4))
    rulesets = tuple(
        Ruleset(
            slug,
            slug.title(),
            tuple(segment("ruleset", 0, text=" ".join(rng.sample(RULES, 4))) for _ in range(4)),
        )
        for slug in ("narration", "combat")
    )
    world = tuple(segment("world", rng.randrange(110, 190)) for _ in range(14))
    entry = tuple(segment("entry", rng.randrange(100, 150)) for _ in range(8))
    entry_start = tuple(segment("entry_start", 120) for _ in range(3))
    npcs = [
        Npc(
            f"npc-{index}",
            name,
            requested_tier=tier,
            segments=tuple(segment("npc", 70, tier=t) for t in (0, 0, 1, 2)),
        )
        for index, (name, tier) in enumerate(
            [
                ("Marra", 2),
                ("Old Tobin", 2),
                ("Sister Vell", 1),
                ("Kest", 2),
                ("Ivo", 1),
                ("Dun", 0),
            ]
        )
    ]
    state: dict[str, str | dict[str, object] | None] = {
        "game_state": {
            "day": 3,
            "hour": "dusk",
            "weather": "fog",
            "alarm": False,
            "quests": {"salt_archive": "open", "black_wax_letter": "found"},
            "location": "customs house, second floor",
        },
        "player": {
            "name": "Aster",
            "hp": 14,
            "max_hp": 20,
            "inventory": ["rope", "lantern", "forged permit", "3 silver"],
            "reputation": {"watch": -1, "dockers": 2},
        },
        "rng": "d20: 13, d20: 4, d6: 5",
        "input": prose(rng, tokenizer, 260),
    }
    return AssemblyRequest(
        core=core,
        rulesets=rulesets,
        world=world,
        entry=entry,
        entry_start=entry_start,
        npcs=npcs,
        state=state,
        first_turn=True,
        token_budget=token_budget,
        npc_budget=npc_budget,
    )


def new_turns(request: AssemblyRequest, count: int) -> list[AssemblyRequest]:
    """``count`` copies of ``request``, each with player input of its own."""
    state = dict(request.state)
    text = str(state.get("input") or "")
    return [
        dataclasses.replace(request, state={**state, "input": f"{text} (turn {turn})"})
        for turn in range(count)
    ]


LORE_ENTRIES = 10_000
LORE_KEYS = 30_000
LORE_SCANNED = 4096
"""The lore case: entries and keys in the world, characters of text scanned per turn."""

_SYLLABLES = [
    *("ka", "ro", "mi", "ve", "tal", "dun", "sha", "bel", "or", "im", "gre", "tho", "wyn"),
    *("ast", "el", "mar", "quen", "dra", "los", "fen", "hal", "ith", "cor", "ul", "zan"),
]
_KINDS = ["Keep", "Ford", "Hollow", "Order", "Pact", "Crown", "Well", "Gate", "Reach", "Vow"]
# Words of the benchmark prose that some entries are keyed on, so a turn's text triggers a
# few entries directly, as a game's does.
_STORY_KEYS = [
    "bell",
    "lighthouse",
    "harbour master",
    "salt archive",
    "customs house",
    "Rope Street",
    "black wax",
    "night watch",
    "drowned god",
    "Highfold",
]


def _name(rng: random.Random) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(rng.randrange(2, 4))).title()


def lore_entries(
    tokenizer: Tokenizer, entries: int = LORE_ENTRIES, seed: int = 11
) -> list[LoreEntry]:
    """A world's lore: ``entries`` entries of three keys each (a name of its own, the name
    with a kind, a variant; one entry in 200 keyed on a word of the benchmark prose instead), 2 to
    5 sentences each, a third naming another entry (for recursion), one in ten in one of
    40 groups, three constant. Token counts are cached, as the database caches them."""
    rng = random.Random(seed)
    names: list[str] = []
    taken: set[str] = set()
    made = []
    for number in range(entries):
        name = _name(rng)
        while name in taken:
            name = _name(rng)
        names.append(name)
        taken.add(name)
        keys = [name, f"{name} {rng.choice(_KINDS)}", f"{name}'s {rng.choice(_KINDS).lower()}"]
        if number % 200 == 7:
            keys[2] = _STORY_KEYS[(number // 200) % len(_STORY_KEYS)]
        content = " ".join(_sentence(rng) for _ in range(rng.randrange(2, 6)))
        if names[:-1] and rng.random() < 0.3:
            content += f" It is bound to {rng.choice(names[:-1])}."
        made.append(
            LoreEntry(
                id=number + 1,
                title=f"{name} {rng.choice(_KINDS)}",
                content=f"{name}: {content}",
                keys=tuple(keys),
                priority=rng.randrange(10),
                group=f"faction-{rng.randrange(40)}" if rng.random() < 0.1 else None,
                constant=number < 3,
                token_count=tokenizer.count(f"{name}: {content}"),
            )
        )
    return made


def lore_request(
    tokenizer: Tokenizer, token_budget: int, npc_budget: int, book: LoreBook
) -> AssemblyRequest:
    """The benchmark entry (:func:`build_request`) with the lore ``book``, four history
    messages and an input that together with the game state and player make
    :data:`LORE_SCANNED` characters of text to scan; the input names six entries."""
    request = build_request(tokenizer, token_budget, npc_budget)
    rng = random.Random(5)
    texts = [prose(rng, tokenizer, 90) for _ in range(4)]
    messages = [
        HistoryMessage(
            position, "user" if position % 2 else "assistant", text, tokenizer.count(text)
        )
        for position, text in enumerate(texts, start=1)
    ]
    named = [book.entries[index].keys[0] for index in (40, 400, 1200, 3000, 6000, 9000)]
    asked = f" You ask about {', '.join(named[:-1])} and {named[-1]}."
    state = dict(request.state)
    scanned = sum(len(m.content) for m in messages) + len(asked)
    scanned += sum(len(render_state(state.get(key))) for key in ("game_state", "player"))
    rest = prose(rng, tokenizer, LORE_SCANNED // 3)
    state["input"] = rest[: max(0, LORE_SCANNED - scanned)].rstrip() + asked
    return dataclasses.replace(
        request,
        state=state,
        history=History(messages, None, budget=2_000, conversation="bench"),
        lore_book=book,
    )
