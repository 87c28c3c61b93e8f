"""An optional request rate per API key: 429 with Retry-After, in the error shape."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import cache
from django.core.management import call_command
from rest_framework.views import APIView

from promptadmin.api.throttling import ApiKeyRateThrottle
from promptadmin.content.services.api_keys import api_key_create
from tests.conftest import database_url
from tests.promptadmin.api.conftest import codes, errors, key_client, person, session_client

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def three_a_minute(monkeypatch: pytest.MonkeyPatch) -> None:
    # What API_RATE_LIMIT=3/min configures at start (views read it when they are defined).
    monkeypatch.setattr(APIView, "throttle_classes", [ApiKeyRateThrottle])
    monkeypatch.setattr(ApiKeyRateThrottle, "THROTTLE_RATES", {"api_key": "3/min"})
    cache.clear()


def test_a_key_over_its_rate_gets_429_with_retry_after(three_a_minute: None, reader: Any) -> None:
    for _ in range(3):
        assert reader.get("/api/v1/me").status_code == 200
    response = reader.get("/api/v1/me")
    assert response.status_code == 429
    assert codes(response) == ["throttled"]
    assert "Expected available in" in errors(response)[None]
    assert 0 < int(response["Retry-After"]) <= 60


def test_each_key_has_its_own_rate_and_people_are_not_throttled(
    three_a_minute: None, reader: Any
) -> None:
    for _ in range(4):
        reader.get("/api/v1/me")
    other = key_client(api_key_create(actor=None, name="other", scope="read")[1])
    assert other.get("/api/v1/me").status_code == 200
    author = session_client(person("author"))
    assert all(author.get("/api/v1/me").status_code == 200 for _ in range(5))


def test_without_a_configured_rate_nothing_is_throttled(reader: Any) -> None:
    assert all(reader.get("/api/v1/me").status_code == 200 for _ in range(20))


# A client of the app as it starts with API_RATE_LIMIT=3/min: the settings, the URLs and
# every view are imported afresh, as gunicorn would, and the hot path is on.
STARTED_WITH_A_RATE = """
import json, sys
import django
django.setup()
from django.test import Client

def calls(key, method, path, body=None):
    client = Client(HTTP_HOST="localhost", HTTP_AUTHORIZATION=f"Api-Key {key}")
    answers = []
    for _ in range(4):
        if method == "get":
            response = client.get(path)
        else:
            response = client.post(path, body, content_type="application/json")
        answers.append([response.status_code, response.get("Retry-After")])
    return answers

me_key, assemble_key = sys.argv[1:3]
print(json.dumps({
    "me": calls(me_key, "get", "/api/v1/me"),
    "assemble": calls(assemble_key, "post", "/api/v1/assemble", {"entry": "drowned-bell"}),
}))
"""


@pytest.mark.postgres  # the app runs in another process: it must see this test's rows
@pytest.mark.django_db(transaction=True)
def test_the_app_started_with_a_rate_throttles_the_api_and_the_hot_path() -> None:
    call_command("seed_demo", stdout=StringIO())
    cache.clear()
    keys = [api_key_create(actor=None, name=name, scope="read")[1] for name in ("me", "turns")]
    environ = {**os.environ, "API_RATE_LIMIT": "3/min", "DATABASE_URL": database_url()}
    environ["DJANGO_SETTINGS_MODULE"] = "promptadmin.settings"
    check = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "check"],
        env=environ,
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0, check.stderr
    run = subprocess.run(
        [sys.executable, "-c", STARTED_WITH_A_RATE, *keys],
        env=environ,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    answers = json.loads(run.stdout)
    for path in ("me", "assemble"):
        assert [status for status, _ in answers[path]] == [200, 200, 200, 429], path
        assert 0 < int(answers[path][3][1]) <= 60
