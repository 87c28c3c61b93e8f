from __future__ import annotations

from typing import Any

import pytest

from assembler import Ruleset, lint_request, lint_segment
from tests.assembler.builders import npc, request, seg


def codes(lints: list) -> list[tuple[str, str]]:  # type: ignore[type-arg]
    return [(lint.code, lint.level) for lint in lints]


def test_a_complete_request_has_no_findings() -> None:
    complete = request(
        rulesets=[Ruleset("combat", "Combat", [seg(1, "ruleset")])],
        world=[seg(2, "world")],
        entry=[seg(3, "entry")],
        entry_start=[seg(4, "entry_start")],
        npcs=[npc("ida", tiers=(0, 1), first_id=5)],
        first_turn=True,
    )
    assert lint_request(complete) == []


def test_missing_world_entry_and_ruleset_segments_are_errors() -> None:
    lints = lint_request(request(rulesets=[Ruleset("combat", "Combat"), Ruleset("magic", "Magic")]))
    assert codes(lints) == [
        ("missing_world_segment", "error"),
        ("missing_ruleset_segment", "error"),
        ("missing_ruleset_segment", "error"),
        ("missing_entry_segment", "error"),
    ]
    assert "Magic" in lints[2].message


def test_missing_entry_start_is_a_warning_on_the_first_turn_only() -> None:
    base: dict[str, Any] = {"world": [seg(1, "world")], "entry": [seg(2, "entry")]}
    assert codes(lint_request(request(**base, first_turn=True))) == [
        ("missing_entry_start", "warning")
    ]
    assert lint_request(request(**base, first_turn=False)) == []


def test_npc_without_a_tier_0_segment_is_a_warning() -> None:
    lints = lint_request(
        request(world=[seg(1, "world")], entry=[seg(2, "entry")], npcs=[npc("ida", tiers=(1,))])
    )
    assert codes(lints) == [("npc_without_tier0", "warning")]
    assert "ida" in lints[0].message


def test_lint_to_dict_has_code_level_and_message() -> None:
    [lint] = lint_segment("world", "")
    assert lint.to_dict() == {
        "code": "empty_segment",
        "level": "warning",
        "message": "The segment has no text.",
    }


@pytest.mark.parametrize("content", ["", "  \n\t "])
def test_empty_or_blank_segment_is_flagged(content: str) -> None:
    assert codes(lint_segment("entry", content)) == [("empty_segment", "warning")]


@pytest.mark.parametrize(
    ("block_format", "line"),
    [("delimited", "=== CORE_BEGIN ==="), ("xml", "</world>"), ("markdown", "## NPCs")],
)
def test_a_line_that_reads_like_a_block_frame_is_flagged(block_format: str, line: str) -> None:
    lints = lint_segment("world", f"Intro.\n  {line}\nMore.", block_format=block_format)  # type: ignore[arg-type]
    assert codes(lints) == [("contains_block_delimiter", "warning")]
    assert "Line 2" in lints[0].message


def test_frames_of_other_formats_and_inline_mentions_are_fine() -> None:
    assert lint_segment("world", "Write <world> tags inline.\n## Notes") == []


def test_a_segment_larger_than_the_budget_is_an_error_when_both_are_known() -> None:
    [lint] = lint_segment("world", "Text.", token_count=501, token_budget=500)
    assert (lint.code, lint.level) == ("segment_over_budget", "error")
    assert lint.message == (
        "This world segment has 501 tokens, more than the whole 500-token budget: "
        "it would always be left out. Shorten it or split it."
    )
    assert lint_segment("world", "Text.", token_count=500, token_budget=500) == []
    assert lint_segment("world", "Text.", token_count=501) == []


def test_an_npc_segment_larger_than_the_npc_budget_is_an_error() -> None:
    [lint] = lint_segment("npc", "Text.", token_count=601, token_budget=8000, npc_budget=600)
    assert (lint.code, lint.level) == ("segment_over_budget", "error")
    assert "more than the 600-token NPC budget" in lint.message
    assert lint_segment("npc", "Text.", token_count=600, token_budget=8000, npc_budget=600) == []
    # Without an NPC budget, the token budget is the limit.
    assert codes(lint_segment("npc", "Text.", token_count=601, token_budget=600)) == [
        ("segment_over_budget", "error")
    ]


def test_the_npc_budget_does_not_apply_to_other_segments() -> None:
    assert lint_segment("world", "Text.", token_count=601, token_budget=8000, npc_budget=600) == []


def test_lint_segment_refuses_an_unknown_scope() -> None:
    with pytest.raises(ValueError, match="scope must be one of"):
        lint_segment("input", "text")
