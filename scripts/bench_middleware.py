"""What the request middleware costs on the hot path: ``/api/v1/assemble`` in process.

Recreates its own PostgreSQL database (``BENCH_MIDDLEWARE_DATABASE_URL``, default
``promptadmin_bench_middleware``) with the demo game and times warm ``POST
/api/v1/assemble`` calls through Django's request handler (no network, no server), with
the full middleware and with the request id, metrics, character check and retry
middleware left out, in pairs of back-to-back requests so that the machine's other load
falls on both alike. Prints, per round, the median microseconds per request of each and
the median paired difference; then the medians over rounds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/promptadmin_bench_middleware"
ADDED = (
    "promptadmin.core.middleware.RequestIdMiddleware",
    "promptadmin.core.middleware.UnstorableCharactersMiddleware",
    "promptadmin.core.middleware.RetryLostConnectionMiddleware",
)


def recreate(url: str) -> None:
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000, help="per round")
    parser.add_argument("--rounds", type=int, default=6, help="per configuration")
    options = parser.parse_args()
    url = os.environ.get("BENCH_MIDDLEWARE_DATABASE_URL", DEFAULT_DATABASE_URL)
    recreate(url)
    os.environ.update(
        {
            "DATABASE_URL": url,
            "DEBUG": "false",
            "LOG_LEVEL": "WARNING",
            "ALLOWED_HOSTS": "testserver",
        }
    )
    os.environ.setdefault("SECRET_KEY", "bench-" + "k" * 60)
    os.environ.pop("REDIS_URL", None)  # local memory: what is timed is this process alone
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "promptadmin.settings")

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.test import Client, override_settings

    from promptadmin.content.services.api_keys import api_key_create

    call_command("migrate", verbosity=0)
    call_command("seed_demo", verbosity=0)
    _, key = api_key_create(actor=None, name="bench", scope="read")
    full = list(settings.MIDDLEWARE)
    without = [name for name in full if name not in ADDED]
    body = '{"entry": "drowned-bell", "npcs": [{"npc": "marta-vell", "tier": 1}]}'

    def primed(middleware: list[str]) -> Client:
        """A client whose handler loaded ``middleware`` (it keeps it once loaded)."""
        with override_settings(MIDDLEWARE=middleware):
            client = Client(HTTP_AUTHORIZATION=f"Api-Key {key}")
            for _ in range(50):  # warm: caches, the handler's middleware chain
                assert client.post("/api/v1/assemble", body, "application/json").status_code == 200
        return client

    clients = {"without": primed(without), "with": primed(full)}
    print(f"POST /api/v1/assemble in process, {options.requests} request pairs per round")
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    medians: dict[str, list[float]] = {"without": [], "with": []}
    differences: list[float] = []
    for number in range(options.rounds):
        samples: dict[str, list[float]] = {"without": [], "with": []}
        # Each pair runs back to back, in alternating order: a change of the machine's
        # load falls on both alike, and the paired difference cancels it.
        for index in range(options.requests):
            order = ("without", "with") if index % 2 else ("with", "without")
            for label in order:
                start = time.perf_counter()
                clients[label].post("/api/v1/assemble", body, "application/json")
                samples[label].append((time.perf_counter() - start) * 1e6)
        pairs = [w - o for w, o in zip(samples["with"], samples["without"], strict=True)]
        differences.append(statistics.median(pairs))
        for label in samples:
            medians[label].append(statistics.median(samples[label]))
        print(
            f"round {number + 1}: without {medians['without'][-1]:7.1f} us, with "
            f"{medians['with'][-1]:7.1f} us, paired difference {differences[-1]:+6.1f} us"
        )
    before = statistics.median(medians["without"])
    difference = statistics.median(differences)
    print(
        f"median over rounds: {before:.1f} us per request without; the middleware adds "
        f"{difference:+.1f} us ({difference / before * 100:+.1f}%)"
    )


if __name__ == "__main__":
    main()
