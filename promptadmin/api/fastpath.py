"""The fast paths for well-formed assembly and render requests.

Assembly runs on every turn of every game, and full validation through DRF's fields
costs more than assembling the prompt (0.3-0.5 ms against 8 us for this path). A
well-formed request takes this path, which accepts only what full validation accepts,
with the same result; property tests in tests/promptadmin/api/test_assemble_input.py hold
it to that. Anything else, every error included, goes through the serializer, the one
place that words errors. Rendering a registered prompt (called as often, by pipelines)
has its own, held to the same standard by tests/promptadmin/api/test_render_input.py.
"""

from __future__ import annotations

import re
from typing import Any

import assembler
from assembler import storable
from assembler.storable import has_lone_surrogate
from promptadmin.api.serializers.common import MAX_TEXT, RELEASE_PATTERN
from promptadmin.content.assembly import AssembleParams
from promptadmin.content.models import MAX_TIER
from promptadmin.conversations.models import KEY_PATTERN
from promptadmin.prompts.selectors import RENDER_FORMATS

_KEY = re.compile(KEY_PATTERN)

_RELEASE = re.compile(RELEASE_PATTERN)

# Spelt out rather than read off the serializer: a field added there falls back to full
# validation until the fast path learns it.
_ASSEMBLE_FIELDS = frozenset(
    {
        "entry",
        "world",
        "first_turn",
        "token_budget",
        "npc_budget",
        "npcs",
        "state",
        "policy",
        "strict",
        "conversation",
        "history_budget",
        "release",
    }
)
_STATE_FIELDS = frozenset(assembler.DYNAMIC_SCOPES)
_BLOCK_FORMATS = frozenset(assembler.BLOCK_FORMATS)


def _slug(value: Any) -> bool:
    """What ``slug_field()`` accepts and returns unchanged."""
    return (
        type(value) is str
        and 0 < len(value) <= 64
        and value.isascii()  # so no lone surrogate, which the serializer refuses
        and value == value.strip()
        and "\x00" not in value
    )


def _integer(value: Any, high: int) -> bool:
    return type(value) is int and 0 <= value <= high


def well_formed(data: Any, flags: tuple[str, ...]) -> tuple[AssembleParams, dict[str, bool]] | None:
    """The parameters of an assembly request that plainly passes validation, else None.

    Conservative: anything unusual (a missing entry, a string with surrounding spaces, a
    null where a default would apply, a value of a near type) is left to the serializer.
    """
    if type(data) is not dict or not data.keys() <= _ASSEMBLE_FIELDS.union(flags):
        return None
    entry = data.get("entry")
    world = data.get("world")
    if not _slug(entry) or not (world is None or _slug(world)):
        return None
    release = data.get("release")
    if release is not None and (type(release) is not str or not _RELEASE.fullmatch(release)):
        return None
    options = {name: data.get(name, False) for name in ("first_turn", "strict", *flags)}
    if any(type(value) is not bool for value in options.values()):
        return None
    token_budget = data.get("token_budget", assembler.DEFAULT_TOKEN_BUDGET)
    npc_budget = data.get("npc_budget", assembler.DEFAULT_NPC_BUDGET)
    if not _integer(token_budget, assembler.MAX_BUDGET) or not _integer(
        npc_budget, assembler.MAX_BUDGET
    ):
        return None

    conversation = data.get("conversation")
    history_budget = data.get("history_budget")
    if conversation is not None and (type(conversation) is not str or not _KEY.match(conversation)):
        return None
    if history_budget is not None and not _integer(history_budget, assembler.MAX_BUDGET):
        return None

    npcs: list[tuple[str, int]] = []
    requested = data.get("npcs", [])
    if type(requested) is not list or len(requested) > 50:
        return None
    for item in requested:
        if type(item) is dict:
            if not item.keys() <= {"npc", "tier"}:
                return None
            slug, tier = item.get("npc"), item.get("tier", 0)
        else:
            slug, tier = item, 0
        if type(slug) is not str or not 0 < len(slug) <= 64 or "\x00" in slug:
            return None
        if has_lone_surrogate(slug) or not _integer(tier, MAX_TIER):
            return None
        npcs.append((slug, tier))
    if len({slug for slug, _tier in npcs}) != len(npcs):
        return None

    state = data.get("state", {})
    if type(state) is not dict or not state.keys() <= _STATE_FIELDS:
        return None
    for value in state.values():
        if type(value) is str:
            if len(value) > MAX_TEXT or has_lone_surrogate(value):
                return None
        elif type(value) is dict:
            if not _storable(value):
                return None
        elif value is not None:
            return None

    policy = data.get("policy", {})
    if type(policy) is not dict or not policy.keys() <= {"floors", "block_format"}:
        return None
    block_format = policy.get("block_format", "delimited")
    if type(block_format) is not str or block_format not in _BLOCK_FORMATS:
        return None
    floors = policy.get("floors", {})
    if type(floors) is not dict or not floors.keys() <= _STATE_FIELDS:
        return None
    for fraction in floors.values():
        if type(fraction) not in (int, float) or not 0 <= fraction <= 1:
            return None

    params = AssembleParams(
        entry=entry,
        world=world,
        first_turn=options["first_turn"],
        token_budget=token_budget,
        npc_budget=npc_budget,
        npcs=tuple(npcs),
        state=dict(state),
        floors={scope: float(fraction) for scope, fraction in floors.items()} or None,
        block_format=block_format,
        strict=options["strict"],
        conversation=conversation,
        history_budget=history_budget,
        release=release,
    )
    return params, {name: options[name] for name in flags}


# Spelt out, as above: a field added to RenderSerializer falls back to full validation
# until the fast path learns it.
_RENDER_FIELDS = frozenset(
    {
        "task_type",
        "label",
        "version",
        "template",
        "variables",
        "interface",
        "user_instructions",
        "instruction_context",
        "format",
    }
)
_INT32 = 2**31 - 1


def _name(value: Any) -> bool:
    """A short text that a trimming ``f.Text(max_length=64)`` accepts and returns as it is."""
    return (
        type(value) is str
        and 0 < len(value) <= 64
        and value.isascii()
        and value == value.strip()
        and "\x00" not in value
    )


def _storable(value: Any) -> bool:
    """Whether ``value`` plainly passes ``storable.check_stored_json``.

    The same walk, without working out where each value sits (only an error needs that):
    a few times quicker on the objects games and pipelines send. Conservative: a value of
    a subclass of a JSON type is left to the full check.
    """
    items = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        current, depth = stack.pop()
        items += 1
        if items > storable.MAX_ITEMS:
            return False
        kind = type(current)
        if kind is str:
            if not _storable_text(current):
                return False
        elif kind is int:
            if not storable.MIN_INT <= current <= storable.MAX_INT:
                return False
        elif kind is float:
            if storable.float_problem(current):
                return False
        elif kind is dict:
            if depth > storable.MAX_DEPTH:
                return False
            for key, child in current.items():
                if type(key) is not str or not _storable_text(key):
                    return False
                stack.append((child, depth + 1))
        elif kind is list:
            if depth > storable.MAX_DEPTH:
                return False
            stack.extend((child, depth + 1) for child in current)
        elif current is not None and kind is not bool:
            return False
    return True


def _storable_text(text: str) -> bool:
    return (
        len(text) <= storable.MAX_TEXT
        and "\x00" not in text
        and (text.isascii() or not has_lone_surrogate(text))
    )


def well_formed_render(data: Any) -> dict[str, Any] | None:
    """The validated data of a render request that plainly passes validation (what
    ``RenderSerializer.validated_data`` holds), else None.

    Conservative, as :func:`well_formed`: an empty or padded name, a null where a default
    would apply, non-ASCII in a name: all are left to the serializer.
    """
    if type(data) is not dict or not data.keys() <= _RENDER_FIELDS:
        return None
    valid: dict[str, Any] = {}
    task_type = data.get("task_type")
    if not (task_type is None or task_type == "" or _name(task_type)):
        return None
    valid["task_type"] = task_type
    if "label" in data:
        if "version" in data or not _name(data["label"]):
            return None
        valid["label"] = data["label"]
    if "version" in data:
        version = data["version"]
        if type(version) is not int or not 1 <= version <= _INT32:
            return None
        valid["version"] = version
    template = data.get("template", "default")
    if not _name(template):
        return None
    valid["template"] = template
    for field in ("variables", "instruction_context"):
        value = data.get(field, {})
        if type(value) is not dict or not _storable(value):
            return None
        valid[field] = dict(value)
    interface = data.get("interface")
    if not (interface is None or _name(interface)):
        return None
    valid["interface"] = interface
    instructions = data.get("user_instructions")
    if instructions is not None and (
        type(instructions) is not str
        or len(instructions) > MAX_TEXT
        or "\x00" in instructions
        or has_lone_surrogate(instructions)
    ):
        return None
    valid["user_instructions"] = instructions
    output = data.get("format", "messages")
    if type(output) is not str or output not in RENDER_FORMATS:
        return None
    valid["format"] = output
    return valid
