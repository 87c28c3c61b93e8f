"""Benchmark the legacy import: ``make bench-import``.

Recreates its own PostgreSQL database (``BENCH_IMPORT_DATABASE_URL``, default
``promptadmin_bench_import``), migrates it, creates ``TARGETS`` worlds and as many entries,
writes an export of ``--rows`` rows (default 50,000; every scope that needs no object,
and one row in six a world or entry segment naming one of those objects, so references
are looked up; a third of them active, short realistic text and metadata) as CSV and
JSON, and times ``manage.py import_segments`` on it as an admin runs it (a fresh process:
start-up included), then a second run of the same file (every row unchanged). Prints
seconds, rows/s and the command's CPU seconds per run, and the load average before (the
machine is shared); the target is 50,000 rows in under 20 s.
"""

from __future__ import annotations

import argparse
import os
import resource
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.legacy_exports import as_csv, as_json, generated  # noqa: E402

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/promptadmin_bench_import"
TARGETS = 50
# Run by ``manage.py shell``: the worlds and entries the allowed-scope rows name.
CREATE_TARGETS = f"""
from promptadmin.content.models import World
from promptadmin.content.services import catalog
for n in range({TARGETS}):
    world = catalog.catalog_create(
        actor=None, model=World, slug=f"bench-world-{{n}}", name=f"Bench world {{n}}"
    )
    catalog.entry_create(
        actor=None, slug=f"bench-entry-{{n}}", name=f"Bench entry {{n}}", world=world
    )
"""


def recreate(url: str) -> None:
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def manage(env: dict[str, str], *args: str) -> tuple[float, float]:
    """Wall-clock seconds and the command's own CPU seconds (user + system).

    On a shared machine the CPU time says more than the wall clock: other work stretches
    the latter. PostgreSQL's own work is in the wall clock only.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--formats", default="csv,json")
    options = parser.parse_args()
    url = os.environ.get("BENCH_IMPORT_DATABASE_URL", DEFAULT_DATABASE_URL)
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
    }
    env.pop("REDIS_URL", None)  # the import needs no cache
    targets = [
        (scope, f"bench-{scope}-{n}") for n in range(TARGETS) for scope in ("world", "entry")
    ]
    rows = generated(options.rows, targets=targets)
    print(f"Legacy import of {options.rows:,} rows into {urlsplit(url).path.lstrip('/')}")
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'format':<7}{'run':<18}{'seconds':>9}{'rows/s':>10}{'CPU s':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in options.formats.split(","):
            recreate(url)
            manage(env, "migrate", "-v0")
            manage(env, "shell", "-c", CREATE_TARGETS)
            path = Path(tmp) / f"export.{fmt}"
            path.write_bytes(as_csv(rows) if fmt == "csv" else as_json(rows))
            for label in ("first (all new)", "again (unchanged)"):
                seconds, cpu = manage(env, "import_segments", str(path))
                print(
                    f"{fmt:<7}{label:<18}{seconds:>9.2f}{options.rows / seconds:>10,.0f}{cpu:>8.2f}"
                )


if __name__ == "__main__":
    main()
