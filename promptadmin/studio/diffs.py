"""Side-by-side differences between two texts, for conflicts and history.

Lines are matched with :mod:`difflib`; inside a changed line the changed words are marked
(``<del>`` on the left, ``<ins>`` on the right). Long runs of unchanged lines are folded.

>>> rows = side_by_side("a\\nb\\nc", "a\\nB\\nc")
>>> [(row.left.kind, row.right.kind) for row in rows]
[('equal', 'equal'), ('changed', 'changed'), ('equal', 'equal')]
>>> str(rows[1].right.html)
'<ins>B</ins>'
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

CONTEXT_LINES = 3
# A segment's fields besides its text, as compared between two versions, with their labels.
SEGMENT_FIELDS = {
    "title": "Title",
    "object": "Belongs to",
    "tier": "Tier",
    "metadata": "Metadata",
    "version": "Version label",
    "active": "Active",
    "sort_order": "Sort order",
}
_WORDS = re.compile(r"\s+|\w+|[^\w\s]")


@dataclass(frozen=True)
class Cell:
    number: int | None
    html: SafeString
    kind: str  # equal, changed, removed, added, empty


@dataclass(frozen=True)
class Row:
    left: Cell
    right: Cell
    folded: int = 0  # a "N unchanged lines" marker instead of a line pair


EMPTY = Cell(None, mark_safe(""), "empty")


def _words(old: str, new: str) -> tuple[SafeString, SafeString]:
    a, b = _WORDS.findall(old), _WORDS.findall(new)
    runs: list[tuple[bool, str, str]] = []  # (changed, old text, new text)
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        runs.append((tag != "equal", "".join(a[i1:i2]), "".join(b[j1:j2])))
    # A lone space between two changes reads better as part of one change.
    for index in range(1, len(runs) - 1):
        changed, text, _ = runs[index]
        if not changed and not text.strip() and runs[index - 1][0] and runs[index + 1][0]:
            runs[index] = (True, text, text)
    left, right = [], []
    for index, (changed, removed, added) in enumerate(runs):
        if not changed:
            left.append(escape(removed))
            right.append(escape(added))
            continue
        if index and runs[index - 1][0]:
            continue  # already merged into the change before it
        for changed_after, more_removed, more_added in runs[index + 1 :]:
            if not changed_after:
                break
            removed += more_removed
            added += more_added
        if removed:
            left.append(f"<del>{escape(removed)}</del>")
        if added:
            right.append(f"<ins>{escape(added)}</ins>")
    return mark_safe("".join(left)), mark_safe("".join(right))


def side_by_side(old: str, new: str, *, context: int = CONTEXT_LINES) -> list[Row]:
    """Rows pairing the lines of ``old`` (left) with those of ``new`` (right)."""
    a, b = old.splitlines(), new.splitlines()
    rows: list[Row] = []
    opcodes = SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    for position, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        if tag == "equal":
            keep_head = context if position > 0 else 0
            keep_tail = context if position < len(opcodes) - 1 else 0
            length = i2 - i1
            if length > keep_head + keep_tail + 1:
                for k in range(keep_head):
                    rows.append(_equal(a, i1 + k, j1 + k))
                rows.append(Row(EMPTY, EMPTY, folded=length - keep_head - keep_tail))
                for k in range(length - keep_tail, length):
                    rows.append(_equal(a, i1 + k, j1 + k))
            else:
                rows.extend(_equal(a, i1 + k, j1 + k) for k in range(length))
            continue
        pairs = max(i2 - i1, j2 - j1)
        for k in range(pairs):
            i, j = i1 + k, j1 + k
            if i < i2 and j < j2:
                left, right = _words(a[i], b[j])
                rows.append(Row(Cell(i + 1, left, "changed"), Cell(j + 1, right, "changed")))
            elif i < i2:
                rows.append(Row(Cell(i + 1, mark_safe(escape(a[i])), "removed"), EMPTY))
            else:
                rows.append(Row(EMPTY, Cell(j + 1, mark_safe(escape(b[j])), "added")))
    return rows


def _equal(lines: list[str], i: int, j: int) -> Row:
    html = mark_safe(escape(lines[i]))
    return Row(Cell(i + 1, html, "equal"), Cell(j + 1, html, "equal"))


@dataclass(frozen=True)
class FieldChange:
    label: str
    old: str
    new: str


def show(value: Any) -> str:
    """A field value as an author reads it."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False) if value else "{}"
    if value is None:
        return "—"
    return str(value)


def field_changes(
    old: dict[str, Any], new: dict[str, Any], labels: dict[str, str]
) -> list[FieldChange]:
    """The fields (other than the text) whose shown values differ, in ``labels`` order."""
    return [
        FieldChange(label, show(old.get(name)), show(new.get(name)))
        for name, label in labels.items()
        if show(old.get(name)) != show(new.get(name))
    ]


@dataclass(frozen=True)
class Merge:
    """A three-way merge of two edits of one object made from the same base.

    ``values`` holds, per field, the other author's value where only they changed it, this
    author's where only they did (or both made the same change), and this author's for the
    fields in ``conflicts``: changed by both, differently, so a person must decide.
    ``theirs_only`` and ``mine_only`` name the fields each side alone changed.
    """

    values: dict[str, Any]
    conflicts: list[str]
    theirs_only: list[str]
    mine_only: list[str]


def three_way(
    base: dict[str, Any] | None, mine: dict[str, Any], theirs: dict[str, Any], names: list[str]
) -> Merge:
    """Merge ``mine`` and ``theirs``, both edited from ``base`` (None: base unknown).

    >>> m = three_way({"t": "a", "n": 0}, {"t": "b", "n": 0}, {"t": "a", "n": 2}, ["t", "n"])
    >>> m.values, m.conflicts, m.theirs_only, m.mine_only
    ({'t': 'b', 'n': 2}, [], ['n'], ['t'])
    >>> three_way({"t": "a"}, {"t": "b"}, {"t": "c"}, ["t"]).conflicts
    ['t']
    """
    values: dict[str, Any] = {}
    conflicts: list[str] = []
    theirs_only: list[str] = []
    mine_only: list[str] = []
    for name in names:
        ours, their = mine.get(name), theirs.get(name)
        if show(ours) == show(their):
            values[name] = ours
        elif base is not None and show(ours) == show(base.get(name)):
            values[name] = their
            theirs_only.append(name)
        elif base is not None and show(their) == show(base.get(name)):
            values[name] = ours
            mine_only.append(name)
        else:
            values[name] = ours
            conflicts.append(name)
    return Merge(values, conflicts, theirs_only, mine_only)


def word_diff(old: str, new: str) -> tuple[SafeString, SafeString]:
    """Two texts marked up word by word: what ``old`` lost (``<del>``), what ``new`` has
    that it lacked (``<ins>``)."""
    return _words(old, new)
