"""/metrics under gunicorn with a Celery worker: every process's values add up.

gunicorn (two workers) and a real Celery worker share ``PROMETHEUS_MULTIPROC_DIR``;
requests spread over both web workers and tasks queued by the web, done or failed in the
worker, are all counted by whichever worker answers ``/metrics``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.management import call_command
from prometheus_client.parser import text_string_to_metric_families

from promptadmin.celery import app as celery_app
from promptadmin.content.services.api_keys import api_key_create
from tests.promptadmin.conversations.fixtures import talk
from tests.servers import ROOT, celery_worker, environment, gunicorn

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

TASK = "promptadmin.conversations.tasks.summarize_conversation"


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:
        text = response.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: dict[Any, float], name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def send(url: str, key: str, body: Any = None) -> int:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        url,
        data=data,
        headers={"Authorization": f"Api-Key {key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return int(response.status)


def test_metrics_add_up_over_gunicorn_workers_and_the_celery_worker(tmp_path: Path) -> None:
    with celery_app.connection_for_write() as connection:
        connection.default_channel.client.flushdb()  # an empty queue
    call_command("seed_demo", verbosity=0)
    _, key = api_key_create(actor=None, name="ops", scope="admin")
    shared = {
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path),
        "REDIS_URL": settings.REDIS_URL,
        "CELERY_TASK_ALWAYS_EAGER": "false",
    }
    with gunicorn(workers=2, **shared) as url, celery_worker(**shared):
        for _ in range(20):
            assert send(f"{url}/api/v1/segments/?page_size=2", key) == 200
        # Over the history budget's threshold: a summary is queued by the web.
        body = {"messages": talk(12), "history_budget": 200}
        assert send(f"{url}/api/v1/conversations/c1/messages", key, body) == 201
        # A task that fails in the worker, queued by another process of the deployment.
        subprocess.run(
            [
                sys.executable,
                "manage.py",
                "shell",
                "-c",
                f"from promptadmin.celery import app; app.send_task('{TASK}', args=['x'])",
            ],
            cwd=ROOT,
            env=environment(**shared),
            check=True,
            capture_output=True,
        )
        deadline = time.monotonic() + 60
        while True:
            samples = scrape(url)
            done = value(samples, "promptadmin_tasks_total", task=TASK, state="done")
            failed = value(samples, "promptadmin_tasks_total", task=TASK, state="failed")
            if (done >= 1 and failed >= 1) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    requests = "promptadmin_http_requests_total"
    assert value(samples, requests, route="segment-list", method="GET", status="200") == 20
    # Queued by the web worker and by the shell, each counted where it was sent.
    assert value(samples, "promptadmin_tasks_total", task=TASK, state="queued") == 2
    assert (done, failed) == (1, 1)
    durations = value(
        samples,
        "promptadmin_http_request_duration_seconds_count",
        route="segment-list",
        method="GET",
    )
    assert durations == 20
    # Both web workers answered some of them: each wrote its own file.
    assert len(list(tmp_path.glob("counter_*.db"))) >= 3  # two web workers, the worker
