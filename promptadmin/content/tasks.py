"""The legacy import task: takes an import job's id; the service does the rest.

Acknowledged late and given back when its worker dies, so a killed import runs again
(its one transaction rolled back, nothing half written); the service claims a job once,
so a repeated delivery of a job that is running or done does nothing. The service sends
it (``import_jobs``, by name), once the upload is committed.
"""

from __future__ import annotations

from celery import shared_task

from promptadmin.content.services import import_jobs


@shared_task(name=import_jobs.TASK, acks_late=True, reject_on_worker_lost=True)
def run_import(job_id: int) -> str:
    return import_jobs.import_job_run(job_id=job_id)
