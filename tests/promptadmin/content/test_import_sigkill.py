"""An import killed with SIGKILL halfway leaves nothing behind; a rerun gives the clean result.

The command runs as a real process on a large export. It reports each batch written
(inside its one transaction, before the commit) at ``-v 2``; the test kills it as soon as
half the rows are written, with as many still to come.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from promptadmin.content.models import Segment
from tests.conftest import database_url
from tests.legacy_exports import as_csv, generated

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

ROWS = 20_000
ROOT = Path(__file__).resolve().parents[3]


def command(*args: str) -> list[str]:
    return [sys.executable, "manage.py", "import_segments", *args]


def environment() -> dict[str, str]:
    return {**os.environ, "DATABASE_URL": database_url(), "PYTHONPATH": str(ROOT)}


def test_a_killed_import_leaves_no_row_and_a_rerun_gives_the_clean_result(
    tmp_path: Path,
) -> None:
    export = tmp_path / "big.csv"
    rows = generated(ROWS)
    export.write_bytes(as_csv(rows))
    env = environment()
    clean = tmp_path / "clean.json"
    subprocess.run(
        command(str(export), "--dry-run", "--report", str(clean)),
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
    )

    process = subprocess.Popen(
        command(str(export), "-v", "2"),
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    written = 0
    for line in process.stderr:
        progress = re.match(r"wrote (\d+) of (\d+) rows", line)
        if progress and int(progress[1]) >= ROWS // 2:
            written = int(progress[1])
            break
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL
    # Killed inside the transaction, half the rows written and as many still to come.
    assert written == ROWS // 2, written

    assert Segment.objects.count() == 0
    assert Segment.history.count() == 0  # type: ignore[attr-defined]

    rerun = tmp_path / "rerun.json"
    subprocess.run(
        command(str(export), "--report", str(rerun)),
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
    )
    expected = {**json.loads(clean.read_text()), "dry_run": False}
    assert json.loads(rerun.read_text()) == expected
    assert Segment.objects.count() == ROWS
    # Active in the export: allowed scopes stay active, deprecated ones are imported inactive.
    active = sum(1 for row in rows if row["active"] and row["scope"] == "core")
    assert Segment.objects.filter(active=True).count() == active
    assert Segment.history.count() == ROWS  # type: ignore[attr-defined]
