from __future__ import annotations

import pytest

from assembler.render import block, block_close, block_open, npc_heading, render_state


@pytest.mark.parametrize(
    ("block_format", "expected"),
    [
        ("delimited", "=== ENTRY_START_BEGIN ===\nYou wake.\n=== ENTRY_START_END ==="),
        ("xml", "<entry_start>\nYou wake.\n</entry_start>"),
        ("markdown", "## Entry start\nYou wake."),
    ],
)
def test_each_block_format_frames_the_body(block_format: str, expected: str) -> None:
    assert block("entry_start", "You wake.", block_format) == expected  # type: ignore[arg-type]


def test_markdown_blocks_have_no_closing_line() -> None:
    assert block_close("core", "markdown") is None
    assert block_open("rng", "markdown") == "## RNG"


def test_npc_heading_names_the_npc() -> None:
    assert npc_heading("Ida") == "[NPC: Ida]"


def test_text_state_is_used_as_is() -> None:
    assert render_state("You see a door.\nIt is locked.") == "You see a door.\nIt is locked."


@pytest.mark.parametrize("empty", [None, "", "  \n ", {}])
def test_missing_blank_or_empty_state_renders_nothing(empty: object) -> None:
    assert render_state(empty) == ""  # type: ignore[arg-type]


def test_json_state_renders_sorted_key_value_lines_with_compact_nested_json() -> None:
    state = {
        "name": "Åsa",
        "hp": 12,
        "alive": True,
        "target": None,
        "bag": {"rope": 1, "gold": 30},
        "tags": ["tired", "wet"],
        "ratio": 0.5,
    }
    assert render_state(state) == "\n".join(
        [
            "alive: true",
            'bag: {"gold":30,"rope":1}',
            "hp: 12",
            "name: Åsa",
            "ratio: 0.5",
            'tags: ["tired","wet"]',
            "target: null",
        ]
    )


def test_json_state_renders_the_same_whatever_the_key_order() -> None:
    assert render_state({"b": {"y": 1, "x": 2}, "a": 1}) == render_state(
        {"a": 1, "b": {"x": 2, "y": 1}}
    )


@pytest.mark.parametrize("bad", [{"x": object()}, {"x": float("nan")}])
def test_state_that_json_cannot_represent_is_refused(bad: dict[str, object]) -> None:
    with pytest.raises((TypeError, ValueError)):
        render_state(bad)
