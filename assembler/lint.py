"""Lint rules: findings about content that is missing, misplaced or too large.

Each finding is a :class:`Lint` with a stable ``code``, a ``level`` and a message for
authors. :func:`assemble <assembler.assemble>` reports the request-level findings in
``meta.lints``; :func:`lint_segment` checks one segment's text as it is being edited.
"""

from __future__ import annotations

import functools
import re

from assembler import explain
from assembler.findings import Lint
from assembler.render import block_close, block_open
from assembler.request import (
    DEFAULT_BLOCK_FORMAT,
    SCOPES,
    SEGMENT_SCOPES,
    AssemblyRequest,
    BlockFormat,
    Segment,
)


def lint_request(request: AssemblyRequest) -> list[Lint]:
    """Findings about what an assembly request is missing.

    >>> from assembler.request import AssemblyRequest
    >>> request = AssemblyRequest(core=[], rulesets=[], world=[], entry=[], entry_start=[],
    ...     npcs=[], state={}, first_turn=False, token_budget=1000)
    >>> [lint.code for lint in lint_request(request)]
    ['missing_world_segment', 'missing_entry_segment']
    """
    lints: list[Lint] = []
    if not request.world:
        lints.append(Lint("missing_world_segment", "error", "The world has no segments."))
    for ruleset in request.rulesets:
        if not ruleset.segments:
            lints.append(
                Lint(
                    "missing_ruleset_segment",
                    "error",
                    f"Ruleset {ruleset.name!r} ({ruleset.slug}) has no segments.",
                )
            )
    if not request.entry:
        lints.append(Lint("missing_entry_segment", "error", "The entry has no segments."))
    if request.first_turn and not request.entry_start:
        lints.append(
            Lint(
                "missing_entry_start",
                "warning",
                "This is a first turn but the entry has no entry_start segments.",
            )
        )
    for npc in request.npcs:
        if not any(segment.tier == 0 for segment in npc.segments):
            lints.append(
                Lint(
                    "npc_without_tier0",
                    "warning",
                    f"NPC {npc.name!r} ({npc.slug}) has no tier-0 segment: "
                    "at tier 0 it contributes nothing.",
                )
            )
    return lints


def segment_over_budget(
    scope: str, segment: Segment, tokens: int, budget: int, *, npc_budget: bool = False
) -> Lint:
    """The error for one segment that alone is larger than a budget it has to fit.

    Such a segment is always left out, whatever else the prompt holds; for an NPC segment
    the budget is the NPC budget.

    >>> old_wars = Segment(12, "world", "...", title="Old wars")
    >>> print(segment_over_budget("world", old_wars, 24312, 8000).message)
    ... # doctest: +NORMALIZE_WHITESPACE
    World segment #12 'Old wars' has 24312 tokens, more than the whole 8000-token budget:
    it is always left out. Shorten it or split it.
    """
    which = f"the {budget}-token NPC budget" if npc_budget else f"the whole {budget}-token budget"
    return Lint(
        "segment_over_budget",
        "error",
        f"{explain.segment_name(scope, segment.id, segment.label)} has {tokens} tokens, "
        f"more than {which}: it is always left out. Shorten it or split it.",
    )


def over_budget(tokens: int, token_budget: int) -> Lint:
    """The error reported when the protected layers alone exceed the budget."""
    return Lint(
        "over_budget",
        "error",
        f"The core and ruleset layers alone take {tokens} tokens, "
        f"{tokens - token_budget} over the token budget of {token_budget}.",
    )


def lint_segment(
    scope: str,
    content: str,
    *,
    token_count: int | None = None,
    token_budget: int | None = None,
    npc_budget: int | None = None,
    block_format: BlockFormat = DEFAULT_BLOCK_FORMAT,
) -> list[Lint]:
    """Findings about one segment's text, for the editor.

    Flags empty or whitespace-only content, a line that reads like a block frame of
    ``block_format`` (it would make the assembled prompt ambiguous), and, when
    ``token_count`` is given, a segment larger than ``token_budget`` or, for an NPC
    segment, ``npc_budget``: an error, since such a segment could never be included.

    >>> [lint.code for lint in lint_segment("world", "   ")]
    ['empty_segment']
    >>> print(lint_segment("world", "Intro\\n=== CORE_END ===\\nmore")[0].message)
    Line 2 looks like a block frame ('=== CORE_END ==='); it would confuse the prompt layout.
    >>> print(lint_segment("world", "Fine text.", token_count=900, token_budget=800)[0].message)
    ... # doctest: +NORMALIZE_WHITESPACE
    This world segment has 900 tokens, more than the whole 800-token budget:
    it would always be left out. Shorten it or split it.
    >>> lint_segment("npc", "Fine.", token_count=700, token_budget=8000, npc_budget=600)[0].level
    'error'
    """
    if scope not in SEGMENT_SCOPES:
        raise ValueError(f"scope must be one of {', '.join(SEGMENT_SCOPES)}, got {scope!r}")
    lints: list[Lint] = []
    if not content.strip():
        lints.append(Lint("empty_segment", "warning", "The segment has no text."))
    frames = _frame_pattern(block_format)
    for number, line in enumerate(content.splitlines(), start=1):
        if frames.fullmatch(line.strip()):
            lints.append(
                Lint(
                    "contains_block_delimiter",
                    "warning",
                    f"Line {number} looks like a block frame ({line.strip()!r}); "
                    "it would confuse the prompt layout.",
                )
            )
    if token_count is not None:
        if scope == "npc" and npc_budget is not None and token_count > npc_budget:
            which = f"the {npc_budget}-token NPC budget"
        elif token_budget is not None and token_count > token_budget:
            which = f"the whole {token_budget}-token budget"
        else:
            return lints
        lints.append(
            Lint(
                "segment_over_budget",
                "error",
                f"This {explain.layer_title(scope, capital=False)} segment has {token_count} "
                f"tokens, more than {which}: "
                "it would always be left out. Shorten it or split it.",
            )
        )
    return lints


@functools.cache
def _frame_pattern(block_format: BlockFormat) -> re.Pattern[str]:
    lines = {block_open(scope, block_format) for scope in SCOPES}
    lines.update(close for scope in SCOPES if (close := block_close(scope, block_format)))
    return re.compile("|".join(map(re.escape, sorted(lines))))
