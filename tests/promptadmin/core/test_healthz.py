from __future__ import annotations

from unittest import mock

import pytest
from django.db import OperationalError
from django.test import Client


@pytest.mark.django_db
def test_healthz_reports_the_database_and_cache(client: Client, settings: object) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    expected_cache = "ok" if settings.REDIS_URL else "absent"  # type: ignore[attr-defined]
    assert response.json() == {"database": "ok", "cache": expected_cache}


@pytest.mark.django_db
def test_healthz_is_503_when_the_database_is_unreachable(client: Client) -> None:
    with mock.patch("django.db.backends.utils.CursorWrapper.execute", side_effect=OperationalError):
        response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["database"] == "unavailable"
