"""Reading exports of a legacy ``prompt_segments`` table, row by row, never crashing.

An export is a JSON array (as a hosted Postgres dashboard writes it) or CSV with a header
(as ``\\copy prompt_segments to FILE csv header`` writes it), with the columns ``id, scope,
ref_id, content, metadata, version, active, created_at, updated_at``. Every problem is
reported with the row's line number and the legacy id, so an admin can fix the export:
nothing here touches the database (``promptadmin.content.services.legacy`` does).

>>> rows, problems = parse_export(b'id,scope,ref_id,content\\r\\n7,core,,"Be terse."\\r\\n', "csv")
>>> (rows[0].line, rows[0].legacy_id, rows[0].scope, rows[0].content, problems)
(2, '7', 'core', 'Be terse.', [])
"""

from __future__ import annotations

import bisect
import csv
import hashlib
import io
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from promptadmin.content.models import DEPRECATED_SCOPES, SEGMENT_SCOPES
from promptadmin.core.storedjson import MAX_TEXT, StoredJsonError, check_stored_json

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
REQUIRED_COLUMNS = ("id", "scope", "content")
FORMATS = ("json", "csv")
MAX_ID = 64
MAX_VERSION = 32
# The csv module's default field limit (128 KiB) is below what one segment may hold: a
# field over the content limit must be reported for its row, not fail the whole file.
CSV_FIELD_LIMIT = 16 * 1024 * 1024
TRUE = {"t", "true", "1", "yes", "y", "on"}
FALSE = {"f", "false", "0", "no", "n", "off", ""}


class ExportError(ValueError):
    """The file as a whole cannot be read (not a row's fault); ``line`` where it failed."""

    def __init__(self, message: str, line: int | None = None) -> None:
        self.line = line
        super().__init__(message)


@dataclass(frozen=True)
class Problem:
    """A row that cannot be imported: where, which legacy id, and why."""

    line: int | None
    id: str | None
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {"line": self.line, "id": self.id, "reason": self.reason}


@dataclass
class LegacyRow:
    """One valid row of an export, normalised."""

    line: int
    legacy_id: str
    scope: str
    ref_id: str  # "" when empty
    content: str
    metadata: dict[str, Any]
    version: str
    active: bool
    created_at: datetime | None
    updated_at: datetime | None
    fingerprint: str = field(default="")

    @property
    def deprecated(self) -> bool:
        return self.scope in DEPRECATED_SCOPES


def format_from_name(name: str) -> str | None:
    """``json`` or ``csv`` from a file name's extension, else None."""
    lowered = name.lower()
    for fmt in FORMATS:
        if lowered.endswith(f".{fmt}"):
            return fmt
    return None


def _decode(data: bytes) -> str:
    try:
        text = data.decode("utf-8-sig")  # a BOM is dropped
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ExportError(
            f"The file is not UTF-8 (byte {exc.start}: {exc.reason}); export it as UTF-8.", line
        ) from None
    return text


def _json_records(text: str) -> list[tuple[int, Any]]:
    """The elements of a JSON array with the line each starts on."""
    newlines = [i for i, char in enumerate(text) if char == "\n"]

    def line_of(pos: int) -> int:
        return bisect.bisect_left(newlines, pos) + 1

    decoder = json.JSONDecoder()
    pos = _skip_ws(text, 0)
    if pos >= len(text) or text[pos] != "[":
        raise ExportError("A JSON export must be an array of rows ([{...}, ...]).", line_of(pos))
    pos = _skip_ws(text, pos + 1)
    records: list[tuple[int, Any]] = []
    if pos < len(text) and text[pos] == "]":
        return records
    while True:
        try:
            value, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise ExportError(f"The file is not valid JSON: {exc.msg}.", exc.lineno) from None
        except RecursionError:
            raise ExportError("The file nests too deeply to be a row.", line_of(pos)) from None
        records.append((line_of(pos), value))
        pos = _skip_ws(text, end)
        if pos < len(text) and text[pos] == ",":
            pos = _skip_ws(text, pos + 1)
            continue
        if pos < len(text) and text[pos] == "]":
            if _skip_ws(text, pos + 1) != len(text):
                raise ExportError("Unexpected text after the JSON array.", line_of(pos + 1))
            return records
        raise ExportError("The file is not valid JSON: expected ',' or ']'.", line_of(pos))


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _csv_records(text: str) -> list[tuple[int, Any]]:
    if csv.field_size_limit() < CSV_FIELD_LIMIT:
        csv.field_size_limit(CSV_FIELD_LIMIT)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    records: list[tuple[int, Any]] = []
    try:
        header = next(reader, None)
        if header is None:
            raise ExportError("The CSV file is empty: it needs a header row.", 1)
        names = [name.strip().lower() for name in header]
        missing = [name for name in REQUIRED_COLUMNS if name not in names]
        if missing:
            raise ExportError(
                f"The CSV header lacks the column(s) {', '.join(missing)}; expected "
                f"{', '.join(COLUMNS)}.",
                1,
            )
        start = reader.line_num + 1
        for values in reader:
            if values:
                if len(values) != len(names):
                    records.append(
                        (start, f"has {len(values)} fields where the header has {len(names)}")
                    )
                else:
                    records.append((start, dict(zip(names, values, strict=True))))
            start = reader.line_num + 1
    except csv.Error as exc:
        raise ExportError(f"The CSV file cannot be read: {exc}.", reader.line_num) from None
    return records


def _text(value: Any, name: str) -> str:
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(f"{name} must be text, not {type(value).__name__}")
    return str(value)


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if value is None:
        return False
    if isinstance(value, str) and value.strip().lower() in TRUE | FALSE:
        return value.strip().lower() in TRUE
    raise ValueError(f"active must be true or false, not {value!r:.40}")


def _when(value: Any, name: str) -> datetime | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise ValueError(f"{name} must be an ISO 8601 date, not {type(value).__name__}")
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ValueError(f"{name} {value!r:.60} is not an ISO 8601 date") from None
    # A time without a zone is read as UTC, as PostgreSQL's timestamp columns hold it.
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _metadata(value: Any) -> dict[str, Any]:
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"metadata is not valid JSON: {exc.msg} (column {exc.colno})"
            ) from None
        except RecursionError:
            raise ValueError("metadata nests too deeply") from None
    if not isinstance(value, dict):
        raise ValueError(f"metadata must be a JSON object, not {type(value).__name__}")
    try:
        check_stored_json(value)
    except StoredJsonError as exc:
        where = f" at {exc.path}" if exc.path else ""
        raise ValueError(f"metadata cannot be stored{where}: {exc.message}") from None
    return value


def _row(line: int, record: Any) -> LegacyRow:
    if not isinstance(record, dict):
        raise ValueError(f"a row must be an object with the columns {', '.join(COLUMNS)}")
    legacy_id = _text(record.get("id"), "id").strip()
    if not legacy_id:
        raise ValueError("id is empty")
    if len(legacy_id) > MAX_ID:
        raise ValueError(f"id is longer than {MAX_ID} characters")
    scope = _text(record.get("scope"), "scope").strip()
    if scope not in SEGMENT_SCOPES and scope not in DEPRECATED_SCOPES:
        raise ValueError(
            f"unknown scope {scope!r:.40}; expected one of "
            f"{', '.join((*SEGMENT_SCOPES, *DEPRECATED_SCOPES))}"
        )
    content = _text(record.get("content"), "content")
    if not content.strip():
        raise ValueError("content is empty")
    if len(content) > MAX_TEXT:
        raise ValueError(f"content is {len(content)} characters long; at most {MAX_TEXT}")
    if "\x00" in content:
        raise ValueError("content contains a NUL byte (U+0000), which cannot be stored")
    if not content.isascii():
        try:
            content.encode()
        except UnicodeEncodeError:
            raise ValueError("content contains a lone surrogate (U+D800 to U+DFFF)") from None
    ref_id = _text(record.get("ref_id"), "ref_id").strip()
    if "\x00" in ref_id or len(ref_id) > 200:
        raise ValueError("ref_id is not a slug or id")
    version = _text(record.get("version"), "version").strip() or "1.0.0"
    if len(version) > MAX_VERSION or "\x00" in version:
        raise ValueError(f"version is longer than {MAX_VERSION} characters or holds NUL")
    row = LegacyRow(
        line=line,
        legacy_id=legacy_id,
        scope=scope,
        ref_id=ref_id,
        content=content,
        metadata=_metadata(record.get("metadata")),
        version=version,
        active=_flag(record.get("active", True)),
        created_at=_when(record.get("created_at"), "created_at"),
        updated_at=_when(record.get("updated_at"), "updated_at"),
    )
    row.fingerprint = fingerprint(row)
    return row


def fingerprint(row: LegacyRow) -> str:
    """What identifies a row's exported values: a later export that changes any differs."""
    values = [
        row.scope,
        row.ref_id,
        row.content,
        row.metadata,
        row.version,
        row.active,
        row.created_at.isoformat() if row.created_at else None,
        row.updated_at.isoformat() if row.updated_at else None,
    ]
    encoded = json.dumps(values, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(encoded.encode()).hexdigest()


def parse_export(data: bytes, fmt: str) -> tuple[list[LegacyRow], list[Problem]]:
    """The valid rows of an export and a problem per invalid row, in file order.

    Raises :class:`ExportError` when the file as a whole cannot be read.
    """
    if fmt not in FORMATS:
        raise ExportError(f"Unknown format {fmt!r}; use json or csv.")
    text = _decode(data)
    records = _json_records(text) if fmt == "json" else _csv_records(text)
    rows: list[LegacyRow] = []
    problems: list[Problem] = []
    first_line: dict[str, int] = {}
    for line, record in records:
        raw_id = record.get("id") if isinstance(record, dict) else None
        shown_id = str(raw_id)[:MAX_ID] if isinstance(raw_id, str | int) else None
        if isinstance(record, str):  # a CSV row with the wrong number of fields
            problems.append(Problem(line, None, f"The row {record}."))
            continue
        try:
            row = _row(line, record)
        except ValueError as exc:
            problems.append(Problem(line, shown_id, f"{str(exc)[:1].upper()}{str(exc)[1:]}."))
            continue
        if row.legacy_id in first_line:
            problems.append(
                Problem(
                    line,
                    row.legacy_id,
                    f"Duplicate id {row.legacy_id!r}: already on line {first_line[row.legacy_id]}.",
                )
            )
            continue
        first_line[row.legacy_id] = line
        rows.append(row)
    return rows, problems
