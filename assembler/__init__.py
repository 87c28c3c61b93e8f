"""Prompt assembly: tokens, layers, budgets, truncation and lint rules, in pure Python.

Nothing here imports Django: callers pass plain dataclasses in and get plain data out.

>>> from assembler import AssemblyRequest, Segment, assemble, get_tokenizer
>>> request = AssemblyRequest(
...     core=[Segment(1, "core", "You are the narrator.")], rulesets=[], world=[],
...     entry=[], entry_start=[], npcs=[], state={}, first_turn=True, token_budget=50)
>>> assemble(request, get_tokenizer()).prompt
'=== CORE_BEGIN ===\\nYou are the narrator.\\n=== CORE_END ==='
"""

from __future__ import annotations

from assembler.assembly import DROP_ORDER, TRIM_ORDER, assemble
from assembler.lint import Lint, lint_request, lint_segment
from assembler.request import (
    DYNAMIC_SCOPES,
    PROTECTED_SCOPES,
    SCOPES,
    SEGMENT_SCOPES,
    AssemblyRequest,
    BlockFormat,
    Npc,
    Policy,
    Ruleset,
    Segment,
)
from assembler.result import (
    AssemblyResult,
    Block,
    LayerReport,
    Meta,
    NpcReport,
    OverBudgetError,
    SegmentFate,
    TruncationStep,
)
from assembler.tokens import Tokenizer, UnknownEncodingError, available_encodings, get_tokenizer

__all__ = [
    "DROP_ORDER",
    "DYNAMIC_SCOPES",
    "PROTECTED_SCOPES",
    "SCOPES",
    "SEGMENT_SCOPES",
    "TRIM_ORDER",
    "AssemblyRequest",
    "AssemblyResult",
    "Block",
    "BlockFormat",
    "LayerReport",
    "Lint",
    "Meta",
    "Npc",
    "NpcReport",
    "OverBudgetError",
    "Policy",
    "Ruleset",
    "Segment",
    "SegmentFate",
    "Tokenizer",
    "TruncationStep",
    "UnknownEncodingError",
    "assemble",
    "available_encodings",
    "get_tokenizer",
    "lint_request",
    "lint_segment",
]
