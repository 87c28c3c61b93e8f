"""Run the test suite against the services this machine has.

PostgreSQL and Redis are used when reachable (DATABASE_URL / REDIS_URL, or the local
defaults 127.0.0.1:5432 and :6379). Without them the suite runs on SQLite and the tests
that need a service are skipped, with a notice. CI sets PROMPTADMIN_REQUIRE_SERVICES=1,
which turns a missing service into a failure instead.

The suite runs on pytest-xdist workers, one per core (at most MAX_WORKERS), each on a test
database and a Redis database of its own (tests/conftest.py). Arguments that choose the
workers themselves are left alone: ``make test ARGS="-n 0"`` runs in one process,
``ARGS="-n 6"`` on six workers (PYTEST_XDIST_AUTO_NUM_WORKERS=3 picks three of at most
MAX_WORKERS).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/promptadmin"
# A database number of its own, so tests never touch a development cache.
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/15"
# Each worker makes its own test database (migrations included) and takes the Redis
# database below the previous one's: more workers than this cost more than they save.
MAX_WORKERS = 4


def postgres_reachable(url: str) -> bool:
    import psycopg

    parts = urlsplit(url)
    try:
        with psycopg.connect(
            host=parts.hostname or "127.0.0.1",
            port=parts.port or 5432,
            user=parts.username or "postgres",
            password=parts.password or None,
            dbname="postgres",
            connect_timeout=3,
        ):
            return True
    except psycopg.Error:
        return False


def redis_reachable(url: str) -> bool:
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 6379), 2) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def parallel(argv: list[str]) -> list[str]:
    """The pytest-xdist options to put before ``argv``, which may override any of them.

    >>> parallel(["-rs"])
    ['-n', 'auto', '--maxprocesses', '4']
    >>> parallel(["-n", "0", "tests/assembler"]), parallel(["-p", "no:xdist"])
    ([], [])
    """
    if any(arg.startswith(("-n", "--numprocesses", "--tx")) or "no:xdist" in arg for arg in argv):
        return []  # the arguments choose the workers
    # xdist's default distribution (load) hands out tests in collection order, so each
    # worker runs its share in the order pytest-django sorts them, as one process does:
    # transactional tests, which empty every table, after the tests that expect the rows
    # the migrations made. (worksteal moves tests between workers and broke that order.)
    return ["-n", "auto", "--maxprocesses", str(MAX_WORKERS)]


def main(argv: list[str]) -> int:
    env = dict(os.environ)
    notices = []
    database_url = env.get("DATABASE_URL") or DEFAULT_DATABASE_URL
    if database_url.startswith(("postgres", "pgsql")) and postgres_reachable(database_url):
        env["DATABASE_URL"] = database_url
    else:
        env["DATABASE_URL"] = f"sqlite:///{ROOT / 'test-db.sqlite3'}"
        notices.append(f"PostgreSQL not reachable at {database_url}: running on SQLite")
    redis_url = env.get("REDIS_URL") or DEFAULT_REDIS_URL
    if redis_reachable(redis_url):
        env["REDIS_URL"] = redis_url
    else:
        env.pop("REDIS_URL", None)
        notices.append(f"Redis not reachable at {redis_url}: local-memory cache, in-process tasks")
    # Code under test enqueues in-process unless a test starts a real worker.
    env.setdefault("CELERY_TASK_ALWAYS_EAGER", "true")
    for notice in notices:
        print(f"NOTICE: {notice}; tests that need it are skipped.", flush=True)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", *parallel(argv), *argv], cwd=ROOT, env=env, check=False
    )
    return result.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
