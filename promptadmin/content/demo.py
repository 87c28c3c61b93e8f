"""Demo content: a small but realistic game, loaded by ``manage.py seed_demo``."""

from __future__ import annotations

WORLDS = [
    {
        "slug": "iron-coast",
        "name": "The Iron Coast",
        "description": "A storm-battered shoreline of salvage towns and drowned foundries.",
    },
    {
        "slug": "verdant-reach",
        "name": "The Verdant Reach",
        "description": "An overgrown empire where the forest remembers every oath.",
    },
]

RULESETS = [
    {
        "slug": "narrative-core",
        "name": "Narrative rules",
        "description": "How the narrator speaks and paces scenes.",
    },
    {
        "slug": "combat-lite",
        "name": "Light combat",
        "description": "Quick, descriptive combat resolved with a single roll.",
    },
    {
        "slug": "mystery",
        "name": "Mystery and clues",
        "description": "Clue tracking and fair-play reveals.",
    },
]

ENTRIES = [
    {
        "slug": "drowned-bell",
        "name": "The Drowned Bell",
        "world": "iron-coast",
        "rulesets": ["narrative-core", "mystery"],
        "description": "Someone rings a bell that sank forty years ago.",
    },
    {
        "slug": "salvage-war",
        "name": "Salvage War",
        "world": "iron-coast",
        "rulesets": ["narrative-core", "combat-lite"],
        "description": "Two salvage crews fight over a foundry that surfaced at low tide.",
    },
    {
        "slug": "oath-grove",
        "name": "The Oath Grove",
        "world": "verdant-reach",
        "rulesets": ["mystery", "narrative-core", "combat-lite"],
        "description": "A broken oath has turned the grove against its keepers.",
    },
]

NPCS = [
    {"slug": "marta-vell", "name": "Marta Vell", "description": "Harbourmaster of Saltmouth."},
    {"slug": "old-cobb", "name": "Old Cobb", "description": "Retired bell-founder, half deaf."},
    {"slug": "sister-anwe", "name": "Sister Anwe", "description": "Keeper of the drowned chapel."},
    {"slug": "kestrel", "name": "Kestrel", "description": "Salvage captain with a grudge."},
    {"slug": "thorn-warden", "name": "The Thorn Warden", "description": "Spirit of the grove."},
    {"slug": "ivo-brand", "name": "Ivo Brand", "description": "Oathbreaker in hiding."},
]

# (key, scope, ref slug, sort_order, tier, title, content). The key makes the seed idempotent.
SEGMENTS: list[tuple[str, str, str | None, int, int, str, str]] = [
    (
        "core-voice",
        "core",
        None,
        10,
        0,
        "Narrator voice",
        "You are the narrator of an interactive story. Speak in the second person, present "
        "tense. Keep each reply under 200 words unless the player asks for more detail.",
    ),
    (
        "core-safety",
        "core",
        None,
        20,
        0,
        "Table manners",
        "Never decide what the player character thinks or feels. Offer choices through the "
        "world, not through menus. If the player steps outside the fiction, answer plainly.",
    ),
    (
        "core-format",
        "core",
        None,
        30,
        0,
        "Reply format",
        "End every reply with a short line that invites action. Do not use bullet lists in "
        "narration.",
    ),
    (
        "rs-narr-pacing",
        "ruleset",
        "narrative-core",
        10,
        0,
        "Pacing",
        "Alternate tension and release. After two scenes of danger, give the player a quiet "
        "moment with a character who wants something.",
    ),
    (
        "rs-narr-senses",
        "ruleset",
        "narrative-core",
        20,
        0,
        "Senses",
        "Describe each new place with one sound, one smell and one thing that moves.",
    ),
    (
        "rs-combat-roll",
        "ruleset",
        "combat-lite",
        10,
        0,
        "One roll",
        "Resolve a fight with a single d20 roll from the rng layer: 1-7 costly failure, 8-14 "
        "success with a price, 15-20 clean success. Describe the outcome, never the numbers.",
    ),
    (
        "rs-combat-stakes",
        "ruleset",
        "combat-lite",
        20,
        0,
        "Stakes first",
        "Before any roll, state what the player stands to lose in the fiction.",
    ),
    (
        "rs-mystery-clues",
        "ruleset",
        "mystery",
        10,
        0,
        "Three clues",
        "Every conclusion the player needs has at least three clues pointing at it. Mention a "
        "clue the first time the player could notice it, without pointing at it.",
    ),
    (
        "rs-mystery-fair",
        "ruleset",
        "mystery",
        20,
        0,
        "Fair play",
        "Never reveal the culprit before the player names them or the story reaches its end.",
    ),
    (
        "w-iron-tone",
        "world",
        "iron-coast",
        10,
        0,
        "Tone",
        "The Iron Coast is grey, wet and stubborn. People are blunt and kind in deeds rather "
        "than words. Rust stains everything; the sea takes what it is owed.",
    ),
    (
        "w-iron-history",
        "world",
        "iron-coast",
        20,
        0,
        "Old wars",
        "Forty years ago the Foundry Wars ended when the sea rose over the great works at "
        "Saltmouth. The towns now live by diving for what the water keeps.",
    ),
    (
        "w-iron-magic",
        "world",
        "iron-coast",
        30,
        0,
        "Tide-iron",
        "Iron that spent a year under the tide hums faintly and can hold a single spoken "
        "promise. Salvagers trade it quietly; the church calls it theft from the drowned.",
    ),
    (
        "w-verdant-tone",
        "world",
        "verdant-reach",
        10,
        0,
        "Tone",
        "The Verdant Reach is lush, humid and watchful. Courtesy is law. Roots crack the "
        "old imperial roads, and every tree is someone's ancestor.",
    ),
    (
        "w-verdant-oaths",
        "world",
        "verdant-reach",
        20,
        0,
        "Oaths",
        "An oath sworn under a living tree binds the swearer's family for seven generations. "
        "Breaking it wakes the tree.",
    ),
    (
        "e-bell-premise",
        "entry",
        "drowned-bell",
        10,
        0,
        "Premise",
        "Each night at the turn of the tide, the bell of the drowned chapel rings under the "
        "water. The harbourmaster wants it stopped before the fishing fleet refuses to sail.",
    ),
    (
        "e-bell-truth",
        "entry",
        "drowned-bell",
        20,
        0,
        "Hidden truth",
        "The truth: Old Cobb recast the bell with tide-iron to hold his dead wife's promise. "
        "The promise is trying to be kept.",
    ),
    (
        "es-bell-open",
        "entry_start",
        "drowned-bell",
        10,
        0,
        "Opening",
        "Open on the pier at dusk. The player hears the bell for the first time as Marta Vell "
        "finds them and asks for help.",
    ),
    (
        "e-salvage-premise",
        "entry",
        "salvage-war",
        10,
        0,
        "Premise",
        "A foundry surfaced at the lowest tide in a century. Kestrel's crew and the Saltmouth "
        "divers both claim it, and the tide returns in six hours.",
    ),
    (
        "es-salvage-open",
        "entry_start",
        "salvage-war",
        10,
        0,
        "Opening",
        "Open with the player waist-deep in cold water, a crowbar in hand, as the first shot "
        "rings off the foundry's chimney.",
    ),
    (
        "e-grove-premise",
        "entry",
        "oath-grove",
        10,
        0,
        "Premise",
        "The Oath Grove has closed its paths. Travellers vanish; the keepers blame a broken "
        "oath but no one admits to breaking one.",
    ),
    (
        "e-grove-truth",
        "entry",
        "oath-grove",
        20,
        0,
        "Hidden truth",
        "Ivo Brand swore to guard the grove and sold its heartwood. He hides in the keepers' "
        "own lodge.",
    ),
    (
        "es-grove-open",
        "entry_start",
        "oath-grove",
        10,
        0,
        "Opening",
        "Open at the grove's edge where the path ends in a wall of thorns that was not there "
        "yesterday.",
    ),
    (
        "npc-marta-0",
        "npc",
        "marta-vell",
        10,
        0,
        "Who she is",
        "Marta Vell, harbourmaster: fifties, weathered, speaks in short orders.",
    ),
    (
        "npc-marta-1",
        "npc",
        "marta-vell",
        10,
        1,
        "What she wants",
        "She wants the fleet sailing by the new moon and will pay in tide-iron, quietly.",
    ),
    (
        "npc-marta-2",
        "npc",
        "marta-vell",
        10,
        2,
        "Secret",
        "She dived the drowned chapel as a girl and heard the bell's promise. She told no one.",
    ),
    (
        "npc-cobb-0",
        "npc",
        "old-cobb",
        10,
        0,
        "Who he is",
        "Old Cobb, retired bell-founder: half deaf, gentle, smells of forge smoke.",
    ),
    (
        "npc-cobb-1",
        "npc",
        "old-cobb",
        10,
        1,
        "How he talks",
        "He answers the question he thought he heard, and hums when nervous.",
    ),
    (
        "npc-cobb-2",
        "npc",
        "old-cobb",
        10,
        2,
        "Secret",
        "He recast the bell with tide-iron to keep his wife's last promise: 'I will call you "
        "home.'",
    ),
    (
        "npc-anwe-0",
        "npc",
        "sister-anwe",
        10,
        0,
        "Who she is",
        "Sister Anwe, keeper of the drowned chapel: young, severe, quotes scripture of the sea.",
    ),
    (
        "npc-anwe-1",
        "npc",
        "sister-anwe",
        10,
        1,
        "What she wants",
        "She wants the bell raised and consecrated, and suspects the salvagers.",
    ),
    (
        "npc-kestrel-0",
        "npc",
        "kestrel",
        10,
        0,
        "Who she is",
        "Kestrel, salvage captain: wiry, loud, missing two fingers, loyal to her crew.",
    ),
    (
        "npc-kestrel-1",
        "npc",
        "kestrel",
        10,
        1,
        "Grudge",
        "The Saltmouth divers left her brother in a flooded shaft. She has not forgiven them.",
    ),
    (
        "npc-warden-0",
        "npc",
        "thorn-warden",
        10,
        0,
        "Who it is",
        "The Thorn Warden: the grove's spirit, speaking in rustles that form words slowly.",
    ),
    (
        "npc-warden-1",
        "npc",
        "thorn-warden",
        10,
        1,
        "What it wants",
        "It wants the stolen heartwood returned and the oathbreaker's name spoken aloud.",
    ),
    (
        "npc-warden-2",
        "npc",
        "thorn-warden",
        10,
        2,
        "Mercy",
        "If the oathbreaker confesses freely, it opens the paths and takes nothing more.",
    ),
    (
        "npc-ivo-0",
        "npc",
        "ivo-brand",
        10,
        0,
        "Who he is",
        "Ivo Brand, keeper of the lodge: charming, generous, always offering tea.",
    ),
    ("npc-ivo-1", "npc", "ivo-brand", 10, 1, "Tell", "He never sits with his back to a tree."),
]

# Content for the layers the caller supplies at run time: kept inactive, for the review.
LEGACY_SEGMENTS: list[tuple[str, str, str]] = [
    (
        "legacy-game-state",
        "game_state",
        "Current tide: {tide}. Fleet status: {fleet}. Bell rang {bell_count} times tonight.",
    ),
    (
        "legacy-player",
        "player",
        "The player is a diver from Saltmouth named {player_name} who owes Marta a favour.",
    ),
    ("legacy-rng", "rng", "Roll results this turn: {rolls}."),
    ("legacy-input", "input", "The player says: {input}"),
]
