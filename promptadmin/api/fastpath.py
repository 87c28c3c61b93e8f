"""The fast path for well-formed assembly requests.

Assembly runs on every turn of every game, and full validation through DRF's fields
costs more than assembling the prompt (0.3-0.5 ms against 8 us for this path). A
well-formed request takes this path, which accepts only what full validation accepts,
with the same result; property tests in tests/promptadmin/api/test_assemble_input.py hold
it to that. Anything else, every error included, goes through the serializer, the one
place that words errors.
"""

from __future__ import annotations

import re
from typing import Any

import assembler
from promptadmin.api.serializers.common import MAX_TEXT, RELEASE_PATTERN, has_lone_surrogate
from promptadmin.content.assembly import AssembleParams
from promptadmin.content.models import MAX_TIER
from promptadmin.conversations.models import KEY_PATTERN
from promptadmin.core.storedjson import StoredJsonError, check_stored_json

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
            try:
                check_stored_json(value)
            except StoredJsonError:
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
