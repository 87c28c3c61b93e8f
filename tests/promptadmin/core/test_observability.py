"""What operators see: /metrics (who may read it, what it counts), the request id every
answer carries, and logs as JSON lines naming it."""

from __future__ import annotations

import doctest
import io
import json
import logging
from typing import Any

import pytest
from celery import shared_task
from django.core.cache import cache
from django.core.management import call_command
from django.test import Client
from prometheus_client import REGISTRY

from promptadmin.content.services.api_keys import api_key_create
from promptadmin.core import logs
from promptadmin.core.cachebreaker import CircuitBreaker
from promptadmin.core.logs import JsonFormatter, RequestIdFilter

pytestmark = pytest.mark.django_db


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.fixture
def api(db: None) -> Client:
    call_command("seed_demo", verbosity=0)
    _, key = api_key_create(actor=None, name="game", scope="read")
    return Client(HTTP_AUTHORIZATION=f"Api-Key {key}")


def test_the_examples_in_the_docstrings_hold() -> None:
    assert doctest.testmod(logs).failed == 0


def test_metrics_count_requests_by_route_and_status_the_hot_path_included(api: Client) -> None:
    total = "promptadmin_http_requests_total"
    before = sample(total, route="api-assemble", method="POST", status="200")
    missing = sample(total, route="segment-detail", method="GET", status="404")
    body = {"entry": "drowned-bell"}
    for _ in range(3):
        answer = api.post("/api/v1/assemble", body, content_type="application/json")
        assert answer.status_code == 200
    assert api.get("/api/v1/segments/999999/").status_code == 404
    page = Client().get("/metrics")
    assert page.status_code == 200
    assert page["Content-Type"].startswith("text/plain; version=")
    text = page.content.decode()
    series = 'promptadmin_http_requests_total{method="POST",route="api-assemble",status="200"}'
    assert series in text
    assert "promptadmin_http_request_duration_seconds_bucket" in text
    assert sample(total, route="api-assemble", method="POST", status="200") == before + 3
    assert sample(total, route="segment-detail", method="GET", status="404") == missing + 1
    # The route is the URL pattern's name: never a raw path, whatever is asked.
    # (A word, not digits: "4242" turned up inside a series' timestamp.)
    Client().get("/no/such/page/zanzibar")
    assert "zanzibar" not in Client().get("/metrics").content.decode()
    count = "promptadmin_http_request_duration_seconds_count"
    assert sample(count, route="api-assemble", method="POST") >= 3


def test_metrics_count_cache_hits_and_the_breakers_state(api: Client) -> None:
    cache.clear()  # a new content generation: nothing cached yet
    hits = sample("promptadmin_cache_lookups_total", result="memory_hit")
    misses = sample("promptadmin_cache_lookups_total", result="miss")
    for _ in range(2):
        body = {"entry": "drowned-bell", "first_turn": True}
        api.post("/api/v1/assemble", body, content_type="application/json")
    assert sample("promptadmin_cache_lookups_total", result="miss") > misses
    assert sample("promptadmin_cache_lookups_total", result="memory_hit") > hits
    breaker = CircuitBreaker(cooldown=30)
    opened = sample("promptadmin_cache_breaker_openings_total")
    breaker.failed()
    assert sample("promptadmin_cache_breaker_open") == 1
    assert sample("promptadmin_cache_breaker_openings_total") == opened + 1
    breaker.succeeded()
    assert sample("promptadmin_cache_breaker_open") == 0


@shared_task(name="tests.observability.boom")
def boom() -> None:
    raise RuntimeError("boom")


@shared_task(name="tests.observability.fine")
def fine() -> str:
    return "ok"


def test_metrics_count_tasks_by_name_and_state_when_they_run_in_process() -> None:
    queued = sample("promptadmin_tasks_total", task="tests.observability.fine", state="queued")
    fine.delay()
    # As the project runs a task in-process: its failure is kept, not raised.
    assert boom.apply(throw=False).failed()
    labels = {"task": "tests.observability.fine"}
    assert sample("promptadmin_tasks_total", **labels, state="queued") == queued + 1
    assert sample("promptadmin_tasks_total", **labels, state="done") >= 1
    assert sample("promptadmin_tasks_total", task="tests.observability.boom", state="failed") >= 1


@pytest.mark.parametrize(
    ("address", "extra", "allowed"),
    [
        ("127.0.0.1", {}, True),
        ("::1", {}, True),
        ("203.0.113.9", {}, False),
        ("10.1.2.3", {}, True),  # in METRICS_ALLOWED_ADDRESSES below
        # Relayed by a proxy on this machine that is not trusted to name the client.
        ("127.0.0.1", {"HTTP_X_FORWARDED_FOR": "198.51.100.7"}, False),
        ("203.0.113.9", {"HTTP_AUTHORIZATION": "Bearer a-long-enough-token"}, True),
        ("203.0.113.9", {"HTTP_AUTHORIZATION": "Bearer wrong-but-long-enough"}, False),
    ],
)
def test_metrics_are_answered_to_loopback_to_allowed_addresses_or_with_the_token(
    settings: Any, address: str, extra: dict[str, str], allowed: bool
) -> None:
    settings.METRICS_ALLOWED_ADDRESSES = ["10.0.0.0/8"]
    settings.METRICS_TOKEN = "a-long-enough-token"
    response = Client(REMOTE_ADDR=address).get("/metrics", **extra)
    assert response.status_code == (200 if allowed else 403)
    if not allowed:
        assert b"METRICS_ALLOWED_ADDRESSES" in response.content


def test_every_answer_carries_a_request_id(api: Client) -> None:
    answers = [
        api.post("/api/v1/assemble", {"entry": "drowned-bell"}, content_type="application/json"),
        api.get("/api/v1/segments/"),
        api.get("/api/v1/nothing-here"),
        api.get("/api/v1/releases/a%00/"),
        Client().get("/"),  # the studio's redirect to sign in
        Client().get("/healthz"),
    ]
    ids = [answer["X-Request-ID"] for answer in answers]
    assert all(len(i) == 32 for i in ids) and len(set(ids)) == len(ids)


@pytest.mark.parametrize(
    ("sent", "kept"),
    [
        ("4f7b2c1e-9a3d-4e5f-8a7b-1c2d3e4f5a6b", True),
        ("lb:abc=123/x+y", True),
        ("x" * 128, True),
        ("x" * 129, False),
        ("has space", False),
        ("-leading-dash", False),
        ('quote"d', False),
    ],
)
def test_a_sane_request_id_from_a_proxy_is_kept_any_other_replaced(
    api: Client, sent: str, kept: bool
) -> None:
    answer = api.get("/api/v1/segments/", HTTP_X_REQUEST_ID=sent)
    assert (answer["X-Request-ID"] == sent) is kept


def test_logs_are_json_lines_naming_the_request(api: Client) -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RequestIdFilter())
    logger = logging.getLogger("django.request")
    logger.addHandler(handler)
    try:
        answer = api.get("/api/v1/segments/999999/", HTTP_X_REQUEST_ID="trace-42")
    finally:
        logger.removeHandler(handler)
    assert answer.status_code == 404
    line = json.loads(stream.getvalue().splitlines()[-1])
    assert line["request_id"] == "trace-42"
    assert line["level"] == "WARNING" and line["logger"] == "django.request"
    assert "Not Found: /api/v1/segments/999999/" in line["message"]
    assert line["time"].endswith("+00:00")


def test_the_settings_log_json_lines_unless_told_otherwise(settings: Any) -> None:
    handler = settings.LOGGING["handlers"]["console"]
    assert handler["filters"] == ["request_id"]
    assert handler["formatter"] in ("json", "text")
