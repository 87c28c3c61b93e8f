"""An export is read as a stream: whatever the size of each read, it reads the same as
read whole, and what cannot be read is named at the same line."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from promptadmin.content import legacy
from promptadmin.content.legacy import ExportError, parse_export
from tests import legacy_exports as ex

# Every kind of row, but small ones: read a byte at a time, a huge row takes a while.
ROWS = [
    *ex.VALID,
    *(row for row, _ in ex.DIRTY if len(str(row)) < 5000),
    {"id": "é-1", "scope": "core", "content": "Ünïcode 龍 across reads,\r\nand a CRLF."},
    {"id": "é-1", "scope": "core", "content": "A duplicate id."},
]
EXPORTS = {
    "csv": ex.as_csv(ROWS),
    "csv-crlf": ex.as_csv(ROWS).replace(b"\n", b"\r\n"),
    "json": ex.as_json(ROWS),
    "json-one-line": ex.as_json(ROWS).replace(b"\n", b" "),
}


def read(data: bytes, fmt: str, size: int) -> Any:
    with mock.patch.object(legacy, "READ_SIZE", size):
        try:
            rows, problems = parse_export(data, fmt)
        except ExportError as exc:
            return ("error", str(exc), exc.line)
    return [(r.line, r.index, r.legacy_id, r.content, r.fingerprint) for r in rows], problems


@pytest.mark.parametrize("name", EXPORTS)
@settings(max_examples=15, deadline=None)
@given(size=st.integers(min_value=1, max_value=300))
def test_an_export_reads_the_same_whatever_the_size_of_a_read(name: str, size: int) -> None:
    data = EXPORTS[name]
    fmt = name.split("-")[0]
    whole = read(data, fmt, 1 << 30)
    assert read(data, fmt, size) == whole
    rows, problems = whole
    assert len(rows) + len(problems) == len(ROWS)
    assert any("Duplicate id 'é-1'" in p.reason for p in problems)


@pytest.mark.parametrize(
    ("data", "fmt", "line"),
    [
        (b'[{"id": 1, "scope": "core", "content": "x"},\n {"id": 2, \xff}]', "json", 2),
        (b"id,scope,content\n1,core,x\n2,core,\xffy\n", "csv", 3),
        (b'[{"id": 1, "scope": "core", "content": "x"},\n\n {"id": 2,, }]', "json", 3),
        (b'[{"id": 1, "scope": "core", "content": "x"}] extra', "json", 1),
    ],
)
@pytest.mark.parametrize("size", [1, 3, 7, 1 << 20])
def test_what_cannot_be_read_is_named_at_its_line_whatever_the_size_of_a_read(
    data: bytes, fmt: str, line: int, size: int
) -> None:
    outcome = read(data, fmt, size)
    assert outcome[0] == "error" and outcome[2] == line, outcome
