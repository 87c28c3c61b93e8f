"""PostgreSQL, with health checks skipped for a connection that was alive moments ago, and
a lost connection noted so that a read-only request can be answered again.

Django's ``CONN_HEALTH_CHECKS`` sends ``SELECT 1`` before the first query of every request,
a round trip that cost the hot path as much as the API-key lookup itself. A connection
that served a request less than ``ALIVE_WINDOW`` seconds ago is taken to be alive, as
connection pools do (HikariCP's ``aliveBypassWindowMs`` is 500 ms): under load the check
is all but never needed, and a connection that sat idle, which is when servers restart and
proxies drop connections, is still checked before it is reused.

A connection that dies all the same (a backend terminated, a failover) fails the query
that finds out. The cursor notes it (``promptadmin.db.lost``), and
``promptadmin.core.middleware.RetryLostConnectionMiddleware`` answers a read-only request
again, once, on a fresh connection; a write is never run twice.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import InterfaceError, OperationalError
from django.db.backends import utils
from django.db.backends.postgresql import base

from promptadmin.db import lost

ALIVE_WINDOW = 0.5


class _NotesLostConnection:
    """A cursor wrapper that notes on its connection wrapper a query that failed because
    the connection is gone (not any error: a deadlock or a timeout leaves it usable)."""

    db: Any

    @contextmanager
    def _noting_lost(self) -> Iterator[None]:
        try:
            yield
        except (OperationalError, InterfaceError):
            self.db.note_if_lost()
            raise

    def _execute(self, *args: Any) -> Any:
        with self._noting_lost():
            return super()._execute(*args)  # type: ignore[misc]

    def _executemany(self, *args: Any) -> Any:
        with self._noting_lost():
            return super()._executemany(*args)  # type: ignore[misc]


class CursorWrapper(_NotesLostConnection, utils.CursorWrapper):
    pass


class CursorDebugWrapper(_NotesLostConnection, base.CursorDebugWrapper):
    pass


class DatabaseWrapper(base.DatabaseWrapper):
    # When a request that used this connection last ended (monotonic seconds).
    _alive_at = float("-inf")

    def close_if_unusable_or_obsolete(self) -> None:
        # Runs as each request ends and the next starts. health_check_done is set when the
        # request that is ending used the connection (checked it, or opened it afresh).
        if self.connection is not None and self.health_check_done and not self.errors_occurred:
            self._alive_at = time.monotonic()
        super().close_if_unusable_or_obsolete()

    def close_if_health_check_failed(self) -> None:
        if (
            self.connection is not None
            and not self.health_check_done
            and time.monotonic() - self._alive_at < ALIVE_WINDOW
        ):
            self.health_check_done = True
            return
        super().close_if_health_check_failed()

    def note_if_lost(self) -> None:
        raw = self.connection
        if raw is None or raw.closed or raw.broken:
            lost.note(self)

    def make_cursor(self, cursor: Any) -> CursorWrapper:
        return CursorWrapper(cursor, self)

    def make_debug_cursor(self, cursor: Any) -> CursorDebugWrapper:
        return CursorDebugWrapper(cursor, self)
