"""Content's tasks: the legacy import (an import job's id; the service does the rest) and
the entries' health check, after content changes (no argument: it catches up with every
change asked for).

The import is acknowledged late and given back when its worker dies, so a killed import runs again
(its one transaction rolled back, nothing half written); the service claims a job once,
so a repeated delivery of a job that is running or done does nothing. The service sends
it (``import_jobs``, by name), once the upload is committed.
"""

from __future__ import annotations

from celery import shared_task

from promptadmin.content.services import health, import_jobs


@shared_task(name=import_jobs.TASK, acks_late=True, reject_on_worker_lost=True)
def run_import(job_id: int) -> str:
    return import_jobs.import_job_run(job_id=job_id)


@shared_task(name=health.TASK, acks_late=True, reject_on_worker_lost=True)
def check_entry_health() -> int:
    """Bring the entries' findings up to date (the service claims the check: one at a
    time, and a repeated delivery finds nothing left to do)."""
    return health.entry_health_check()
