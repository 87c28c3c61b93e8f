"""Benchmark the legacy import: ``make bench-import``.

Recreates its own PostgreSQL database (``BENCH_IMPORT_DATABASE_URL``, default
``promptadmin_bench_import``), migrates it, creates ``TARGETS`` worlds and as many entries,
writes an export of ``--rows`` rows (default 1,000,000; every scope that needs no object,
and one row in six a world or entry segment naming one of those objects, so references
are looked up; a third of them active, short realistic text and metadata) as CSV and
JSON, and times ``manage.py import_segments`` on it as an admin runs it (a fresh process:
start-up included), then a second run of the same file (every row unchanged). Prints
seconds, rows/s, the command's CPU seconds and its peak memory (maximum resident set
size), the CPU seconds of the PostgreSQL backend serving it, and the rows per CPU second
of the busier of the two (the rate an idle machine reaches, when the wall clock is
stretched by other work), and the load average before (the machine is shared). Targets:
7,000 rows/s or better, peak memory under 500 MB.
"""

from __future__ import annotations

import argparse
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent

# Run in a process of its own: a million rows in this one would be counted in the peak
# memory of every command started after (a child's RSS includes its parent's pages until
# it execs).
WRITE_EXPORT = """
import sys
from pathlib import Path
from tests.legacy_exports import as_csv, as_json, generated
path, fmt, rows, targets = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
pairs = [(scope, f"bench-{scope}-{n}") for n in range(targets) for scope in ("world", "entry")]
data = generated(rows, targets=pairs)
Path(path).write_bytes(as_csv(data) if fmt == "csv" else as_json(data))
"""

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


def clock_ticks(pid: int) -> float | None:
    """CPU seconds (user + system) process ``pid`` has used so far, or None when gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class ServerCpu(threading.Thread):
    """Follows the CPU time of the PostgreSQL backends serving ``database`` while a command
    runs (read from /proc: PostgreSQL must run on this machine, else it reports none)."""

    def __init__(self, url: str, database: str) -> None:
        super().__init__(daemon=True)
        self.url, self.database = url, database
        self.seen: dict[int, float] = {}
        self.done = threading.Event()

    def run(self) -> None:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            own = conn.info.backend_pid
            while not self.done.wait(0.2):
                pids = conn.execute(
                    "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> %s",
                    [self.database, own],
                ).fetchall()
                for (pid,) in pids:
                    used = clock_ticks(pid)
                    if used is not None:
                        self.seen[pid] = max(used, self.seen.get(pid, 0.0))

    def seconds(self) -> float:
        self.done.set()
        self.join()
        return sum(self.seen.values())


def manage(env: dict[str, str], *args: str) -> tuple[float, float, float, float]:
    """Wall-clock seconds, the command's own CPU seconds (user + system), its peak
    resident memory in MB, and the CPU seconds of the PostgreSQL backends serving it.

    On a shared machine the CPU times say more than the wall clock: other work stretches
    the latter.
    """
    url = env["DATABASE_URL"]
    server = ServerCpu(url, urlsplit(url).path.lstrip("/"))
    server.start()
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, stdout=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        raise subprocess.CalledProcessError(process.returncode, process.args)
    cpu = usage.ru_utime + usage.ru_stime
    return wall, cpu, usage.ru_maxrss / 1024, server.seconds()  # ru_maxrss: kB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
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
    print(f"Legacy import of {options.rows:,} rows into {urlsplit(url).path.lstrip('/')}")
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(
        f"{'format':<7}{'run':<18}{'seconds':>9}{'rows/s':>10}{'CPU s':>8}{'peak MB':>9}"
        f"{'db CPU s':>10}{'rows/CPU s':>12}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in options.formats.split(","):
            recreate(url)
            manage(env, "migrate", "-v0")
            manage(env, "shell", "-c", CREATE_TARGETS)
            path = Path(tmp) / f"export.{fmt}"
            subprocess.run(
                [
                    sys.executable,
                    "-c",
                    WRITE_EXPORT,
                    str(path),
                    fmt,
                    str(options.rows),
                    str(TARGETS),
                ],
                cwd=ROOT,
                check=True,
            )
            for label in ("first (all new)", "again (unchanged)"):
                seconds, cpu, peak, db = manage(env, "import_segments", str(path))
                # The command and its backend work at once, on two cores: the busier of
                # the two bounds the rate an idle machine would reach.
                bound = options.rows / max(cpu, db)
                print(
                    f"{fmt:<7}{label:<18}{seconds:>9.2f}{options.rows / seconds:>10,.0f}"
                    f"{cpu:>8.2f}{peak:>9.0f}{db:>10.2f}{bound:>12,.0f}",
                    flush=True,
                )
    print("targets: 7,000 rows/s or better, peak memory under 500 MB")


if __name__ == "__main__":
    main()
