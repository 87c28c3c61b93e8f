"""Database connections found gone while serving the current request, kept per thread.

The backend (``promptadmin.db.postgresql``) notes a connection here when a query fails
because the connection is gone; ``promptadmin.core.middleware.RetryLostConnectionMiddleware``
takes the list once the request is answered. A list per thread costs the common case (no
connection lost) one attribute read.
"""

from __future__ import annotations

import threading
from typing import Any

_state = threading.local()


def note(connection: Any) -> None:
    lost: list[Any] | None = getattr(_state, "lost", None)
    if lost is None:
        _state.lost = lost = []
    if connection not in lost:
        lost.append(connection)


def take() -> list[Any]:
    """The connections noted since the last call on this thread (and forget them)."""
    lost: list[Any] | None = getattr(_state, "lost", None)
    if not lost:
        return []
    _state.lost = None
    return lost
