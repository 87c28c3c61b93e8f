"""Shared test setup: tests marked as needing a service run only where it is reachable, and
child processes reach the test database."""

from __future__ import annotations

import os
import shutil

import pytest
from django.conf import settings

# The conversation fixtures serve the conversation tests and the conversation endpoints'.
pytest_plugins = ["tests.promptadmin.conversations.fixtures"]

REQUIRE_SERVICES = os.environ.get("PROMPTADMIN_REQUIRE_SERVICES", "").lower() in {
    "1",
    "true",
    "yes",
}


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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    missing: dict[str, int] = {}
    for item in items:
        for marker in ("postgres", "redis", "browser"):
            reason = missing_service(marker) if item.get_closest_marker(marker) else None
            if reason is not None:
                missing[reason] = missing.get(reason, 0) + 1
                item.add_marker(pytest.mark.skip(reason=f"[service] {reason}"))
    if missing and REQUIRE_SERVICES:
        # CI must never pass by skipping what it is there to prove.
        listed = "; ".join(f"{count} tests {reason}" for reason, count in missing.items())
        raise pytest.UsageError(f"PROMPTADMIN_REQUIRE_SERVICES is set but {listed}.")
