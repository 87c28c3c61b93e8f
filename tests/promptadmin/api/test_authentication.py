"""Who may call the API: API keys by scope, people by role, nobody else."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone
from rest_framework.test import APIClient

from promptadmin.content.models import ApiKey
from promptadmin.content.services.api_keys import api_key_create, api_key_revoke
from tests.promptadmin.api.conftest import codes, errors, key_client, person, session_client

pytestmark = pytest.mark.django_db

NEW_WORLD = {"slug": "new-world", "name": "New World"}


def test_a_call_without_credentials_is_401_naming_the_scheme() -> None:
    response = APIClient().get("/api/v1/me")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Api-Key"
    assert codes(response) == ["not_authenticated"]


def test_a_read_key_reads_and_assembles_but_cannot_write(reader, demo) -> None:  # type: ignore[no-untyped-def]
    assert reader.get("/api/v1/worlds/").status_code == 200
    assert (
        reader.post("/api/v1/assemble", {"entry": "drowned-bell"}, format="json").status_code == 200
    )
    response = reader.post("/api/v1/worlds/", NEW_WORLD, format="json")
    assert response.status_code == 403
    assert "scope 'write'" in errors(response)[None]


def test_a_write_key_changes_content(writer) -> None:  # type: ignore[no-untyped-def]
    assert writer.post("/api/v1/worlds/", NEW_WORLD, format="json").status_code == 201


def test_the_key_is_stored_hashed_and_shown_only_at_creation() -> None:
    api_key, key = api_key_create(actor=None, name="svc", scope="read")
    stored = ApiKey.objects.get(pk=api_key.pk)
    assert key.split(".")[1] not in stored.hashed_key
    assert stored.hashed_key.startswith("sha512$$")


@pytest.mark.parametrize(
    "header", ["Api-Key nope", "Api-Key abcdefgh.wrongwrongwrongwrongwrongwrong1"]
)
def test_an_unknown_key_is_401(header: str) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    response = client.get("/api/v1/me")
    assert response.status_code == 401
    assert errors(response) == {None: "Invalid API key."}


def test_a_key_with_a_wrong_secret_is_401(read_key: str) -> None:
    prefix = read_key.split(".")[0]
    response = key_client(f"{prefix}.{'x' * 32}").get("/api/v1/me")
    assert response.status_code == 401


def test_a_revoked_key_fails_from_the_next_request_on(read_key: str) -> None:
    client = key_client(read_key)
    assert client.get("/api/v1/me").status_code == 200
    api_key_revoke(actor=None, api_key=ApiKey.objects.get(prefix=read_key.split(".")[0]))
    response = client.get("/api/v1/me")
    assert response.status_code == 401
    assert "revoked" in errors(response)[None]


def test_revoke_api_key_revokes_by_prefix(read_key: str) -> None:
    out = StringIO()
    call_command("revoke_api_key", read_key.split(".")[0], stdout=out)
    assert "is revoked" in out.getvalue()
    assert key_client(read_key).get("/api/v1/me").status_code == 401


def test_an_expired_key_fails() -> None:
    _, key = api_key_create(
        actor=None, name="old", scope="write", expires_at=timezone.now() - timedelta(seconds=1)
    )
    response = key_client(key).get("/api/v1/me")
    assert response.status_code == 401
    assert "expired" in errors(response)[None]


@pytest.mark.parametrize("query", ["api_key={key}", "key={key}", "token=abc", "q={key}"])
def test_keys_in_the_query_string_are_refused(read_key: str, query: str) -> None:
    url = "/api/v1/me?" + query.format(key=read_key)
    for client in (APIClient(), key_client(read_key)):
        response = client.get(url)
        assert response.status_code == 400
        assert codes(response) == ["credentials_in_url"]
        assert "Authorization: Api-Key" in errors(response)[None]


def test_create_api_key_prints_a_working_key_with_its_scope_and_expiry() -> None:
    out = StringIO()
    call_command(
        "create_api_key",
        "--name",
        "npc-service",
        "--scope",
        "write",
        "--expires-days",
        "30",
        stdout=out,
        stderr=StringIO(),
    )
    key = out.getvalue().strip()
    response = key_client(key).get("/api/v1/me")
    assert response.json() == {
        "kind": "api_key",
        "name": "npc-service",
        "scope": "write",
        "role": None,
        "can_write": True,
    }
    api_key = ApiKey.objects.get(prefix=key.split(".")[0])
    assert timedelta(days=29) < api_key.expiry_date - timezone.now() <= timedelta(days=30)


def test_create_api_key_makes_an_admin_key_that_writes_and_migrates() -> None:
    out, err = StringIO(), StringIO()
    call_command(
        "create_api_key", "--name", "migrations", "--scope", "admin", stdout=out, stderr=err
    )
    key = out.getvalue().strip()
    assert "(scope admin, no expiry)" in err.getvalue()
    client = key_client(key)
    assert client.get("/api/v1/me").json() == {
        "kind": "api_key",
        "name": "migrations",
        "scope": "admin",
        "role": None,
        "can_write": True,
    }
    assert client.post("/api/v1/worlds/", NEW_WORLD, format="json").status_code == 201
    assert client.get("/api/v1/deprecated-segments/").status_code == 200
    assert ApiKey.objects.get(prefix=key.split(".")[0]).expiry_date is None


def test_a_viewer_reads_and_previews_but_cannot_edit(demo) -> None:  # type: ignore[no-untyped-def]
    client = session_client(person("viewer"))
    assert client.get("/api/v1/segments/").status_code == 200
    assert (
        client.post("/api/v1/preview", {"entry": "drowned-bell"}, format="json").status_code == 200
    )
    response = client.post("/api/v1/worlds/", NEW_WORLD, format="json")
    assert response.status_code == 403
    assert "Your role is 'viewer'" in errors(response)[None]


@pytest.mark.parametrize("role", ["author", "admin"])
def test_authors_and_admins_edit(role: str) -> None:
    client = session_client(person(role))
    assert client.post("/api/v1/worlds/", NEW_WORLD, format="json").status_code == 201


def test_an_inactive_person_is_refused() -> None:
    user = person("admin")
    client = session_client(user)
    user.is_active = False
    user.save()
    assert client.get("/api/v1/me").status_code in (401, 403)


def test_session_writes_need_the_csrf_token() -> None:
    client = session_client(person("author"), enforce_csrf=True)
    response = client.post("/api/v1/worlds/", NEW_WORLD, format="json")
    assert response.status_code == 403
    assert "CSRF" in errors(response)[None]
    secret = "s3cr3t" * 5 + "ok"  # 32 characters, as Django's CSRF cookie holds
    client.cookies["csrftoken"] = secret
    response = client.post("/api/v1/worlds/", NEW_WORLD, format="json", HTTP_X_CSRFTOKEN=secret)
    assert response.status_code == 201
