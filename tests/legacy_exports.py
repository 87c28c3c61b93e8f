"""Exports of a legacy ``prompt_segments`` table, as real tools write them, for tests and
the import benchmark."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import Any

COLUMNS = (
    "id",
    "scope",
    "ref_id",
    "content",
    "metadata",
    "version",
    "active",
    "created_at",
    "updated_at",
)

# Valid rows: every allowed scope against the objects of ``game()``, every deprecated one,
# dates in several ISO forms, quoted newlines, non-ASCII text.
VALID: list[dict[str, Any]] = [
    {
        "id": 101,
        "scope": "core",
        "ref_id": None,
        "content": "You are the narrator.\nBe terse.",
        "metadata": {"title": "Narrator"},
        "version": "1.0",
        "active": True,
        "created_at": "2023-01-05 10:00:00+00",
        "updated_at": "2023-02-01T09:30:00Z",
    },
    {
        "id": 102,
        "scope": "world",
        "ref_id": "iron-coast",
        "content": "Rust stains everything — café «noir».",
        "metadata": {},
        "version": "2",
        "active": True,
        "created_at": "2023-01-05T10:00:00.123456+00:00",
        "updated_at": "2023-01-05",
    },
    {
        "id": 103,
        "scope": "entry",
        "ref_id": "drowned-bell",
        "content": "The bell tolls under water.",
        "metadata": None,
        "version": "1.0",
        "active": True,
        "created_at": "2023-01-06 08:00:00",
        "updated_at": None,
    },
    {
        "id": 104,
        "scope": "entry_start",
        "ref_id": "drowned-bell",
        "content": "You wake on the pier.",
        "metadata": {"tags": ["intro"]},
        "version": "1.0",
        "active": False,
        "created_at": "2023-01-06 08:00:00+02:00",
        "updated_at": "2023-01-06 08:00:00+02:00",
    },
    {
        "id": 105,
        "scope": "npc",
        "ref_id": "marta-vell",
        "content": "Marta mends nets 🎣 and lies.",
        "metadata": {},
        "version": "1.0",
        "active": True,
        "created_at": "2023-01-07T12:00:00+00:00",
        "updated_at": "2023-01-07T12:00:00+00:00",
    },
    {
        "id": 106,
        "scope": "ruleset",
        "ref_id": "mystery",
        "content": "Three clues per truth.",
        "metadata": {},
        "version": "1.0",
        "active": True,
        "created_at": "2023-01-07",
        "updated_at": "2023-01-07",
    },
    {
        "id": 201,
        "scope": "game_state",
        "ref_id": None,
        "content": "Tide: {tide}\nWeather: {weather}",
        "metadata": {"title": "State block"},
        "version": "1.0",
        "active": True,
        "created_at": "2022-11-01 10:00:00+00",
        "updated_at": "2022-12-01 10:00:00+00",
    },
    {
        "id": 202,
        "scope": "player",
        "ref_id": "drowned-bell",
        "content": "The player is a salvager.",
        "metadata": {},
        "version": "1.0",
        "active": True,
        "created_at": "2022-11-02T10:00:00Z",
        "updated_at": "2022-11-02T10:00:00Z",
    },
    {
        "id": 203,
        "scope": "rng",
        "ref_id": "",
        "content": "Roll {d20} for luck.",
        "metadata": {},
        "version": "1.0",
        "active": False,
        "created_at": "2022-11-03",
        "updated_at": "2022-11-03",
    },
    {
        "id": 204,
        "scope": "input",
        "ref_id": None,
        "content": "Player says: {input}",
        "metadata": {},
        "version": "1.0",
        "active": True,
        "created_at": "2022-11-04 10:00:00.5+00",
        "updated_at": None,
    },
]

CREATED = {
    "core": 1,
    "world": 1,
    "entry": 1,
    "entry_start": 1,
    "npc": 1,
    "ruleset": 1,
    "game_state": 1,
    "player": 1,
    "rng": 1,
    "input": 1,
}

# Dirty rows: each is reported with its legacy id and a reason containing these words.
DIRTY: list[tuple[dict[str, Any], str]] = [
    ({"id": 301, "scope": "core", "content": "Nul\x00byte"}, "NUL"),
    ({"id": 302, "scope": "core", "content": "Meta", "metadata": "{not json"}, "not valid JSON"),
    ({"id": 303, "scope": "weather", "content": "Rain."}, "Unknown scope"),
    ({"id": 101, "scope": "core", "content": "Again."}, "Duplicate id '101'"),
    ({"id": 305, "scope": "core", "content": "   "}, "Content is empty"),
    ({"id": 306, "scope": "core", "content": "x" * 200_001}, "at most 200000"),
    ({"id": 307, "scope": "core", "content": "Dated", "created_at": "yesterday"}, "ISO 8601"),
    ({"id": 308, "scope": "world", "ref_id": "atlantis", "content": "Gone."}, "Unknown world"),
]


def full(row: dict[str, Any]) -> dict[str, Any]:
    return {column: row.get(column) for column in COLUMNS}


def as_json(
    rows: list[dict[str, Any]],
    *,
    metadata_as_text: bool = False,
    bom: bool = False,
    crlf: bool = False,
) -> bytes:
    """A JSON array as a hosted Postgres dashboard exports it (one row per line); ``bom``
    and ``crlf`` as an editor on Windows saves it again."""
    out = []
    for row in rows:
        row = full(row)
        if metadata_as_text and isinstance(row["metadata"], dict):
            row["metadata"] = json.dumps(row["metadata"])
        out.append(json.dumps(row, ensure_ascii=False))
    newline = "\r\n" if crlf else "\n"
    text = "[" + newline + ("," + newline).join(out) + newline + "]" + newline
    # A lone surrogate (only JSON can carry one) is written as its \u escape.
    return ("\ufeff" if bom else "").encode() + text.encode("utf-8", "backslashreplace")


def as_csv(rows: list[dict[str, Any]], *, bom: bool = True) -> bytes:
    """CSV as ``\\copy prompt_segments to FILE csv header`` writes it, with CRLF and a BOM
    (a spreadsheet saved it again)."""
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(COLUMNS)
    for row in rows:
        row = full(row)
        writer.writerow(["" if row[c] is None else _csv_value(row[c]) for c in COLUMNS])
    return ("\ufeff" if bom else "").encode() + buffer.getvalue().encode()


def _csv_value(value: Any) -> str:
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def generated(
    count: int, *, start: int = 1, targets: Sequence[tuple[str, str]] = ()
) -> list[dict[str, Any]]:
    """``count`` valid rows of every scope that needs no object (a big, clean export).

    ``targets``: (scope, slug) pairs of objects that exist; then one row in six is of an
    allowed scope that needs an object, naming each target in turn (so the import looks
    references up).
    """
    scopes = ("core", "game_state", "player", "rng", "input")
    cycle = len(scopes) + (1 if targets else 0)
    rows = []
    for n in range(count):
        scope, ref = (
            targets[(n // cycle) % len(targets)]
            if n % cycle == len(scopes)
            else (scopes[n % cycle], None)
        )
        rows.append(
            {
                "id": start + n,
                "scope": scope,
                "ref_id": ref,
                "content": f"Legacy segment {start + n}: the tide comes in at dusk, twice.",
                "metadata": {"n": n},
                "version": "1.0",
                "active": n % 3 == 0,
                "created_at": "2022-11-01 10:00:00+00",
                "updated_at": "2022-11-02 10:00:00+00",
            }
        )
    return rows
