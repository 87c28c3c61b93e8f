"""One error shape everywhere, and never a stack trace."""

from __future__ import annotations

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from promptadmin.api import assembly as views
from tests.promptadmin.api.conftest import codes, errors

pytestmark = pytest.mark.django_db


@override_settings(DEBUG=True)
def test_an_unexpected_failure_is_a_500_without_a_stack_trace(reader, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def explode(params: object) -> None:
        raise RuntimeError("secret internals at /work/main/promptadmin")

    monkeypatch.setattr(views, "assemble_prompt", explode)
    reader.raise_request_exception = False  # answer as a server would, not re-raise
    response = reader.post("/api/v1/assemble", {"entry": "x"}, format="json")
    assert response.status_code == 500
    assert response.json() == {
        "type": "server_error",
        "errors": [{"code": "error", "detail": "Server Error (500)", "attr": None}],
    }
    assert b"Traceback" not in response.content and b"secret" not in response.content


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/api/v1/nowhere"),
        ("delete", "/api/v1/worlds/NOT%20A%20SLUG/"),
        ("get", "/api/v1/segments/99999999999999999999/"),
    ],
)
def test_unknown_paths_answer_in_the_error_shape(reader, method: str, path: str) -> None:  # type: ignore[no-untyped-def]
    response = getattr(reader, method)(path)
    assert response.status_code == 404
    assert codes(response) == ["not_found"]
    assert errors(response)


def test_malformed_json_and_wrong_methods_answer_in_the_error_shape(reader) -> None:  # type: ignore[no-untyped-def]
    bad = reader.post("/api/v1/assemble", "{not json", content_type="application/json")
    assert bad.status_code == 400 and codes(bad) == ["parse_error"]
    assert codes(reader.get("/api/v1/assemble")) == ["method_not_allowed"]
    assert reader.options("/api/v1/worlds/").status_code == 405
    unauthenticated = APIClient().post("/api/v1/assemble", {}, format="json")
    assert codes(unauthenticated) == ["not_authenticated"]


def test_nul_characters_are_refused_before_the_database(writer) -> None:  # type: ignore[no-untyped-def]
    body = {"scope": "core", "content": "ok", "metadata": {"title": "a\x00b"}}
    response = writer.post("/api/v1/segments/", body, format="json")
    assert response.status_code == 400 and "metadata" in errors(response)
    response = writer.post(
        "/api/v1/segments/", {"scope": "core", "content": "a\x00"}, format="json"
    )
    assert response.status_code == 400 and "content" in errors(response)


def test_api_answers_carrying_content_are_private_and_never_stored(reader, demo) -> None:  # type: ignore[no-untyped-def]
    for response in (
        reader.get("/api/v1/segments/"),
        reader.get("/api/v1/worlds/"),
        reader.post("/api/v1/assemble", {"entry": "drowned-bell"}, format="json"),
        reader.get("/api/v1/nowhere"),
    ):
        assert response.status_code in (200, 404)
        assert set(response["Cache-Control"].split(", ")) >= {"private", "no-store"}
