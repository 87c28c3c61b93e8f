"""Shared test setup: tests marked as needing a service run only where it is reachable,
child processes reach the test database, and each pytest-xdist worker has its own Redis
database (pytest-django gives each its own PostgreSQL test database)."""

from __future__ import annotations

import os
import shutil
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest
from django.conf import settings
from django.test import override_settings

# The conversation fixtures serve the conversation tests and the conversation endpoints'.
pytest_plugins = ["tests.promptadmin.conversations.fixtures"]

REQUIRE_SERVICES = os.environ.get("PROMPTADMIN_REQUIRE_SERVICES", "").lower() in {
    "1",
    "true",
    "yes",
}
SERVICES = ("postgres", "redis", "browser")  # the markers of tests that need one


def missing_service(marker: str) -> str | None:
    """Why a test marked ``marker`` cannot run here, or None when it can."""
    if marker == "postgres" and not settings.DATABASES["default"]["ENGINE"].endswith(".postgresql"):
        return "needs PostgreSQL (DATABASE_URL)"
    if marker == "redis" and not settings.REDIS_URL:
        return "needs Redis (REDIS_URL)"
    if marker == "browser" and not shutil.which("chromium"):
        return "needs Debian's chromium (apt-get install chromium)"
    return None


def database_url() -> str:
    """The URL of the test database (once pytest-django made it), for a child process."""
    db = settings.DATABASES["default"]
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return (
        f"postgres://{db['USER']}{password}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
        f"/{db['NAME']}"
    )


def worker_redis_url(url: str, worker: str) -> str:
    """The Redis URL of pytest-xdist worker ``worker``: the database ``url`` names for
    ``gw0``, one lower for each next worker (the default, 15, stays far from a development
    cache's 0). Tests empty their database; workers never see each other's keys or tasks.

    >>> worker_redis_url("redis://127.0.0.1:6379/15", "gw1")
    'redis://127.0.0.1:6379/14'
    >>> worker_redis_url("unix:///run/redis.sock?db=3", "gw2")
    'unix:///run/redis.sock?db=1'
    """
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    # redis-py reads the number from the query first, then from the path (never a socket's).
    in_query = "db" in query or parts.scheme == "unix"
    first = int(query.get("db", "0") if in_query else parts.path.strip("/") or "0")
    number = first - int(worker.removeprefix("gw"))
    if number < 0:
        raise pytest.UsageError(
            f"pytest-xdist worker {worker} would need Redis database {number}: name a "
            f"higher database in REDIS_URL ({url}) or run fewer workers."
        )
    if in_query:
        return f"{url.partition('?')[0]}?{urlencode({**query, 'db': number})}"
    return f"{parts.scheme}://{parts.netloc}/{number}" + (f"?{parts.query}" if parts.query else "")


def use_redis(url: str) -> override_settings:
    """Point the cache, Celery and the processes tests start at Redis ``url``; what is
    returned puts the settings back when disabled.

    Settings read REDIS_URL once, before any conftest runs, so the settings made from it
    are overridden here; tests/test_parallel_workers.py checks that none is left behind.
    """
    os.environ["REDIS_URL"] = url  # gunicorn and Celery workers started by tests
    caches = {**settings.CACHES, "default": {**settings.CACHES["default"], "LOCATION": url}}
    # It also drops the cache connections made so far; Celery reads its settings from
    # Django's each time it connects.
    override = override_settings(REDIS_URL=url, CACHES=caches, CELERY_BROKER_URL=url)
    override.enable()
    return override


def pytest_configure(config: pytest.Config) -> None:
    # CI must never pass by skipping what it is there to prove. Checked before any test is
    # collected: pytest-xdist workers collect, and an error raised there is lost.
    missing = [reason for marker in SERVICES if (reason := missing_service(marker))]
    if missing and REQUIRE_SERVICES:
        raise pytest.UsageError(f"PROMPTADMIN_REQUIRE_SERVICES is set but {'; '.join(missing)}.")
    if not settings.REDIS_URL:
        return
    if worker := os.environ.get("PYTEST_XDIST_WORKER"):
        use_redis(worker_redis_url(settings.REDIS_URL, worker))  # for the worker's life
    elif workers := getattr(config.option, "numprocesses", None):
        worker_redis_url(settings.REDIS_URL, f"gw{workers - 1}")  # refused before starting


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for marker in SERVICES:
            reason = missing_service(marker) if item.get_closest_marker(marker) else None
            if reason is not None:
                item.add_marker(pytest.mark.skip(reason=f"[service] {reason}"))
