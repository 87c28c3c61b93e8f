"""Sending a job's task (one that takes the job's id) to the workers, or running it in
this process when there is no broker."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import connections

logger = logging.getLogger(__name__)


class JobTask:
    """The task called ``name`` in Celery's registry (the task module imports the module
    that makes the jobs, never the other way round); ``what`` names a job in the log."""

    def __init__(self, name: str, what: str) -> None:
        self.name = name
        self.what = what
        # Jobs run in this process when there is no broker: one at a time (they take the
        # same lock anyway), on a thread started on first use, so no request waits.
        self._background = ThreadPoolExecutor(1, thread_name_prefix=what)

    def enqueue(self, job_id: int) -> None:
        """Send the task to the workers. Without a broker (``make run``), run it in this
        process: on a background thread, as summaries are (``SUMMARIZER_IN_BACKGROUND``),
        or else here and now (the test suite)."""
        task = current_app.tasks[self.name]
        if current_app.conf.task_always_eager:
            if settings.SUMMARIZER_IN_BACKGROUND:
                self._background.submit(_run_in_background, task, job_id)
            else:
                task.apply(args=[job_id], throw=False)
            return
        try:
            task.delay(job_id)
        except Exception:  # the broker is down: the job stays queued, and says so
            logger.exception("%s #%s could not be enqueued", self.what, job_id)


def _run_in_background(task: Any, job_id: int) -> None:
    try:
        task.apply(args=[job_id], throw=False)
    finally:
        connections.close_all()  # this thread's own connection
