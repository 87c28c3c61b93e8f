"""Celery's signals, counted and carrying the request id (connected in ``CoreConfig.ready``,
so that the web processes and the workers count alike without touching the Celery app).

A task is counted ``queued`` where it is sent (or where it runs, when tasks run
in-process), then ``done``, ``failed`` or ``retried`` where it runs. A task sent while a
request is served carries that request's id, and logs written while it runs name it.
"""

from __future__ import annotations

from contextvars import Token
from typing import Any

from celery.signals import (
    before_task_publish,
    task_failure,
    task_postrun,
    task_prerun,
    task_retry,
    task_success,
)

from promptadmin.core.logs import current_request_id
from promptadmin.core.metrics import TASKS

HEADER = "request_id"
_tokens: dict[str, Token[str | None]] = {}


def _name(task: Any) -> str:
    return str(getattr(task, "name", None) or task or "unknown")


def published(sender: Any = None, headers: dict[str, Any] | None = None, **_: Any) -> None:
    TASKS.labels(_name(sender), "queued").inc()
    request_id = current_request_id.get()
    if request_id and headers is not None:
        headers.setdefault(HEADER, request_id)


def started(task_id: str | None = None, task: Any = None, **_: Any) -> None:
    request = getattr(task, "request", None)
    if request is None:
        return
    if request.is_eager:  # run in-process: never published, counted here
        TASKS.labels(_name(task), "queued").inc()
        return  # and within the request that ran it, whose id it keeps
    request_id = getattr(request, HEADER, None)
    if task_id and isinstance(request_id, str):
        _tokens[task_id] = current_request_id.set(request_id)


def finished(task_id: str | None = None, **_: Any) -> None:
    token = _tokens.pop(task_id, None) if task_id else None
    if token is not None:
        current_request_id.reset(token)


def done(sender: Any = None, **_: Any) -> None:
    TASKS.labels(_name(sender), "done").inc()


def failed(sender: Any = None, **_: Any) -> None:
    TASKS.labels(_name(sender), "failed").inc()


def retried(sender: Any = None, **_: Any) -> None:
    TASKS.labels(_name(sender), "retried").inc()


def connect() -> None:
    before_task_publish.connect(published, weak=False, dispatch_uid="promptadmin-published")
    task_prerun.connect(started, weak=False, dispatch_uid="promptadmin-started")
    task_postrun.connect(finished, weak=False, dispatch_uid="promptadmin-finished")
    task_success.connect(done, weak=False, dispatch_uid="promptadmin-done")
    task_failure.connect(failed, weak=False, dispatch_uid="promptadmin-failed")
    task_retry.connect(retried, weak=False, dispatch_uid="promptadmin-retried")
