"""The legacy import task: takes an import job's id; the service does the rest.

Acknowledged late and given back when its worker dies, so a killed import runs again
(its one transaction rolled back, nothing half written); the service claims a job once,
so a repeated delivery of a job that is running or done does nothing.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor

from celery import current_app, shared_task
from django.conf import settings
from django.db import connections

from promptadmin.content.services import import_jobs

logger = logging.getLogger(__name__)

# Imports made in this process when there is no broker: one at a time (they take the same
# lock anyway), on a thread started on first use, so the upload's request does not wait.
_background = ThreadPoolExecutor(1, thread_name_prefix="imports")


@shared_task(acks_late=True, reject_on_worker_lost=True)
def run_import(job_id: int) -> str:
    return import_jobs.import_job_run(job_id=job_id)


def enqueue_import(job_id: int) -> None:
    """Send the task to the workers. Without a broker (``make run``), run it in this
    process: on a background thread, as summaries are (``SUMMARIZER_IN_BACKGROUND``), or
    else here and now (the test suite)."""
    if current_app.conf.task_always_eager:
        if settings.SUMMARIZER_IN_BACKGROUND:
            _background.submit(_run_in_background, job_id)
        else:
            run_import.apply(args=[job_id], throw=False)
        return
    try:
        run_import.delay(job_id)
    except Exception:  # the broker is down: the job stays queued, and says so
        logger.exception("import #%s could not be enqueued", job_id)


def _run_in_background(job_id: int) -> None:
    try:
        run_import.apply(args=[job_id], throw=False)
    finally:
        connections.close_all()  # this thread's own connection
