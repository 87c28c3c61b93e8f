"""Prompt assembly: tokens, layers, budgets, truncation, lint rules, conversation history
and summarization, in pure Python.

Registered prompts live in three modules, imported by name (their functions have short
names such as ``render`` and ``parse``): :mod:`assembler.templates` (the curly and format
template syntaxes), :mod:`assembler.trisection` (task text + adapter additions + user
instructions) and :mod:`assembler.format_lint` (findings about a prompt version).

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
from assembler.findings import Lint
from assembler.format_lint import FormatFinding, lint_prompt
from assembler.history import (
    HistoryFit,
    HistoryMessage,
    HistoryMode,
    HistoryTrim,
    Role,
    SummaryPlan,
    SummaryText,
    fit_history,
    needs_summary,
    plan_summary,
    render_message,
    render_summary,
)
from assembler.lint import lint_request, lint_segment
from assembler.request import (
    BLOCK_FORMATS,
    DEFAULT_NPC_BUDGET,
    DEFAULT_TOKEN_BUDGET,
    DYNAMIC_SCOPES,
    HISTORY_SCOPE,
    MAX_BUDGET,
    PROTECTED_SCOPES,
    SCOPES,
    SEGMENT_SCOPES,
    TRIMMABLE_SCOPES,
    AssemblyRequest,
    BlockFormat,
    History,
    Npc,
    Policy,
    RequestError,
    Ruleset,
    Segment,
)
from assembler.result import (
    AssemblyResult,
    Block,
    HistoryReport,
    LayerReport,
    Meta,
    NpcReport,
    OverBudgetError,
    SegmentFate,
    TruncationStep,
)
from assembler.summarize import (
    DEFAULT_INSTRUCTIONS,
    ExtractiveSummarizer,
    OpenAISummarizer,
    Summarizer,
    SummarizerError,
    SummarizerUnavailable,
    SummaryOutcome,
    SummaryRejected,
    SummaryResult,
    summarize_with_fallback,
    validate_summary,
)
from assembler.templates import (
    SYNTAXES,
    MissingVariablesError,
    ParsedTemplate,
    Position,
    RenderResult,
    TemplateConversionError,
    TemplateError,
    TemplateSyntaxError,
    TemplateValueError,
    UnknownSyntaxError,
    to_curly,
)
from assembler.tokens import Tokenizer, UnknownEncodingError, available_encodings, get_tokenizer
from assembler.trisection import (
    AdapterInstruction,
    Interface,
    Message,
    TriSectionResult,
    assemble_trisection,
    message_tokens,
)

__all__ = [
    "BLOCK_FORMATS",
    "DEFAULT_INSTRUCTIONS",
    "DEFAULT_NPC_BUDGET",
    "DEFAULT_TOKEN_BUDGET",
    "DROP_ORDER",
    "DYNAMIC_SCOPES",
    "HISTORY_SCOPE",
    "MAX_BUDGET",
    "PROTECTED_SCOPES",
    "SCOPES",
    "SEGMENT_SCOPES",
    "SYNTAXES",
    "TRIMMABLE_SCOPES",
    "TRIM_ORDER",
    "AdapterInstruction",
    "AssemblyRequest",
    "AssemblyResult",
    "Block",
    "BlockFormat",
    "ExtractiveSummarizer",
    "FormatFinding",
    "History",
    "HistoryFit",
    "HistoryMessage",
    "HistoryMode",
    "HistoryReport",
    "HistoryTrim",
    "Interface",
    "LayerReport",
    "Lint",
    "Message",
    "Meta",
    "MissingVariablesError",
    "Npc",
    "NpcReport",
    "OpenAISummarizer",
    "OverBudgetError",
    "ParsedTemplate",
    "Policy",
    "Position",
    "RenderResult",
    "RequestError",
    "Role",
    "Ruleset",
    "Segment",
    "SegmentFate",
    "Summarizer",
    "SummarizerError",
    "SummarizerUnavailable",
    "SummaryOutcome",
    "SummaryPlan",
    "SummaryRejected",
    "SummaryResult",
    "SummaryText",
    "TemplateConversionError",
    "TemplateError",
    "TemplateSyntaxError",
    "TemplateValueError",
    "Tokenizer",
    "TriSectionResult",
    "TruncationStep",
    "UnknownEncodingError",
    "UnknownSyntaxError",
    "assemble",
    "assemble_trisection",
    "available_encodings",
    "fit_history",
    "get_tokenizer",
    "lint_prompt",
    "lint_request",
    "lint_segment",
    "message_tokens",
    "needs_summary",
    "plan_summary",
    "render_message",
    "render_summary",
    "summarize_with_fallback",
    "to_curly",
    "validate_summary",
]
