"""Health checks: skipped for a connection alive moments ago, done after it sat idle."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connections

from promptadmin.db.postgresql import base

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def db() -> Any:
    return connections["default"]


def request_boundary() -> None:
    """What Django does as one request ends and the next begins."""
    db().close_if_unusable_or_obsolete()
    db().close_if_unusable_or_obsolete()


def query() -> int:
    with db().cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    # A connection of its own: one an earlier test opened may be older than CONN_MAX_AGE,
    # and closed at the first request boundary (whatever the health checks).
    db().close()
    assert isinstance(db(), base.DatabaseWrapper)
    assert db().settings_dict["CONN_HEALTH_CHECKS"]
    made: list[int] = []
    real = base.DatabaseWrapper.is_usable

    def counted(self: Any) -> bool:
        made.append(1)
        return bool(real(self))

    monkeypatch.setattr(base.DatabaseWrapper, "is_usable", counted)
    return made


def test_back_to_back_requests_skip_the_check(checks: list[int]) -> None:
    pid = query()
    for _ in range(3):
        request_boundary()
        assert query() == pid
    assert checks == []


def test_a_connection_that_sat_idle_is_checked(checks: list[int]) -> None:
    query()
    request_boundary()
    db()._alive_at -= base.ALIVE_WINDOW  # as if it sat idle
    query()
    assert checks == [1]


def test_a_connection_dropped_while_idle_is_replaced_before_use(checks: list[int]) -> None:
    pid = query()
    request_boundary()
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    finally:
        other.close()
    db()._alive_at -= base.ALIVE_WINDOW
    assert query() != pid  # the check found it dead; the request got a new connection
    assert checks == [1]
