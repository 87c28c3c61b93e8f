"""Bad configuration fails at start with a message naming the variable."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml


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
        ("REDIS_TIMEOUT", "nan"),
        ("REDIS_TIMEOUT", "0"),
        ("CACHE_BREAKER_SECONDS", "-1"),
        ("CACHE_BREAKER_SECONDS", "soon"),
        ("API_RATE_LIMIT", "600"),
        ("API_RATE_LIMIT", "0/min"),
        ("API_RATE_LIMIT", "10/fortnight"),
        ("LOGIN_FAILURE_LIMIT", "0"),
        ("LOGIN_ADDRESS_FAILURE_LIMIT", "4"),  # below the pair's limit (5)
        ("LOG_FORMAT", "xml"),
        ("METRICS_ALLOWED_ADDRESSES", "10.0.0.0/8,intranet"),
        ("METRICS_TOKEN", "short"),
        ("CELERY_TASK_TIME_LIMIT", "0"),
        ("SUMMARIZER_BASE_URL", "ftp://x"),
        ("SUMMARIZER_TIMEOUT", "nan"),
        ("SUMMARIZER_TIMEOUT", "soon"),
        ("SUMMARIZER_THRESHOLD", "1.5"),
        ("SUMMARIZER_MAX_INPUT_TOKENS", "10"),
        ("PROTECTED_PROMPT_LABELS", "production,Prod"),
        ("PROTECTED_PROMPT_LABELS", "latest"),
    ],
)
def test_a_bad_value_names_the_variable(name: str, value: str) -> None:
    result = start(**{name: value})
    assert result.returncode != 0
    assert f"{name}=" in result.stderr


STRONG_KEY = "q7Zp0-w8sVb1_kR2mX9tLc4yHn6jDf3aEg5uJi0oPz7xW2vB8nM1"


def test_production_settings_start_with_a_strong_secret_key() -> None:
    assert start(DEBUG="false", SECRET_KEY=STRONG_KEY, ALLOWED_HOSTS="example.com").returncode == 0


@pytest.mark.parametrize(
    "key", ["x" * 50, "short-but-random-7fQ2", "django-insecure-" + STRONG_KEY, "abcd" * 20]
)
def test_a_weak_secret_key_is_refused_when_debug_is_off(key: str) -> None:
    result = start(DEBUG="false", SECRET_KEY=key, ALLOWED_HOSTS="example.com")
    assert result.returncode != 0
    assert "SECRET_KEY is too weak" in result.stderr


def show(*names: str, unset: frozenset[str] = frozenset(), **env: str) -> str:
    """The settings ``names`` as a fresh process prints them, one a line, with ``unset``
    variables removed from this environment and ``env`` added."""
    script = "import django; django.setup(); from django.conf import settings; "
    script += "".join(f"print(settings.{name}); " for name in names)
    environ = {k: v for k, v in os.environ.items() if k not in unset | {"SECRET_KEY", "DEBUG"}}
    result = subprocess.run(
        [sys.executable, "-c", script],
        env={**environ, **env, "DJANGO_SETTINGS_MODULE": "promptadmin.settings"},
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip()


def test_x_forwarded_proto_is_trusted_only_when_configured() -> None:
    production = {"DEBUG": "false", "SECRET_KEY": STRONG_KEY, "ALLOWED_HOSTS": "example.com"}
    assert show("SECURE_PROXY_SSL_HEADER", **production) == "None"
    trusted = show("SECURE_PROXY_SSL_HEADER", **production, TRUST_X_FORWARDED="true")
    assert trusted == "('HTTP_X_FORWARDED_PROTO', 'https')"


def test_an_api_rate_turns_on_throttling_per_key() -> None:
    assert "DEFAULT_THROTTLE_CLASSES" not in show("REST_FRAMEWORK")
    configured = show("REST_FRAMEWORK", API_RATE_LIMIT="600/min")
    assert "ApiKeyRateThrottle" in configured and "'api_key': '600/min'" in configured


def compose_environment() -> dict[str, str]:
    """The web service's environment in docker-compose.yml, defaults filled in."""
    compose = yaml.safe_load((Path(__file__).parents[2] / "docker-compose.yml").read_text())
    environment = compose["x-app"]["environment"]
    resolved = {}
    for name, value in environment.items():
        value = str(value)
        value = re.sub(r"\$\{(\w+):-([^}]*)\}", lambda m: m.group(2), value)
        value = re.sub(r"\$\{(\w+):\?[^}]*\}", lambda m: STRONG_KEY, value)
        resolved[name] = value
    return resolved


def test_check_deploy_is_clean_with_the_compose_configuration() -> None:
    # The browser tests' session sets DJANGO_ALLOW_ASYNC_UNSAFE; no deployment does.
    unset = {"SECRET_KEY", "DEBUG", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    environ = {k: v for k, v in os.environ.items() if k not in unset}
    compose = compose_environment()
    for name in ("DATABASE_URL", "REDIS_URL"):  # the compose hosts do not exist here
        compose.pop(name)
    result = subprocess.run(
        [sys.executable, str(Path(__file__).parents[2] / "manage.py"), "check", "--deploy"],
        env={**environ, **compose, "DJANGO_SETTINGS_MODULE": "promptadmin.settings"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr + result.stdout
    assert "System check identified no issues" in result.stdout
    assert compose["SECURE_SSL_REDIRECT"] == "true" and int(compose["SECURE_HSTS_SECONDS"]) > 0


def test_the_task_time_limit_must_be_below_the_brokers_visibility_timeout() -> None:
    result = start(CELERY_TASK_TIME_LIMIT="60", CELERY_VISIBILITY_TIMEOUT="60")
    assert result.returncode != 0
    assert "CELERY_TASK_TIME_LIMIT=60 must be below CELERY_VISIBILITY_TIMEOUT=60" in result.stderr


def test_celery_delivery_guarantees_are_set_explicitly() -> None:
    from django.conf import settings

    assert settings.CELERY_TASK_ACKS_LATE is True
    assert settings.CELERY_TASK_REJECT_ON_WORKER_LOST is True
    assert settings.CELERY_WORKER_PREFETCH_MULTIPLIER == 1
    visibility = settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"]
    assert settings.CELERY_TASK_SOFT_TIME_LIMIT < settings.CELERY_TASK_TIME_LIMIT < visibility


def test_the_summarizer_key_can_come_from_a_file(tmp_path: Any) -> None:
    secret = tmp_path / "key"
    secret.write_text("sk-from-file\n")
    script = "import django; django.setup(); from django.conf import settings; "
    script += "print(settings.SUMMARIZER_API_KEY)"
    environ = {**os.environ, "DJANGO_SETTINGS_MODULE": "promptadmin.settings"}
    environ["SUMMARIZER_API_KEY_FILE"] = str(secret)
    result = subprocess.run(
        [sys.executable, "-c", script], env=environ, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "sk-from-file"


def test_the_wsgi_application_imports_the_views_loads_the_encoding_and_freezes_them() -> None:
    # A worker's first request (a game server's turn) imports nothing.
    script = (
        "import gc, sys\n"
        "from assembler import tokens\n"
        "from promptadmin import wsgi\n"
        "frozen = gc.get_freeze_count() > 10_000\n"
        "views = {'promptadmin.urls', 'promptadmin.api.assembly'} <= set(sys.modules)\n"
        "print(callable(wsgi.application), len(tokens._tokenizers), frozen, views)\n"
    )
    environ = {**os.environ, "DJANGO_SETTINGS_MODULE": "promptadmin.settings"}
    result = subprocess.run(
        [sys.executable, "-c", script], env=environ, capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == ["True", "1", "True", "True"]


TASK_SETTINGS = ["CELERY_TASK_ALWAYS_EAGER", "CELERY_BROKER_URL", "SUMMARIZER_IN_BACKGROUND"]


def test_without_redis_tasks_run_in_process_a_summary_on_a_background_thread() -> None:
    # `make run`: nothing waits for a summary.
    unset = frozenset({"REDIS_URL", "CELERY_TASK_ALWAYS_EAGER"})
    assert show(*TASK_SETTINGS, unset=unset).split() == ["True", "memory://", "True"]
    # The test suite asks for eager tasks explicitly: they run as the request commits.
    explicit = show(*TASK_SETTINGS, unset=unset, CELERY_TASK_ALWAYS_EAGER="true").split()
    assert explicit == ["True", "memory://", "False"]
    # With a broker, workers make them.
    broker = show(*TASK_SETTINGS, unset=unset, REDIS_URL="redis://127.0.0.1:6379/6").split()
    assert broker == ["False", "redis://127.0.0.1:6379/6", "False"]


@pytest.mark.parametrize("value", ["summarizer", "a/b/c/d", "a//b", "a/b c", "/a/b"])
def test_a_summarizer_prompt_that_names_no_prompt_is_refused(value: str) -> None:
    result = start(SUMMARIZER_PROMPT=value)
    assert result.returncode != 0
    assert "SUMMARIZER_PROMPT=" in result.stderr and "component/agent" in result.stderr


def test_compose_forwards_every_summarizer_variable_to_web_and_worker() -> None:
    source = (Path(__file__).parents[2] / "promptadmin" / "settings.py").read_text()
    read = set(re.findall(r'env_\w+\(\s*"(SUMMARIZER_\w+)"', source))
    secrets = set(re.findall(r'env_secret\(\s*"(SUMMARIZER_\w+)"', source))
    wanted = read | {f"{name}_FILE" for name in secrets}
    assert {"SUMMARIZER_BASE_URL", "SUMMARIZER_PROMPT", "SUMMARIZER_API_KEY_FILE"} <= wanted
    compose = yaml.safe_load((Path(__file__).parents[2] / "docker-compose.yml").read_text())
    for service in ("web", "worker", "beat"):
        environment = compose["services"][service]["environment"]
        assert wanted <= set(environment), (service, sorted(wanted - set(environment)))


CONCURRENT_APPENDS = """
import threading
import django
django.setup()
from django.core.management import call_command
from django.db import connections
from promptadmin.conversations.services import conversation_append
call_command("migrate", verbosity=0)
errors = []
barrier = threading.Barrier(4)
def append(writer):
    try:
        barrier.wait()
        for turn in range(25):
            message = {"role": "user", "content": f"writer {writer}, turn {turn}"}
            conversation_append(actor=None, key="shared", messages=[message])
    except Exception as error:
        errors.append(repr(error))
    finally:
        connections.close_all()
threads = [threading.Thread(target=append, args=(n,)) for n in range(4)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(len(errors), errors[:1])
"""


def test_the_embedded_sqlite_database_takes_overlapping_writes(tmp_path: Any) -> None:
    # `make run` serves requests on threads and makes summaries on a background thread:
    # transactions that read, then write, at the same time must wait for each other, not
    # fail with "database is locked".
    environ = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG"}}
    environ.update(
        DATABASE_URL=f"sqlite:///{tmp_path / 'embedded.sqlite3'}",
        CELERY_TASK_ALWAYS_EAGER="true",
        DJANGO_SETTINGS_MODULE="promptadmin.settings",
    )
    environ.pop("REDIS_URL", None)
    result = subprocess.run(
        [sys.executable, "-c", CONCURRENT_APPENDS],
        env=environ,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    assert result.stdout.split()[0] == "0", result.stdout
