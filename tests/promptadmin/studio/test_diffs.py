"""Side-by-side diffs: lines paired, changed words marked, unchanged stretches folded."""

from __future__ import annotations

from promptadmin.studio.diffs import field_changes, side_by_side


def kinds(old: str, new: str) -> list[tuple[str, str]]:
    return [(row.left.kind, row.right.kind) for row in side_by_side(old, new)]


def test_equal_texts_fold_into_one_row() -> None:
    assert [row.folded for row in side_by_side("a\nb", "a\nb")] == [2]


def test_a_changed_line_marks_only_the_changed_words() -> None:
    [row] = side_by_side("The bell rings at dusk.", "The bell sings at dawn.")
    assert row.left.html == "The bell <del>rings</del> at <del>dusk</del>."
    assert row.right.html == "The bell <ins>sings</ins> at <ins>dawn</ins>."


def test_words_changed_together_are_marked_as_one_change() -> None:
    [row] = side_by_side("My rain.", "Someone else's fog.")
    assert (row.left.html, row.right.html) == (
        "<del>My rain</del>.",
        "<ins>Someone else&#x27;s fog</ins>.",
    )


def test_added_and_removed_lines_face_an_empty_cell() -> None:
    assert kinds("a\nb", "a\nc\nb\nd") == [
        ("equal", "equal"),
        ("empty", "added"),
        ("equal", "equal"),
        ("empty", "added"),
    ]
    assert kinds("a\nb", "b") == [("removed", "empty"), ("equal", "equal")]


def test_text_is_escaped() -> None:
    [row] = side_by_side("<b>", "<i>")
    assert (row.left.html, row.right.html) == ("&lt;<del>b</del>&gt;", "&lt;<ins>i</ins>&gt;")


def test_long_unchanged_stretches_are_folded_keeping_three_lines_of_context() -> None:
    old = "\n".join(f"line {n}" for n in range(20))
    new = old.replace("line 10", "line ten")
    rows = side_by_side(old, new)
    assert [row.folded for row in rows if row.folded] == [7, 6]
    numbers = [row.left.number for row in rows if not row.folded]
    assert numbers == [8, 9, 10, 11, 12, 13, 14]


def test_field_changes_list_only_what_differs_in_readable_form() -> None:
    labels = {"active": "Active", "metadata": "Metadata", "version": "Version label"}
    changes = field_changes(
        {"active": True, "metadata": {}, "version": "1.0"},
        {"active": False, "metadata": {}, "version": "1.0"},
        labels,
    )
    assert [(c.label, c.old, c.new) for c in changes] == [("Active", "yes", "no")]
