"""PostgreSQL, with health checks skipped for a connection that was alive moments ago.

Django's ``CONN_HEALTH_CHECKS`` sends ``SELECT 1`` before the first query of every request,
a round trip that cost the hot path as much as the API-key lookup itself. A connection
that served a request less than ``ALIVE_WINDOW`` seconds ago is taken to be alive, as
connection pools do (HikariCP's ``aliveBypassWindowMs`` is 500 ms): under load the check
is all but never needed, and a connection that sat idle, which is when servers restart and
proxies drop connections, is still checked before it is reused.
"""

from __future__ import annotations

import time

from django.db.backends.postgresql import base

ALIVE_WINDOW = 0.5


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
