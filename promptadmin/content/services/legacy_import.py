"""Import an export of a legacy ``prompt_segments`` table: safe, audited, idempotent, fast.

One transaction: either every valid row is written (with a history record each, in bulk)
or nothing is. A killed process leaves the database as it was (PostgreSQL rolls the open
transaction back). The legacy id is unique in the database, so a second run of the same
file changes nothing, and a row that changed in a later export is reported as a conflict,
never written over what is stored.

The export is read as a stream and written in batches as it is read (COPY on
PostgreSQL), so memory holds a batch, not the file: a million rows import within the
same bounds as a thousand. On PostgreSQL a batch is written on a thread of its own, on
the import's connection and in its transaction, while the next is read, checked and made
into COPY data. An invalid row found after batches were written (and no
``skip_invalid``) rolls them all back with the transaction: nothing is written.
"""

from __future__ import annotations

import io
import json
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.utils import timezone
from psycopg import Copy
from psycopg.copy import FileWriter
from simple_history.utils import bulk_create_with_history

from assembler.request import MAX_TIER
from promptadmin.content.kinds import KINDS
from promptadmin.content.legacy import (
    ExportError,
    LegacyRow,
    Problem,
    check_refs,
    read_export,
)
from promptadmin.content.models import SCOPE_REF_FIELD, Scope, Segment
from promptadmin.core.actors import Actor, is_key, key_label, user_or_none
from promptadmin.core.cache import content_changed
from promptadmin.core.roles import Role, require
from promptadmin.core.text import normalize_newlines
from promptadmin.core.tokens import tokenizer

BATCH_SIZE = 2000
# Serialises imports, so two at once cannot both decide that the same legacy id is new.
IMPORT_LOCK_ID = 0x5E6_1E6A  # "segment legacy"
MIGRATION_NOTE = (
    "Imported inactive from a legacy export: scope '{scope}' is no longer assembled (the "
    "caller supplies it at run time). Copy its text to an allowed scope or dismiss it on the "
    "deprecated content page."
)
CHANGE_REASON = "Imported from a legacy export"


class ReviewKey:
    """Where the review of deprecated content (services/deprecated.py) keeps its state in a
    deprecated row's metadata, and where a copy links back to its source.

    Listed here, beside the import that keeps an export's own values of them apart (the
    review imports this module, not the other way round).
    """

    STATUS = "review_status"
    REASON = "review_reason"
    COPIES = "copies"
    UNDONE_COPIES = "undone_copies"
    COPIED_FROM = "copied_from"
    COPIED_FROM_SCOPE = "copied_from_scope"
    ALL = (STATUS, REASON, COPIES, UNDONE_COPIES, COPIED_FROM, COPIED_FROM_SCOPE)


# What the import writes in a deprecated row's metadata, what the review keeps there
# (ReviewKey), and migration 0004's marker (its reverse reactivates the rows that carry
# it). An export that already has any of these keys keeps its values under
# LEGACY_METADATA: never overwritten, never taken for a review state.
IMPORT_KEYS = (
    "deprecated_scope",
    "deprecated_at",
    "original_id",
    "original_ref",
    "original_ref_id",
    "original_active",
    "migration_note",
)
LEGACY_METADATA = "legacy_metadata"
RESERVED_KEYS = frozenset(
    (*IMPORT_KEYS, *ReviewKey.ALL, "deactivated_by_migration", LEGACY_METADATA)
)
TITLE_MAX = Segment._meta.get_field("title").max_length or 0

#: What the permission error says imports and the review of deprecated content are.
MIGRATING = "Importing and migrating deprecated content"


@dataclass(frozen=True)
class ImportProgress:
    """Where an import has got to: rows read, rows written (not yet committed), bytes read."""

    rows_read: int
    rows_written: int
    bytes_read: int


Progress = Callable[[ImportProgress], None]


@dataclass
class ImportReport:
    """What an import did (or, for a dry run or a refused import, would do)."""

    dry_run: bool
    rows: int = 0
    created: Counter[str] = field(default_factory=Counter)
    unchanged: Counter[str] = field(default_factory=Counter)
    conflicts: list[Problem] = field(default_factory=list)
    errors: list[Problem] = field(default_factory=list)
    refused: bool = False  # an invalid row and no skip_invalid: nothing was written

    def as_dict(self) -> dict[str, Any]:
        """The report as the API and ``--report FILE`` give it."""
        return {
            "dry_run": self.dry_run,
            "refused": self.refused,
            "rows": self.rows,
            "created": dict(sorted(self.created.items())),
            "unchanged": sum(self.unchanged.values()),
            "unchanged_by_scope": dict(sorted(self.unchanged.items())),
            "conflicts": [p.as_dict() for p in self.conflicts],
            "errors": [p.as_dict() for p in self.errors],
        }

    def lines(self) -> Iterator[str]:
        """The report for people, as the command prints it."""
        verb = "would create" if self.dry_run or self.refused else "created"
        if self.refused and self.dry_run:
            yield (
                f"DRY RUN: {len(self.errors)} invalid row(s); an import of this file would be "
                "refused (fix them, or pass --skip-invalid to import the valid rows)."
            )
        elif self.refused:
            yield (
                f"REFUSED: {len(self.errors)} invalid row(s); nothing was imported "
                "(fix them, or pass --skip-invalid to import the valid rows)."
            )
        elif self.dry_run:
            yield "DRY RUN: nothing was written."
        yield f"{self.rows} row(s) read."
        scopes = sorted(set(self.created) | set(self.unchanged))
        for scope in scopes:
            yield (
                f"  {scope:<12} {verb} {self.created[scope]:>6}   "
                f"unchanged {self.unchanged[scope]:>6}"
            )
        yield (
            f"{verb.capitalize()} {sum(self.created.values())}, unchanged "
            f"{sum(self.unchanged.values())}, conflicts {len(self.conflicts)}, invalid "
            f"{len(self.errors)}."
        )
        for title, problems in (("Conflicts", self.conflicts), ("Not imported", self.errors)):
            if problems:
                yield f"{title}:"
                for problem in problems:
                    where = f"line {problem.line}" if problem.line is not None else "file"
                    row = f", row {problem.row}" if problem.row is not None else ""
                    ident = f" (id {problem.id})" if problem.id is not None else ""
                    yield f"  {where}{row}{ident}: {problem.reason}"


class _Targets:
    """Ids of the objects allowed-scope rows name, per kind and slug, looked up as batches
    need them (a query per kind for the slugs not yet known)."""

    def __init__(self, refs: dict[str, str]) -> None:
        self._refs = refs
        self.found: dict[str, dict[str, int]] = {kind: {} for kind in KINDS}
        self._asked: dict[str, set[str]] = {kind: set() for kind in KINDS}

    def load(self, rows: list[LegacyRow]) -> None:
        wanted: dict[str, set[str]] = {kind: set() for kind in KINDS}
        for row in rows:
            kind = SCOPE_REF_FIELD.get(row.scope)
            if kind and row.ref_id:
                slug = _split(self._refs.get(row.ref_id, row.ref_id))[1]
                if slug not in self._asked[kind]:
                    wanted[kind].add(slug)
        for kind, slugs in wanted.items():
            if slugs:
                self._asked[kind] |= slugs
                model = KINDS[kind].model
                self.found[kind].update(
                    model._default_manager.filter(slug__in=slugs).values_list("slug", "pk")
                )


def _split(target: str) -> tuple[str | None, str]:
    """``"entry:drowned-bell"`` -> ``("entry", "drowned-bell")``; a bare slug has no kind."""
    kind, sep, slug = target.partition(":")
    return (kind, slug) if sep and kind in KINDS else (None, target)


def _resolve(row: LegacyRow, refs: dict[str, str], targets: dict[str, dict[str, int]]) -> Any:
    """The foreign key values of an allowed-scope row, or raise ValueError naming the ref."""
    kind = SCOPE_REF_FIELD[row.scope]
    target = refs.get(row.ref_id, row.ref_id)
    if kind is None:
        if row.ref_id:
            raise ValueError(f"A '{row.scope}' segment belongs to nothing, but ref_id is given.")
        return {}
    if not row.ref_id:
        raise ValueError(f"A '{row.scope}' segment needs a {kind} in ref_id; it is empty.")
    named_kind, slug = _split(target)
    if named_kind is not None and named_kind != kind:
        raise ValueError(
            f"ref_id {row.ref_id!r:.60} maps to a {named_kind}; a '{row.scope}' segment "
            f"belongs to a {kind}."
        )
    pk = targets[kind].get(slug)
    if pk is None:
        via = f" (ref_id {row.ref_id!r:.60} via the mapping)" if row.ref_id in refs else ""
        raise ValueError(
            f"Unknown {KINDS[kind].label} {slug!r:.60}{via}: create it first, or map the "
            "legacy id to a slug in a refs file."
        )
    return {f"{kind}_id": pk}


def title_from_metadata(metadata: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A segment's title and the rest of its metadata, from metadata that may hold one.

    The rule of migration 0008, which moved titles out of the metadata: a string
    ``"title"`` that fits the column (once stripped) moves there; anything else stays in the
    metadata, so no word is lost.

    >>> title_from_metadata({"title": " Narrator ", "tags": ["intro"]})
    ('Narrator', {'tags': ['intro']})
    >>> title_from_metadata({"title": 7})
    ('', {'title': 7})
    """
    title = metadata.get("title")
    if not isinstance(title, str) or len(title.strip()) > TITLE_MAX:
        return "", metadata
    return title.strip(), {key: value for key, value in metadata.items() if key != "title"}


def tier_from_metadata(scope: str, metadata: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """An NPC segment's tier and the rest of its metadata, from metadata that may hold one.

    Legacy exports kept an NPC row's tier in its metadata; the segment has a column for
    it, which assembly reads. A whole number the column holds moves there; anything else
    (and any other scope's ``"tier"``) stays in the metadata, so no word is lost.

    >>> tier_from_metadata("npc", {"tier": 1, "mood": "wary"})
    (1, {'mood': 'wary'})
    >>> tier_from_metadata("npc", {"tier": "high"}), tier_from_metadata("world", {"tier": 2})
    ((0, {'tier': 'high'}), (0, {'tier': 2}))
    """
    tier = metadata.get("tier")
    if (
        scope != Scope.NPC
        or isinstance(tier, bool)
        or not isinstance(tier, int)
        or not 0 <= tier <= MAX_TIER
    ):
        return 0, metadata
    return tier, {key: value for key, value in metadata.items() if key != "tier"}


def set_aside_reserved(metadata: dict[str, Any]) -> dict[str, Any]:
    """Exported metadata with the keys the import and the review own moved under
    ``legacy_metadata``, so that what the import writes next to them loses no word.

    >>> set_aside_reserved({"original_id": "x9", "review_status": "dismissed", "n": 1})
    {'n': 1, 'legacy_metadata': {'original_id': 'x9', 'review_status': 'dismissed'}}
    >>> set_aside_reserved({"n": 1})
    {'n': 1}
    """
    kept = {key: value for key, value in metadata.items() if key in RESERVED_KEYS}
    if not kept:
        return metadata
    rest = {key: value for key, value in metadata.items() if key not in RESERVED_KEYS}
    return {**rest, LEGACY_METADATA: kept}


def _values(row: LegacyRow, refs: dict[str, str], fks: dict[str, int], who: _Who) -> dict[str, Any]:
    """The column values (by attname) of the segment an import makes of ``row``."""
    title, metadata = title_from_metadata(dict(row.metadata))
    tier, metadata = tier_from_metadata(row.scope, metadata)
    if row.deprecated:
        metadata = set_aside_reserved(metadata)
        original_ref = refs.get(row.ref_id, row.ref_id) or None
        metadata.update(
            deprecated_scope=row.scope,
            deprecated_at=who.now_text,
            original_id=row.legacy_id,
            original_ref=original_ref,
            original_active=row.active,
            migration_note=MIGRATION_NOTE.format(scope=row.scope),
        )
        if row.ref_id in refs:
            metadata["original_ref_id"] = row.ref_id
    created = row.created_at or who.now
    return {
        **fks,
        "scope": row.scope,
        "title": normalize_newlines(title),
        "content": normalize_newlines(row.content),
        "metadata": metadata,
        "version": row.version,
        "tier": tier,
        "active": row.active and not row.deprecated,
        "created_at": created,
        "updated_at": row.updated_at or created,
        "legacy_id": row.legacy_id,
        "legacy_hash": row.fingerprint,
        "created_by_id": who.user_id,
        "updated_by_id": who.user_id,
    }


@dataclass(frozen=True)
class _Who:
    """Who imports and when: what every row and history record of one import shares."""

    user: Any
    user_id: int | None
    reason: str
    now: Any
    now_text: str  # ISO 8601, as a deprecated row's metadata gives it

    @classmethod
    def of(cls, actor: Actor) -> _Who:
        user = user_or_none(actor)
        reason = (key_label(actor) if is_key(actor) else CHANGE_REASON)[:100]
        now = timezone.now()
        return cls(user, getattr(user, "pk", None), reason, now, now.isoformat())


class _Undo(Exception):
    """Rolls back an import found invalid after some batches were written."""


def segments_import(
    *,
    actor: Actor,
    data: bytes | BinaryIO,
    fmt: str,
    refs: dict[str, str] | None = None,
    dry_run: bool = False,
    skip_invalid: bool = False,
    progress: Progress | None = None,
) -> ImportReport:
    """Import the rows of a legacy export; see the module docstring for the guarantees.

    ``data`` is the export, as bytes or a binary stream read as the import goes.
    ``refs`` maps legacy ref ids to slugs or ``kind:slug`` (see ``legacy.parse_refs``); a
    file that cannot be read at all, or refs that are not such a mapping, raise
    ``ValidationError`` (key ``file`` or ``refs``). Invalid
    rows are reported in ``errors``; unless ``skip_invalid``, any makes the import refuse
    (``refused``) and write nothing. ``dry_run`` reports exactly what a real run would do
    and writes nothing. ``progress`` is called after each batch read.
    """
    require(actor, role=Role.ADMIN, action=MIGRATING)
    try:
        refs = check_refs(refs or {})
    except ExportError as exc:
        raise ValidationError({"refs": str(exc)}) from None
    stream = io.BytesIO(data) if isinstance(data, bytes | bytearray) else data
    report = ImportReport(dry_run=dry_run)
    try:
        with transaction.atomic():
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_xact_lock(%s)", [IMPORT_LOCK_ID])
            run = _Run(report, actor, refs, dry_run=dry_run, skip_invalid=skip_invalid)
            export = read_export(stream, fmt)
            batch: list[LegacyRow] = []
            try:
                for item in export:
                    report.rows += 1
                    if isinstance(item, Problem):
                        run.problem(item)
                        continue
                    batch.append(item)
                    if len(batch) >= BATCH_SIZE:
                        run.batch(batch)
                        batch = []
                        if progress is not None:
                            progress(ImportProgress(report.rows, run.written, export.bytes_read))
                run.batch(batch)
                run.flush()
            finally:
                # Written, or failed, before the transaction ends either way.
                run.finish()
            if progress is not None:
                progress(ImportProgress(report.rows, run.written, export.bytes_read))
            report.errors.sort(key=lambda p: p.row or 0)
            report.refused = bool(report.errors) and not skip_invalid
            if report.refused and run.written:
                raise _Undo
            if run.active:
                content_changed()
    except _Undo:
        pass
    except ExportError as exc:
        where = f" (line {exc.line})" if exc.line is not None else ""
        raise ValidationError({"file": f"{str(exc).rstrip('.')}{where}."}) from None
    return report


class _Run:
    """One import's batches: sorted into unchanged, conflicting, invalid and new rows, the
    new ones written at once (unless a dry run, or once the import is sure to refuse)."""

    def __init__(
        self,
        report: ImportReport,
        actor: Actor,
        refs: dict[str, str],
        *,
        dry_run: bool,
        skip_invalid: bool,
    ) -> None:
        self.report = report
        self.refs = refs
        self.targets = _Targets(refs)
        self.who = _Who.of(actor)
        self.dry_run = dry_run
        self.skip_invalid = skip_invalid
        self.written = 0
        self.active = False
        self._writer: _Writer | None = None
        self._ready: tuple[int, bool] | None = None  # rows made ready to write, any active

    def problem(self, problem: Problem) -> None:
        self.report.errors.append(problem)

    def _writing(self) -> bool:
        # Once an invalid row makes the import refuse, nothing more is worth writing.
        return not self.dry_run and (self.skip_invalid or not self.report.errors)

    def _send(self) -> None:
        """Start writing the batch made ready last (unless the import now refuses)."""
        ready, self._ready = self._ready, None
        if ready is None or self._writer is None:
            return
        if not self._writing():
            self._writer.discard()
            return
        self._writer.send()
        self.written += ready[0]
        self.active = self.active or ready[1]

    def flush(self) -> None:
        """Write the last batch made ready (after the last batch read)."""
        if self._writer is not None:
            self._writer.finish()
            self._send()

    def finish(self) -> None:
        """Wait for the batch being written; raises what writing it raised."""
        if self._writer is not None:
            self._writer.finish()

    def batch(self, rows: list[LegacyRow]) -> None:
        if not rows:
            return
        if self._writer is not None:
            self._writer.finish()  # the connection is this thread's again
        report = self.report
        existing = _existing([row.legacy_id for row in rows])
        self.targets.load(rows)
        # The previous batch, made ready last time, is written while this one is sorted
        # and made ready: the database works while this thread does. (A legacy id is in
        # a file once, so no row of this batch is among those: what it is looked up
        # against is what was there before the import.)
        self._send()
        new: list[dict[str, Any]] = []
        for row in rows:
            stored = existing.get(row.legacy_id)
            if stored is not None:
                if stored == row.fingerprint:
                    report.unchanged[row.scope] += 1
                else:
                    report.conflicts.append(
                        Problem(
                            row.line,
                            row.legacy_id,
                            "Already imported, and the row differs from what was imported "
                            "then: kept as stored; review it and change the segment by hand.",
                            row.index,
                        )
                    )
                continue
            try:
                fks = {} if row.deprecated else _resolve(row, self.refs, self.targets.found)
            except ValueError as exc:
                self.problem(Problem(row.line, row.legacy_id, str(exc), row.index))
                continue
            report.created[row.scope] += 1
            if self._writing():
                new.append(_values(row, self.refs, fks, self.who))
        if new and self._writing():
            if self._writer is None:
                self._writer = _Writer(self.who)
            self._writer.ready(new)
            self._ready = (len(new), any(values["active"] for values in new))


EXISTING = f"SELECT legacy_id, legacy_hash FROM {Segment._meta.db_table} WHERE legacy_id = ANY(%s)"


def _existing(ids: list[str]) -> dict[str, str]:
    """Legacy id -> stored fingerprint, for the ids already imported (one query on
    PostgreSQL, elsewhere one per 5,000)."""
    if connection.vendor == "postgresql":
        # The ids as one array, not a placeholder each for psycopg to find in the query.
        with connection.cursor() as cursor:
            cursor.execute(EXISTING, [ids])
            return dict(cursor.fetchall())
    found: dict[str, str] = {}
    for start in range(0, len(ids), 5000):
        chunk = ids[start : start + 5000]
        found.update(
            Segment.objects.filter(legacy_id__in=chunk).values_list("legacy_id", "legacy_hash")
        )
    return found


class _Writer:
    """Writes new segments and a "+" history record each (what django-simple-history's
    ``bulk_create_with_history`` writes: who, when, why), counting their tokens.

    On PostgreSQL with COPY, row values straight from the export (model instances and the
    ORM's per-field preparation took most of a large import's time), and the history
    records copied from the rows written by PostgreSQL itself (INSERT ... SELECT): two
    statements a batch. Elsewhere (SQLite, development) through the ORM.
    """

    def __init__(self, who: _Who) -> None:
        self.who = who
        self.tok = tokenizer()
        fields = Segment._meta.concrete_fields
        history = Segment.history.model  # type: ignore[attr-defined]
        # The id is the table's to draw (its identity): the history records are found by
        # legacy id.
        self.columns = [f.attname for f in fields if f.attname != "id"]
        # What every row shares unless the export says otherwise: the fields' defaults.
        self.defaults = {
            f.attname: f.get_default() for f in fields if f.attname not in ("id", "metadata")
        }
        qn = connection.ops.quote_name
        table = qn(Segment._meta.db_table)
        names = ", ".join(qn(Segment._meta.get_field(a).column) for a in self.columns)
        self.copy_rows = f"COPY {table} ({names}) FROM STDIN"
        extra = {
            "history_date": who.now,
            "history_change_reason": who.reason,
            "history_type": "+",
            "history_user_id": who.user_id,
        }
        columns = [f for f in history._meta.concrete_fields if f.attname != "history_id"]
        self.history_params = [extra[f.attname] for f in columns if f.attname in extra]
        picked = ", ".join("%s" if f.attname in extra else qn(f.column) for f in columns)
        self.insert_history = (
            f"INSERT INTO {qn(history._meta.db_table)}"
            f" ({', '.join(qn(f.column) for f in columns)})"
            f" SELECT {picked} FROM {table} WHERE {qn('legacy_id')} = ANY(%s)"
        )
        # Made ready, not yet sent: COPY data and its rows' legacy ids on PostgreSQL, rows
        # elsewhere.
        self._data: tuple[bytes, list[str]] | None = None
        self._rows: list[dict[str, Any]] = []
        self._copying: threading.Thread | None = None
        self._failed: BaseException | None = None

    def ready(self, rows: list[dict[str, Any]]) -> None:
        """Make ``rows`` ready to write, counting their tokens: on PostgreSQL, into COPY
        data, here, while the previous batch may still be written (the connection is not
        used)."""
        self._count(rows)
        if connection.vendor == "postgresql":
            self._data = (self._copy_data(rows), [values["legacy_id"] for values in rows])
        else:
            self._rows = rows

    def discard(self) -> None:
        self._data, self._rows = None, []

    def send(self) -> None:
        """Write the rows made ready. On PostgreSQL on a thread of its own, while the
        caller goes on, until :meth:`finish`, which the caller must call before it uses
        the connection again."""
        if self._data is not None:
            self.finish()
            (data, ids), self._data = self._data, None
            self._copying = threading.Thread(
                target=self._copy_caught,
                args=(data, ids, connection.connection),
                name="import-copy",
                daemon=True,
            )
            self._copying.start()
            return
        segments = [Segment(**values) for values in self._rows]
        self._rows = []
        bulk_create_with_history(
            segments,
            Segment,
            batch_size=BATCH_SIZE,
            default_user=self.who.user,
            default_change_reason=self.who.reason,
            default_date=self.who.now,
        )

    def _count(self, rows: list[dict[str, Any]]) -> None:
        tok = self.tok
        for values in rows:
            values["token_count"] = tok.count(values["content"])
            values["token_encoding"] = tok.name

    def _copy_data(self, rows: list[dict[str, Any]]) -> bytes:
        """The COPY data of ``rows``, made by psycopg (with the adapters of the import's
        connection) without sending it: the writing thread then only sends bytes, and
        needs the interpreter (the GIL) the importing thread is busy with for little."""
        defaults, columns = self.defaults, self.columns
        data = io.BytesIO()
        # A cursor uses no connection until it runs a query; this one never does.
        cursor = connection.connection.cursor()
        with Copy(cursor, binary=False, writer=FileWriter(data)) as copy:
            for values in rows:
                row = {**defaults, **values}
                # jsonb takes JSON text.
                row["metadata"] = json.dumps(row["metadata"], ensure_ascii=False)
                copy.write_row([row[a] for a in columns])
        return data.getvalue()

    def finish(self) -> None:
        """Wait for the COPY under way, if any; raise what it raised."""
        copying, self._copying = self._copying, None
        if copying is None:
            return
        copying.join()
        failed, self._failed = self._failed, None
        if failed is not None:
            raise failed

    def _copy_caught(self, data: bytes, ids: list[str], raw: Any) -> None:
        try:
            self._copy(data, ids, raw)
        except BaseException as exc:  # raised in the importing thread by finish()
            self._failed = exc

    def _copy(self, data: bytes, ids: list[str], raw: Any) -> None:
        """COPY ``data`` (the rows of legacy ids ``ids``) and write their history records
        on ``raw``, the import's own psycopg connection (in its transaction), from the
        thread :meth:`send` started: the importing thread does not use the connection
        meanwhile."""
        with raw.cursor() as cursor:
            with cursor.copy(self.copy_rows) as copy:
                copy.write(data)
            cursor.execute(self.insert_history, [*self.history_params, ids])
