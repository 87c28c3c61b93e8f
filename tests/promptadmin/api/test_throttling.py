"""An optional request rate per API key: 429 with Retry-After, in the error shape."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.cache import cache
from rest_framework.views import APIView

from promptadmin.api.throttling import ApiKeyRateThrottle
from promptadmin.content.services.api_keys import api_key_create
from tests.promptadmin.api.conftest import codes, errors, key_client, person, session_client

pytestmark = pytest.mark.django_db


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
