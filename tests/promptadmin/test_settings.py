"""Bad configuration fails at start with a message naming the variable."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def start(**env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG"}}
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        env={**environ, "DJANGO_SETTINGS_MODULE": "promptadmin.settings"},
        capture_output=True,
        text=True,
        check=False,
    )


def test_secret_key_is_required_when_debug_is_off() -> None:
    result = start(DEBUG="false")
    assert result.returncode != 0
    assert "SECRET_KEY is required when DEBUG is off" in result.stderr


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("DEBUG", "maybe"),
        ("DB_CONN_MAX_AGE", "ten"),
        ("DATABASE_URL", "mysql://x/y"),
        ("REDIS_URL", "http://x"),
    ],
)
def test_a_bad_value_names_the_variable(name: str, value: str) -> None:
    result = start(**{name: value})
    assert result.returncode != 0
    assert f"{name}=" in result.stderr


def test_production_settings_start_with_a_secret_key() -> None:
    assert start(DEBUG="false", SECRET_KEY="x" * 50, ALLOWED_HOSTS="example.com").returncode == 0


def test_the_wsgi_application_loads_the_encoding_and_freezes_start_up_objects() -> None:
    script = (
        "import gc\n"
        "from assembler import tokens\n"
        "from promptadmin import wsgi\n"
        "frozen = gc.get_freeze_count() > 10_000\n"
        "print(callable(wsgi.application), len(tokens._tokenizers), frozen)\n"
    )
    environ = {**os.environ, "DJANGO_SETTINGS_MODULE": "promptadmin.settings"}
    result = subprocess.run(
        [sys.executable, "-c", script], env=environ, capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == ["True", "1", "True"]
