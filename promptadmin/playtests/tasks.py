"""The playtest task: takes a run's id; the service does the rest.

Acknowledged late and given back when its worker dies, so a killed run runs again and
resumes: every answer was stored as it came, and is taken from the cache.
"""

from __future__ import annotations

from celery import shared_task

from promptadmin.playtests import services


@shared_task(name=services.TASK, acks_late=True, reject_on_worker_lost=True)
def run_playtest(run_id: int) -> str:
    return services.playtest_run(run_id=run_id)
