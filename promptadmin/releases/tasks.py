"""The impact report task: makes a report the publish page left pending (``reports``).

It takes the two sides by name and the report's key, reads them again and does nothing
when they are no longer what the key was made of (the page then says so).
"""

from __future__ import annotations

from celery import shared_task

from promptadmin.releases import reports, selectors


@shared_task(name=reports.TASK)
def impact_report(before: str | None, after: str, key: str) -> str:
    return selectors.compare_fill(before, after, key)
