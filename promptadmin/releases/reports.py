"""Impact reports, kept by the pair of content hashes, and worked out in the background
when many scenarios must be assembled again.

A report follows from the two versions' content (named for good by their content
hashes), the scenarios judged and the tokenizer, so it is kept in the shared cache under
a key made of those: the publish page, the compare page and the API asking for it again
get it at once. Each scenario's run on each side, and its row, are kept there too, by the
bundles they follow from (see ``impact``): a report whose key is new (the working copy
changed again) assembles only what no report did. When more than INLINE_SCENARIOS
scenarios must be assembled again (a change to the core touches every entry), the page
does not wait: it shows what changed, and a task (Celery's, or a thread of this process
without a broker, as imports do) assembles the scenarios and notes its progress, which
the page polls.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from celery import current_app
from django.conf import settings
from django.core.cache import cache
from django.db import connections

from promptadmin.releases.bundles import Version, canonical, sha256
from promptadmin.releases.impact import (
    compare,
    content_changes,
    to_assemble,
)
from promptadmin.releases.scenarios import Judged

logger = logging.getLogger(__name__)

# Change it when what a report holds changes: a report cached by older code is not read.
REPORT_FORMAT = 4
REPORT_TTL_SECONDS = 24 * 3600
# More scenarios to assemble again than this, and the publish page hands them to a task.
INLINE_SCENARIOS = 60
# A task's progress outlives its last note by this long: a task lost with its worker is
# started again by the next poll after that.
PROGRESS_TTL_SECONDS = 120
PROGRESS_EVERY_SECONDS = 0.5

# The report task, found by name in Celery's registry (the task module imports this one).
TASK = "promptadmin.releases.tasks.impact_report"
# Reports made in this process when there is no broker, on a thread started on first use.
_background = ThreadPoolExecutor(1, thread_name_prefix="impact")


KEY_PATTERN = re.compile(r"impact:report:[0-9a-f]{64}")


def report_key(before: Version, after: Version, scenarios: Judged) -> str:
    """Where the report of going from ``before`` to ``after`` judged by ``scenarios`` is
    kept: a hash of everything it follows from."""
    body = [
        REPORT_FORMAT,
        settings.TIKTOKEN_ENCODING,
        before.content_hash,
        after.content_hash,
        scenarios.identity(),
    ]
    return f"impact:report:{sha256(canonical(body))}"


def progress_key(key: str) -> str:
    return f"{key}:progress"


def summary_key(key: str) -> str:
    return f"{key}:summary"


def summary(report: Mapping[str, Any]) -> dict[str, Any]:
    """What a page shows of ``report``: all of it but the rows of the scenarios that did
    not change, which are counted (at 1,000 entries, 2,000 rows nobody reads): how many
    scenarios were judged and assembled, and how many of their expectations start failing
    and still fail (``*_count``)."""
    scenarios = report["scenarios"]
    return {
        **report,
        "scenarios": [row for row in scenarios if row["changed"]],
        "judged_count": len(scenarios),
        "assembled_count": sum(1 for row in scenarios if row["assembled"]),
        "failing_count": sum(len(row["expectations_failing"]) for row in scenarios),
        "still_failing_count": sum(len(row["expectations_still_failing"]) for row in scenarios),
    }


def _keep(key: str, report: dict[str, Any]) -> None:
    cache.set_many({key: report, summary_key(key): summary(report)}, REPORT_TTL_SECONDS)


def kept(key: str) -> dict[str, Any] | None:
    """The :func:`summary` of the report kept under ``key``, if it is made."""
    found: dict[str, Any] | None = cache.get(summary_key(key))
    if found is None:
        report = cache.get(key)
        if report is not None:
            found = summary(report)
            cache.set(summary_key(key), found, REPORT_TTL_SECONDS)
    return found


def report(before: Version, after: Version, scenarios: Judged) -> dict[str, Any]:
    """The impact report, from the cache or worked out now (and kept)."""
    key = report_key(before, after, scenarios)
    found: dict[str, Any] | None = cache.get(key)
    if found is None:
        found = compare(before, after, scenarios.specs(), memo=cache)
        _keep(key, found)
    return found


def started(
    before: Version,
    after: Version,
    scenarios: Judged,
    *,
    before_name: str | None,
    after_name: str,
) -> dict[str, Any]:
    """The :func:`summary` of the impact report if it is kept or quick to make; else
    what changed, with ``scenarios`` empty and ``pending`` (``key``, and
    :func:`progress`), while a task assembles the scenarios (``before_name``/
    ``after_name``: the sides, as the task reads them again)."""
    key = report_key(before, after, scenarios)
    found = kept(key)
    if found is not None:
        return found
    total = len(to_assemble(before, after, scenarios.specs()))
    if total <= INLINE_SCENARIOS:
        return summary(report(before, after, scenarios))
    start(key, before_name, after_name, total)
    found = kept(key)  # made already: tasks run here and now (tests)
    if found is not None:
        return found
    pending = {**content_changes(before, after), "scenarios": []}
    return {**summary(pending), "pending": {"key": key, **progress(key)}}


def progress(key: str) -> dict[str, Any]:
    """How far the report kept under ``key`` is: ``state`` (``done``; ``waiting`` for a
    worker; ``running``; ``stale``: the content or the scenarios changed since it was
    asked for; ``lost``: no task is making it), scenarios ``done`` of ``total``, and a
    ``percent``."""
    if cache.has_key(key):
        return {"state": "done", "done": 0, "total": 0, "percent": 100.0}
    noted: dict[str, Any] | None = cache.get(progress_key(key))
    if noted is None:
        return {"state": "lost", "done": 0, "total": 0, "percent": 0.0}
    done, total = int(noted["done"]), int(noted["total"])
    percent = round(100 * done / total, 1) if total else 0.0
    return {**noted, "done": done, "total": total, "percent": min(percent, 99.9)}


def start(key: str, before_name: str | None, after_name: str, total: int) -> bool:
    """Send the task making the report under ``key``, unless one is on it already;
    whether one was sent."""
    waiting = {"state": "waiting", "done": 0, "total": total}
    if not cache.add(progress_key(key), waiting, PROGRESS_TTL_SECONDS):
        return False
    task = current_app.tasks[TASK]
    args = [before_name, after_name, key]
    if current_app.conf.task_always_eager:
        # No broker: on this process's own thread, as imports (and summaries) do; or here
        # and now under the test suite.
        if settings.SUMMARIZER_IN_BACKGROUND:
            _background.submit(_run_in_background, task, args)
        else:
            task.apply(args=args, throw=False)
        return True
    try:
        task.delay(*args)
    except Exception:  # the broker is down: the next poll, seeing nothing, tries again
        logger.exception("impact report %s could not be enqueued", key)
        cache.delete(progress_key(key))
        return False
    return True


def _run_in_background(task: Any, args: list[Any]) -> None:
    try:
        task.apply(args=args, throw=False)
    finally:
        connections.close_all()  # this thread's own connection


def stale(key: str) -> str:
    """Note that the report under ``key`` will not be made: what it was asked of changed."""
    cache.set(progress_key(key), {"state": "stale", "done": 0, "total": 0}, PROGRESS_TTL_SECONDS)
    return "stale"


def fill(before: Version, after: Version, scenarios: Judged, key: str) -> str:
    """Make the report kept under ``key`` (the task's work), noting progress as it goes;
    ``stale`` when the sides or the scenarios are no longer what ``key`` was made of."""
    if cache.has_key(key):
        return "done"
    if report_key(before, after, scenarios) != key:
        return stale(key)
    last = [0.0]

    def note(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= PROGRESS_EVERY_SECONDS or done == total:
            last[0] = now
            value = {"state": "running", "done": done, "total": total}
            cache.set(progress_key(key), value, PROGRESS_TTL_SECONDS)

    _keep(key, compare(before, after, scenarios.specs(), progress=note, memo=cache))
    cache.delete(progress_key(key))
    return "done"
