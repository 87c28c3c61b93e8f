"""Reading exports of a legacy ``prompt_segments`` table, row by row, never crashing.

An export is a JSON array (as a hosted Postgres dashboard writes it) or CSV with a header
(as ``\\copy prompt_segments to FILE csv header`` writes it), with the columns ``id, scope,
ref_id, content, metadata, version, active, created_at, updated_at``. Every problem is
reported with the row's line number, its position in the export (``row``: a JSON export
on one line has every row on line 1) and the legacy id, so an admin can fix the export:
nothing here touches the database (``promptadmin.content.services.legacy_import`` does).
An export is read as a stream (:func:`read_export`), a row at a time: its size is bounded
by the upload limit, never by memory.

>>> rows, problems = parse_export(b'id,scope,ref_id,content\\r\\n7,core,,"Be terse."\\r\\n', "csv")
>>> (rows[0].line, rows[0].index, rows[0].legacy_id, rows[0].scope, rows[0].content, problems)
(2, 1, '7', 'core', 'Be terse.', [])
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import io
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, BinaryIO

from assembler.storable import (
    MAX_TEXT,
    StoredJsonError,
    check_stored_json,
    has_lone_surrogate,
    printable,
)
from promptadmin.content.models import DEPRECATED_SCOPES, SEGMENT_SCOPES

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
# The largest refs file the API and the upload page take (an export's limit is the
# IMPORT_MAX_BYTES setting).
MAX_UPLOAD_BYTES = 100 * 1024 * 1024
# How much of an export is read at a time, and the most one JSON row may take.
READ_SIZE = 1024 * 1024
MAX_JSON_ROW = 16 * 1024 * 1024
MAX_ID = 64
MAX_VERSION = 32
# The csv module's default field limit (128 KiB) is below what one segment may hold: a
# field over the content limit must be reported for its row, not fail the whole file.
CSV_FIELD_LIMIT = 16 * 1024 * 1024
MAX_REF = 200
# The dates an import takes, in UTC. PostgreSQL stores dates Python cannot read (the year
# 10000 in UTC, from "9999-12-31T23:59:59-05:00"): one such row would break every page
# that lists it. No legacy table holds real content from outside these years.
FIRST_YEAR = 1900
LAST_YEAR = 2100
TRUE = {"t", "true", "1", "yes", "y", "on"}
FALSE = {"f", "false", "0", "no", "n", "off", ""}


class ExportError(ValueError):
    """The file as a whole cannot be read (not a row's fault); ``line`` where it failed."""

    def __init__(self, message: str, line: int | None = None) -> None:
        self.line = line
        super().__init__(message)


def sentence(text: str) -> str:
    """``text`` with a capital first letter and one final period."""
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "?", "!")) else f"{text}."


@dataclass(frozen=True)
class Problem:
    """A row that cannot be imported: where (line; ``row``, its position in the export, the
    first is 1), which legacy id, and why. The id and reason are kept showable."""

    line: int | None
    id: str | None
    reason: str
    row: int | None = None

    def __post_init__(self) -> None:
        # An export may hold anything: what a report quotes must print, encode and render.
        if self.id is not None:
            object.__setattr__(self, "id", printable(self.id))
        object.__setattr__(self, "reason", printable(self.reason))

    def as_dict(self) -> dict[str, Any]:
        return {"line": self.line, "row": self.row, "id": self.id, "reason": self.reason}


@dataclass(frozen=True)
class Unreadable:
    """An element of the export that is not a row that can be read: why, and its id if any."""

    reason: str
    id: str | None = None


@dataclass
class LegacyRow:
    """One valid row of an export, normalised."""

    line: int
    index: int  # its position in the export, the first is 1
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


class _Text:
    """An export's text, decoded as it is read, with where reading has got to.

    ``bytes_read`` counts the bytes taken from the stream; a byte that is not UTF-8 is an
    :class:`ExportError` naming its offset and line. A BOM at the start is dropped.
    """

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._lines_before = 0  # newlines in the text decoded so far
        self._started = False
        self.bytes_read = 0
        self.done = False

    def chunks(self) -> Iterator[str]:
        while not self.done:
            data = self._stream.read(READ_SIZE)
            final = not data
            pending = len(self._decoder.getstate()[0])
            try:
                text = self._decoder.decode(data, final)
            except UnicodeDecodeError as exc:
                at = exc.start - pending  # within ``data``
                line = self._lines_before + data[: max(0, at)].count(b"\n") + 1
                raise ExportError(
                    f"The file is not UTF-8 (byte {self.bytes_read + at}: {exc.reason}); "
                    "export it as UTF-8.",
                    line,
                ) from None
            self.bytes_read += len(data)
            self.done = final
            if not self._started and (text or final):
                self._started = True
                text = text.removeprefix("\ufeff")
            self._lines_before += text.count("\n")
            if text:
                yield text


def _lines(text: _Text) -> Iterator[str]:
    """The lines of the text, each with its line ending, as ``io.StringIO(newline="")``
    splits them ("\\n", "\\r\\n" or "\\r"); a line is never split between two reads."""
    rest = ""
    for chunk in text.chunks():
        lines = io.StringIO(rest + chunk, newline="").readlines()
        rest = ""
        if lines and not lines[-1].endswith("\n"):
            rest = lines.pop()  # not ended yet, or by a "\r" that a "\n" may follow
        yield from lines
    if rest:
        yield rest


def _decoder(too_long: list[int]) -> json.JSONDecoder:
    """A JSON decoder that reads an integer of more digits than Python converts (see
    ``sys.get_int_max_str_digits``) as None and notes its digits in ``too_long``."""

    def parse_int(digits: str) -> int | None:
        try:
            return int(digits)
        except ValueError:
            too_long.append(len(digits.lstrip("-")))
            return None

    return json.JSONDecoder(parse_int=parse_int)


def _too_long(digits: int) -> str:
    return (
        f"holds an integer of {digits} digits; at most {sys.get_int_max_str_digits()} can be read"
    )


def _loads(text: str, name: str) -> Any:
    """``json.loads`` for a cell or a small file, every failure a ValueError naming ``name``."""
    too_long: list[int] = []
    try:
        value = _decoder(too_long).decode(text)
    except json.JSONDecodeError as exc:
        where = (
            f"line {exc.lineno}, column {exc.colno}" if exc.lineno > 1 else f"column {exc.colno}"
        )
        raise ValueError(f"{name} is not valid JSON: {exc.msg} ({where})") from None
    except RecursionError:
        raise ValueError(f"{name} nests too deeply") from None
    if too_long:
        raise ValueError(f"{name} {_too_long(too_long[0])}")
    return value


_WHITESPACE = " \t\r\n"


def _json_records(text: _Text) -> Iterator[tuple[int, Any]]:
    """The elements of a JSON array with the line each starts on, read a row at a time."""
    too_long: list[int] = []
    decoder = _decoder(too_long)
    chunks = text.chunks()
    buffer = ""
    pos = 0
    line = 1  # the line ``pos`` is on

    def more() -> bool:
        """Read on; False at the end of the file."""
        nonlocal buffer, pos
        chunk = next(chunks, None)
        if chunk is None:
            return False
        buffer = buffer[pos:] + chunk
        pos = 0
        return True

    def skip() -> None:
        """Move past whitespace, reading on as needed (counting lines)."""
        nonlocal pos, line
        while True:
            end = len(buffer)
            while pos < end and buffer[pos] in _WHITESPACE:
                if buffer[pos] == "\n":
                    line += 1
                pos += 1
            if pos < end or not more():
                return

    def closed() -> bool:
        """Whether the array closes here; nothing but whitespace may follow its ']'."""
        nonlocal pos
        if pos >= len(buffer) or buffer[pos] != "]":
            return False
        pos += 1
        skip()
        if pos < len(buffer):
            raise ExportError("Unexpected text after the JSON array.", line)
        return True

    skip()
    if pos >= len(buffer) or buffer[pos] != "[":
        raise ExportError("A JSON export must be an array of rows ([{...}, ...]).", line)
    pos += 1
    skip()
    if closed():
        return
    while True:
        start_line = line
        while True:
            try:
                value, end = decoder.raw_decode(buffer, pos)
                break
            except json.JSONDecodeError as exc:
                # Perhaps only cut off where this read ended: read on, up to a row's limit.
                if len(buffer) - pos <= MAX_JSON_ROW and more():
                    continue
                raise ExportError(
                    f"The file is not valid JSON: {exc.msg}.",
                    start_line + buffer.count("\n", pos, exc.pos),
                ) from None
            except RecursionError:
                raise ExportError("The file nests too deeply to be a row.", start_line) from None
        line += buffer.count("\n", pos, end)
        pos = end
        if too_long:
            raw_id = value.get("id") if isinstance(value, dict) else None
            value = Unreadable(
                f"the row {_too_long(too_long[0])}",
                str(raw_id) if isinstance(raw_id, str | int) else None,
            )
            too_long.clear()
        yield start_line, value
        skip()
        if pos < len(buffer) and buffer[pos] == ",":
            pos += 1
            skip()
            continue
        if closed():
            return
        raise ExportError("The file is not valid JSON: expected ',' or ']'.", line)


def _csv_records(text: _Text) -> Iterator[tuple[int, Any]]:
    if csv.field_size_limit() < CSV_FIELD_LIMIT:
        csv.field_size_limit(CSV_FIELD_LIMIT)
    reader = csv.reader(_lines(text), strict=True)
    try:
        header = next(reader, None)
        if header is None:
            raise ExportError("The CSV file is empty: it needs a header row.", 1)
        names = [name.strip().lower() for name in header]
        check_csv_header(names)
        start = reader.line_num + 1
        for values in reader:
            if values:
                if len(values) != len(names):
                    yield (
                        start,
                        Unreadable(
                            f"the row has {len(values)} fields where the header has {len(names)}"
                        ),
                    )
                else:
                    yield start, dict(zip(names, values, strict=True))
            start = reader.line_num + 1
    except csv.Error as exc:
        raise ExportError(f"The CSV file cannot be read: {exc}.", reader.line_num) from None


def check_csv_header(names: list[str]) -> None:
    """ExportError unless a CSV header (names lowercased) has every required column."""
    missing = [name for name in REQUIRED_COLUMNS if name not in names]
    if missing:
        raise ExportError(
            f"The CSV header lacks the column(s) {', '.join(missing)}; expected "
            f"{', '.join(COLUMNS)}.",
            1,
        )


def _text(value: Any, name: str) -> str:
    """The text of a column; NUL and lone surrogates (which PostgreSQL refuses) refused."""
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(f"{name} must be text, not {type(value).__name__}")
    text = str(value)
    if "\x00" in text:
        raise ValueError(f"{name} contains a NUL byte (U+0000), which cannot be stored")
    if has_lone_surrogate(text):
        raise ValueError(f"{name} contains a lone surrogate (U+D800 to U+DFFF), which is not UTF-8")
    return text


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
    parsed = parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
    try:
        year = parsed.astimezone(UTC).year
    except OverflowError:  # before the year 1 or after 9999 once in UTC
        year = None
    if year is None or not FIRST_YEAR <= year <= LAST_YEAR:
        raise ValueError(
            f"{name} {value!r:.60} is outside the dates an import takes: between the years "
            f"{FIRST_YEAR} and {LAST_YEAR} in UTC"
        )
    # Kept with its own offset: the fingerprint of a row must not change between versions.
    return parsed


def _metadata(value: Any) -> dict[str, Any]:
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        value = _loads(value, "metadata")
    if not isinstance(value, dict):
        raise ValueError(f"metadata must be a JSON object, not {type(value).__name__}")
    try:
        check_stored_json(value)
    except StoredJsonError as exc:
        where = f" at {exc.path}" if exc.path else ""  # escaped in the Problem
        raise ValueError(f"metadata cannot be stored{where}: {exc.message}") from None
    return value


def _row(line: int, index: int, record: Any) -> LegacyRow:
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
    ref_id = _text(record.get("ref_id"), "ref_id").strip()
    if len(ref_id) > MAX_REF:
        raise ValueError(f"ref_id is longer than {MAX_REF} characters: not a slug or id")
    version = _text(record.get("version"), "version").strip() or "1.0.0"
    if len(version) > MAX_VERSION:
        raise ValueError(f"version is longer than {MAX_VERSION} characters")
    row = LegacyRow(
        line=line,
        index=index,
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


def check_refs(refs: Any) -> dict[str, str]:
    """``refs`` if it maps legacy ref ids to slugs (or ``kind:slug``), else ExportError.

    >>> check_refs({"12": "iron-coast", "40": "entry:drowned-bell"})
    {'12': 'iron-coast', '40': 'entry:drowned-bell'}
    """
    if not isinstance(refs, dict) or not all(
        isinstance(key, str) and isinstance(value, str) for key, value in refs.items()
    ):
        raise ExportError(
            'The refs file must be a JSON object from legacy id to slug, e.g. {"12": '
            '"iron-coast", "40": "entry:drowned-bell"}.'
        )
    for key, value in refs.items():
        try:
            _text(key, "a legacy id")
            _text(value, f"the slug of {key!r:.60}")
        except ValueError as exc:
            raise ExportError(f"The refs file: {exc}.") from None
        if len(value) > MAX_REF:
            raise ExportError(
                f"The refs file: the slug of {key!r:.60} is longer than {MAX_REF} characters."
            )
    return refs


def parse_refs(data: bytes) -> dict[str, str]:
    """A refs file (``--refs``, the upload's ``refs``): legacy ref id -> slug or ``kind:slug``.

    Raises :class:`ExportError` with a sentence saying what is wrong with the file.
    """
    try:
        text = data.decode("utf-8-sig")  # an editor on Windows saves a BOM
    except UnicodeDecodeError as exc:
        raise ExportError(f"The refs file is not UTF-8 (byte {exc.start}: {exc.reason}).") from None
    try:
        refs = _loads(text, "the refs file")
    except ValueError as exc:
        raise ExportError(sentence(str(exc))) from None
    return check_refs(refs)


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


class Export:
    """The rows of an export as it is read: each a :class:`LegacyRow` or, for an invalid
    row, a :class:`Problem`, in file order; ``bytes_read`` says how far reading has got.

    Iterating raises :class:`ExportError` when the file as a whole cannot be read (at
    once for a bad header, or where it stops being readable). A duplicate id is a
    problem of its later row; the ids seen are kept (one small entry each, whatever the
    size of the rows).
    """

    def __init__(self, stream: BinaryIO, fmt: str) -> None:
        if fmt not in FORMATS:
            raise ExportError(f"Unknown format {fmt!r}; use json or csv.")
        self._text = _Text(stream)
        self._fmt = fmt

    @property
    def bytes_read(self) -> int:
        return self._text.bytes_read

    def __iter__(self) -> Iterator[LegacyRow | Problem]:
        records = _json_records(self._text) if self._fmt == "json" else _csv_records(self._text)
        # legacy id -> where its first row is: (line << 32) | row, one int per id.
        first: dict[str, int] = {}
        for index, (line, record) in enumerate(records, start=1):
            if isinstance(record, Unreadable):
                yield Problem(line, record.id, sentence(record.reason), index)
                continue
            raw_id = record.get("id") if isinstance(record, dict) else None
            shown_id = str(raw_id)[:MAX_ID] if isinstance(raw_id, str | int) else None
            try:
                row = _row(line, index, record)
            except ValueError as exc:
                yield Problem(line, shown_id, sentence(str(exc)), index)
                continue
            seen = first.get(row.legacy_id)
            if seen is not None:
                where = f"line {seen >> 32}, row {seen & 0xFFFFFFFF}"
                yield Problem(
                    line,
                    row.legacy_id,
                    f"Duplicate id {row.legacy_id!r}: already on {where}.",
                    index,
                )
                continue
            first[row.legacy_id] = (line << 32) | index
            yield row


def read_export(stream: BinaryIO, fmt: str) -> Export:
    """The rows of the export in ``stream`` (see :class:`Export`), read as they are asked for."""
    return Export(stream, fmt)


def parse_export(data: bytes, fmt: str) -> tuple[list[LegacyRow], list[Problem]]:
    """The valid rows of an export and a problem per invalid row, in file order.

    Raises :class:`ExportError` when the file as a whole cannot be read.
    """
    rows: list[LegacyRow] = []
    problems: list[Problem] = []
    for item in read_export(io.BytesIO(data), fmt):
        (rows if isinstance(item, LegacyRow) else problems).append(item)
    return rows, problems
