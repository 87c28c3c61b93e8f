"""Logs as JSON lines, each with the id of the request (or task) it belongs to.

Every request has an id (``promptadmin.core.middleware.RequestIdMiddleware``): the one a
proxy sent in ``X-Request-ID`` when it is sane, else a new one; every answer carries it
back in ``X-Request-ID``, and every log record written while serving it names it, so an
operator finds everything one request did. A Celery task enqueued by a request carries
its id too.
"""

from __future__ import annotations

import itertools
import json
import logging
import re
import secrets
from contextvars import ContextVar
from datetime import UTC, datetime

HEADER = "X-Request-ID"
# What a proxy's id may look like: bounded, and nothing a log line or a header could be
# made to say more with (no spaces, quotes or control characters).
SANE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:=+/-]{0,127}\Z")

current_request_id: ContextVar[str | None] = ContextVar("request_id", default=None)

# A new id is this process's random prefix and a counter: unique across processes, and
# made without a system call (uuid4 reads the OS's random source, several microseconds).
_PREFIX = secrets.token_hex(8)
_next = itertools.count(1).__next__


def request_id_from(header: str | None) -> str:
    """The id a request goes by: a sane one it brought, else a new one.

    >>> request_id_from("lb-7f3a:12")
    'lb-7f3a:12'
    >>> len(request_id_from("a b\\nInjected: yes")), len(request_id_from("x" * 129))
    (32, 32)
    """
    if header and SANE_ID.match(header):
        return header
    return f"{_PREFIX}{_next():016x}"


def request_finished(**_signal: object) -> None:
    """The request is over: what is logged next on this thread belongs to no request."""
    current_request_id.set(None)


class RequestIdFilter(logging.Filter):
    """Adds ``request_id`` (None outside a request or task) to every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = current_request_id.get()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (UTC), level, logger, message, request_id, and the
    exception when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)
