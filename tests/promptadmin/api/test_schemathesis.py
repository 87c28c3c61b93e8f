"""Schemathesis against the running app: every operation, three fixed seeds.

No server error, and every response conforms to the schema: status code, content type,
headers and body. Writes are included: the run uses an admin key (it writes, and moves
release labels) on the demo content.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from promptadmin.content.services.api_keys import api_key_create
from promptadmin.releases import serving

CONFIG = Path(__file__).with_name("schemathesis.toml")
# Each seed is a different, reproducible run (about four minutes each on the dev VM); the
# first is the one schemathesis.toml names.
SEEDS = (20261121, 7, 90210)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("seed", SEEDS)
def test_schemathesis_finds_no_server_error_and_no_schema_violation(
    live_server: Any, seed: int, tmp_path: Path
) -> None:
    # The live server runs in this process, and each seed starts on emptied tables: a
    # release the last seed's run loaded (kept in process memory by name) is gone, and a
    # release of the same name made by this run has another id (seed 1126 after 90210
    # was a 500 in /assemble reading the old id's manifest). Start as a fresh process.
    serving.forget()
    call_command("seed_demo")
    _, key = api_key_create(actor=None, name="schemathesis", scope="admin")
    # The schema /api/v1/schema/ serves, written here: on a busy machine, making it took
    # the live server longer than the run's request timeout.
    schema = tmp_path / "schema.json"
    call_command("spectacular", "--format", "openapi-json", "--file", str(schema))
    command = [
        str(Path(sys.executable).with_name("st")),
        "--config-file", str(CONFIG),
        "--no-color",
        "run", str(schema), "--url", live_server.url,
        "--seed", str(seed),
        "--header", f"Authorization: Api-Key {key}",
        # Every check runs by default; naming them here ("--checks all") would override
        # the per-operation settings in schemathesis.toml.
        "--exclude-checks", "positive_data_acceptance",  # why: see schemathesis.toml
        "--workers", "1",  # one at a time: the same seed gives the same run
        "--request-timeout", "10",  # a request that hangs fails the run, naming it
    ]  # fmt: skip
    run = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    assert run.returncode == 0, run.stdout[-20000:] + run.stderr[-5000:]
