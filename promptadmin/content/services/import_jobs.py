"""Legacy imports as background jobs: an upload is stored, then imported by a task.

``import_job_create`` checks who asks and what was sent (the format, the refs, a first
look at the file: a CSV header, the start of a JSON array), stores the upload in the
database in pieces (web and workers share nothing else) and enqueues the import once
that is committed. ``import_job_run``, called by the task, imports it with the one-
transaction guarantee of ``legacy_import.segments_import``, reading the pieces as it goes,
and keeps the report (or why it failed); the pieces are then deleted. While it runs, its
progress is kept in the cache (its writes are invisible until it commits).
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any, BinaryIO

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from promptadmin.content.legacy import FORMATS, ExportError, check_csv_header
from promptadmin.content.models import ImportChunk, ImportJob
from promptadmin.content.services.legacy_import import (
    MIGRATING,
    ImportProgress,
    segments_import,
)
from promptadmin.core.actors import Actor, is_key, user_or_none
from promptadmin.core.jobs import JobTask
from promptadmin.core.roles import Role, require

logger = logging.getLogger(__name__)

CHUNK_BYTES = 1024 * 1024
PROGRESS_TTL_SECONDS = 24 * 3600
PROGRESS_EVERY_SECONDS = 0.5
FIRST_LOOK_BYTES = 64 * 1024


def progress_key(job_id: int) -> str:
    return f"import-progress:{job_id}"


def _first_look(head: bytes, fmt: str) -> None:
    """ValidationError (``file``) when the start of the upload shows it cannot be an export
    of ``fmt``: no header with the required columns, or not a JSON array."""
    text = head.decode("utf-8-sig", errors="replace")
    if not text.strip():
        raise ValidationError({"file": "The file is empty."})
    if fmt == "json":
        if not text.lstrip(" \t\r\n").startswith("["):
            raise ValidationError(
                {"file": "A JSON export must be an array of rows ([{...}, ...]) (line 1)."}
            )
        return
    first_line = text.splitlines()[0] if text.splitlines() else ""
    names = [name.strip().strip('"').lower() for name in first_line.split(",")]
    try:
        check_csv_header(names)
    except ExportError as exc:
        raise ValidationError({"file": f"{str(exc).rstrip('.')} (line 1)."}) from None


def import_job_create(
    *,
    actor: Actor,
    upload: BinaryIO,
    name: str,
    fmt: str,
    refs: dict[str, str] | None = None,
    dry_run: bool = False,
    skip_invalid: bool = False,
) -> ImportJob:
    """Store ``upload`` (a binary file, read in pieces) as a queued import job and enqueue
    its import once committed; ValidationError for a format or a start that cannot be an
    export, or an upload over ``IMPORT_MAX_BYTES``."""
    require(actor, role=Role.ADMIN, action=MIGRATING)
    if fmt not in FORMATS:
        raise ValidationError({"format": f"Unknown format {fmt!r}; use json or csv."})
    head = upload.read(CHUNK_BYTES)
    _first_look(head[:FIRST_LOOK_BYTES], fmt)
    limit = settings.IMPORT_MAX_BYTES
    with transaction.atomic():
        job = ImportJob.objects.create(
            file_name=name[:255],
            format=fmt,
            size=0,
            refs=refs or {},
            dry_run=dry_run,
            skip_invalid=skip_invalid,
            created_by=user_or_none(actor),
            api_key=actor if is_key(actor) else None,
        )
        size, seq, data = 0, 0, head
        while data:
            size += len(data)
            if size > limit:
                raise ValidationError(
                    {"file": f"The file is over {limit} bytes (IMPORT_MAX_BYTES)."},
                    code="too_large",
                )
            ImportChunk.objects.create(job=job, seq=seq, data=data)
            seq += 1
            data = upload.read(CHUNK_BYTES)
        job.size = size
        job.save(update_fields=["size"])
        transaction.on_commit(lambda: _task.enqueue(job.pk))
    return job


# The import task, found by name in Celery's registry: the task module imports this one,
# never the other way round.
TASK = "promptadmin.content.tasks.run_import"
_task = JobTask(TASK, "import")


class ChunkReader(io.RawIOBase):
    """A job's upload as a binary stream, a stored piece at a time (one query each)."""

    def __init__(self, job_id: int) -> None:
        self._job_id = job_id
        self._seq = 0
        self._data = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if not self._data:
            piece = (
                ImportChunk.objects.filter(job_id=self._job_id, seq=self._seq)
                .values_list("data", flat=True)
                .first()
            )
            if piece is None:
                return 0
            self._seq += 1
            self._data = memoryview(bytes(piece))
        size = min(len(buffer), len(self._data))
        buffer[:size] = self._data[:size]
        self._data = self._data[size:]
        return size


def _progress(job_id: int) -> Callable[[ImportProgress], None]:
    last = [0.0]

    def note(done: ImportProgress) -> None:
        now = timezone.now().timestamp()
        if now - last[0] < PROGRESS_EVERY_SECONDS:
            return
        last[0] = now
        value = {"rows_read": done.rows_read, "bytes_read": done.bytes_read}
        cache.set(progress_key(job_id), value, timeout=PROGRESS_TTL_SECONDS)

    return note


def _claim(job_id: int) -> bool:
    """Take the job to run: queued, or left running by a worker that died (longer ago than
    any task may run)."""
    now = timezone.now()
    stale = now - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 60)
    claimed = (
        ImportJob.objects.filter(pk=job_id)
        .filter(
            Q(status=ImportJob.Status.QUEUED)
            | Q(status=ImportJob.Status.RUNNING, started_at__lt=stale)
        )
        .update(status=ImportJob.Status.RUNNING, started_at=now)
    )
    return claimed == 1


def import_job_run(*, job_id: int) -> str:
    """Import a queued job's upload (see the module docstring); its final status."""
    if not _claim(job_id):
        return "not_queued"
    job = ImportJob.objects.select_related("created_by", "api_key").get(pk=job_id)
    actor: Actor = job.api_key or job.created_by
    status, report, error = ImportJob.Status.FAILED, None, ""
    try:
        imported = segments_import(
            actor=actor,
            data=io.BufferedReader(ChunkReader(job.pk), buffer_size=CHUNK_BYTES),
            fmt=job.format,
            refs=job.refs,
            dry_run=job.dry_run,
            skip_invalid=job.skip_invalid,
            progress=_progress(job.pk),
        )
    except ValidationError as exc:
        error = " ".join(exc.messages)
    except Exception:
        logger.exception("import #%s failed", job.pk)
        error = "The import failed on the server (it is logged); nothing was written."
    else:
        status, report = ImportJob.Status.DONE, imported.as_dict()
    ImportJob.objects.filter(pk=job.pk).update(
        status=status,
        report=report,
        error=error,
        rows_read=report["rows"] if report else 0,
        finished_at=timezone.now(),
    )
    ImportChunk.objects.filter(job_id=job.pk).delete()
    cache.delete(progress_key(job.pk))
    return str(status)


def progress_of(job: ImportJob) -> dict[str, Any]:
    """Rows read and, while it runs, the rows in all (estimated from the bytes read until
    the import is done); bytes read of the upload's; a percentage."""
    if job.status == ImportJob.Status.DONE:
        return {
            "rows_read": job.rows_read,
            "rows_total": job.rows_read,
            "bytes_read": job.size,
            "bytes_total": job.size,
            "percent": 100.0,
        }
    noted = cache.get(progress_key(job.pk)) if job.status == ImportJob.Status.RUNNING else None
    rows = int(noted["rows_read"]) if noted else 0
    read = int(noted["bytes_read"]) if noted else 0
    estimate = round(rows * job.size / read) if rows and read else None
    percent = round(100 * read / job.size, 1) if job.size else 0.0
    return {
        "rows_read": rows,
        "rows_total": estimate,
        "bytes_read": read,
        "bytes_total": job.size,
        "percent": min(percent, 99.9) if job.status == ImportJob.Status.RUNNING else percent,
    }
