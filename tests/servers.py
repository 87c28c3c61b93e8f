"""Real servers for tests: gunicorn and Celery worker processes on the test database."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import database_url

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def environment(**extra: str) -> dict[str, str]:
    """The environment of a production-like process on the test database."""
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DATABASE_URL": database_url(),
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1",
        **extra,
    }


@contextmanager
def running(command: list[str], env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    """A process group that is stopped (and its output shown) when the block ends."""
    log = tempfile.TemporaryFile()  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        log.seek(0)
        sys.stdout.write(log.read().decode(errors="replace")[-3000:])
        log.close()


@contextmanager
def gunicorn(workers: int = 2, **extra: str) -> Iterator[str]:
    """gunicorn (sync workers, persistent connections) serving the app; its base URL."""
    port = free_port()
    command = [
        str(Path(sys.executable).with_name("gunicorn")),
        *("--workers", str(workers), "--bind", f"127.0.0.1:{port}", "promptadmin.wsgi"),
    ]
    url = f"http://127.0.0.1:{port}"
    with running(command, environment(**extra)) as process:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{url}/healthz", timeout=10)
                break
            except OSError:  # refused while starting, or slow to answer the first time
                if time.monotonic() > deadline or process.poll() is not None:
                    raise
                time.sleep(0.2)
        yield url


@contextmanager
def celery_worker(**extra: str) -> Iterator[subprocess.Popen[bytes]]:
    """A Celery worker (one prefork process) taking tasks from the test Redis."""
    command = [
        sys.executable,
        *("-m", "celery", "-A", "promptadmin", "worker", "--loglevel", "INFO"),
        *("--concurrency", "1", "--pool", "prefork", "-n", f"test-{secrets.token_hex(3)}@%h"),
        *("--without-gossip", "--without-mingle", "--without-heartbeat"),
    ]
    env = environment(**{"CELERY_TASK_ALWAYS_EAGER": "false", **extra})
    with running(command, env) as process:
        yield process
