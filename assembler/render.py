"""How a prompt is laid out as text.

A prompt is its non-empty layers, in order, each framed as a block. Separators:

- blocks are joined by a blank line (:data:`BLOCK_SEPARATOR`);
- a block's opening line, its body and its closing line (if the format has one) are
  joined by a line break (:data:`LINE_SEPARATOR`);
- inside a body, segments are joined by a blank line (:data:`ITEM_SEPARATOR`);
- in the NPC block each NPC is a heading line ``[NPC: Name]``, a line break, then its
  segments; NPCs are joined by a blank line.

Segment text is emitted exactly as written. There is no trailing newline.

>>> print(block("world", "The north is cold.", "delimited"))
=== WORLD_BEGIN ===
The north is cold.
=== WORLD_END ===
>>> print(block("entry_start", "You wake up.", "xml"))
<entry_start>
You wake up.
</entry_start>
>>> print(block("npc", "[NPC: Ida]\\nA smith.", "markdown"))
## NPCs
[NPC: Ida]
A smith.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from assembler.request import BlockFormat, StateValue

BLOCK_SEPARATOR = "\n\n"
LINE_SEPARATOR = "\n"
ITEM_SEPARATOR = "\n\n"

LAYER_TITLES = {
    # How each layer is named for people: markdown headings, and the studio.
    "core": "Core",
    "ruleset": "Ruleset",
    "world": "World",
    "entry": "Entry",
    "entry_start": "Entry start",
    "npc": "NPCs",
    "lore": "Lore",
    "history": "Conversation history",
    "game_state": "Game state",
    "player": "Player",
    "rng": "RNG",
    "input": "Input",
}


def block_open(scope: str, block_format: BlockFormat) -> str:
    """The line that opens block ``scope``.

    >>> block_open("entry_start", "delimited"), block_open("game_state", "markdown")
    ('=== ENTRY_START_BEGIN ===', '## Game state')
    """
    if block_format == "xml":
        return f"<{scope}>"
    if block_format == "markdown":
        return f"## {LAYER_TITLES[scope]}"
    return f"=== {scope.upper()}_BEGIN ==="


def block_close(scope: str, block_format: BlockFormat) -> str | None:
    """The line that closes block ``scope``, or None: markdown sections need none."""
    if block_format == "xml":
        return f"</{scope}>"
    if block_format == "markdown":
        return None
    return f"=== {scope.upper()}_END ==="


def blocks_join_on_token_boundaries(block_format: BlockFormat) -> bool:
    """Whether a prompt's exact count is its blocks' exact counts plus a fixed join cost.

    True where every block ends with a closing line and starts with an opening line that
    we write: a delimited block ends with ``" ==="`` and an xml block with ``">"``, a run
    of punctuation that absorbs the blank line after it into one pre-token of the
    tokenizer, and the next block's ``"==="`` or ``"<"`` starts a pre-token of its own. So
    no token spans two blocks whatever their content. A markdown block ends with the
    author's text, which may merge with what follows: there, count the whole prompt.

    >>> blocks_join_on_token_boundaries("delimited"), blocks_join_on_token_boundaries("markdown")
    (True, False)
    """
    return block_format != "markdown"


def block(scope: str, body: str, block_format: BlockFormat) -> str:
    """``body`` framed as block ``scope``."""
    close = block_close(scope, block_format)
    text = block_open(scope, block_format) + LINE_SEPARATOR + body
    return text if close is None else text + LINE_SEPARATOR + close


def npc_heading(name: str) -> str:
    """The line that introduces an NPC's segments.

    >>> npc_heading("Ida the smith")
    '[NPC: Ida the smith]'
    """
    return f"[NPC: {name}]"


def render_state(value: StateValue) -> str:
    """A dynamic layer as text.

    Text is used as is (whitespace-only text counts as empty). A JSON object becomes
    ``key: value`` lines in sorted key order: strings as they are, everything else as
    compact JSON. Raises ``TypeError`` or ``ValueError`` for values JSON cannot represent.

    >>> print(render_state({"hp": 12, "name": "Ann", "bag": {"rope": 1, "gold": 30}}))
    bag: {"gold":30,"rope":1}
    hp: 12
    name: Ann
    >>> render_state(None), render_state("  ")
    ('', '')
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return value if value.strip() else ""
    return "\n".join(f"{key}: {_render_value(value[key])}" for key in sorted(value))


def _render_value(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(
        value,
        separators=(",", ":"),
        sort_keys=True,
        ensure_ascii=False,
        allow_nan=False,
        default=_mapping_as_dict,
    )


def _mapping_as_dict(value: object) -> dict[object, object]:
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")
