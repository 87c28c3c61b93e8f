"""API keys kept in process memory (promptadmin.content.keys): never standing in for a change.

A key read once is not read again while no key changes; every way a key changes (a
service, a plain save as the admin does it, the management command, a deletion) shows
with the very next request, and without the shared cache nothing is kept at all.
"""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from promptadmin.content import keys
from promptadmin.content.models import ApiKey
from promptadmin.content.services.api_keys import api_key_revoke, api_key_update
from promptadmin.settings import redis_cache
from tests.promptadmin.api.conftest import errors, key_client

pytestmark = pytest.mark.django_db


def stored(read_key: str) -> ApiKey:
    return ApiKey.objects.get(prefix=read_key.split(".")[0])


def test_a_key_is_read_once_while_no_key_changes(
    read_key: str, django_assert_num_queries: Any
) -> None:
    client = key_client(read_key)
    with django_assert_num_queries(1):
        assert client.get("/api/v1/me").status_code == 200
    for _ in range(3):
        with django_assert_num_queries(0):
            assert client.get("/api/v1/me").status_code == 200


def test_a_kept_key_still_needs_its_secret(read_key: str) -> None:
    assert key_client(read_key).get("/api/v1/me").status_code == 200
    prefix = read_key.split(".")[0]
    response = key_client(f"{prefix}.{'x' * 32}").get("/api/v1/me")
    assert response.status_code == 401
    assert errors(response) == {None: "Invalid API key."}


def revoke_by_service(read_key: str) -> None:
    api_key_revoke(actor=None, api_key=stored(read_key))


def revoke_by_save(read_key: str) -> None:  # what the admin's change form does
    api_key = stored(read_key)
    api_key.revoked = True
    api_key.save()


def revoke_by_command(read_key: str) -> None:
    call_command("revoke_api_key", read_key.split(".")[0], stdout=StringIO())


def expire_by_service(read_key: str) -> None:
    past = timezone.now() - timedelta(minutes=1)
    api_key_update(actor=None, api_key=stored(read_key), name="game-server", expires_at=past)


def delete(read_key: str) -> None:
    stored(read_key).delete()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (revoke_by_service, "has been revoked"),
        (revoke_by_save, "has been revoked"),
        (revoke_by_command, "has been revoked"),
        (expire_by_service, "expired at"),
        (delete, "Invalid API key."),
    ],
)
def test_every_change_to_a_kept_key_shows_with_the_next_request(
    read_key: str, change: Any, message: str
) -> None:
    client = key_client(read_key)
    assert client.get("/api/v1/me").status_code == 200  # read, and kept
    change(read_key)
    response = client.get("/api/v1/me")
    assert response.status_code == 401
    assert message in errors(response)[None]


def test_a_key_expiring_while_kept_fails_once_its_time_is_up(
    read_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    soon = timezone.now() + timedelta(minutes=5)
    api_key_update(actor=None, api_key=stored(read_key), name="game-server", expires_at=soon)
    client = key_client(read_key)
    assert client.get("/api/v1/me").status_code == 200
    later = soon + timedelta(seconds=1)
    monkeypatch.setattr("django.utils.timezone.now", lambda: later)
    response = client.get("/api/v1/me")
    assert response.status_code == 401
    assert "expired at" in errors(response)[None]


def test_a_change_behind_the_orms_back_shows_once_the_kept_copy_is_old(
    read_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = key_client(read_key)
    assert client.get("/api/v1/me").status_code == 200
    with connection.cursor() as cursor:  # no signal: nothing moves the generation
        cursor.execute(
            f"UPDATE {ApiKey._meta.db_table} SET revoked = true WHERE prefix = %s",
            [read_key.split(".")[0]],
        )
    assert client.get("/api/v1/me").status_code == 200  # kept, for at most KEPT_SECONDS
    monkeypatch.setattr(keys, "KEPT_SECONDS", 0.0)
    assert client.get("/api/v1/me").status_code == 401


def test_without_the_shared_cache_every_request_reads_its_key(
    read_key: str, django_assert_num_queries: Any
) -> None:
    client = key_client(read_key)
    assert client.get("/api/v1/me").status_code == 200
    with override_settings(CACHES={"default": redis_cache("redis://127.0.0.1:1/0")}):
        for _ in range(2):
            with django_assert_num_queries(1):
                assert client.get("/api/v1/me").status_code == 200
        with connection.cursor() as cursor:  # behind the ORM's back, and seen at once
            cursor.execute(
                f"UPDATE {ApiKey._meta.db_table} SET revoked = true WHERE prefix = %s",
                [read_key.split(".")[0]],
            )
        assert client.get("/api/v1/me").status_code == 401
