"""Fetching a registered prompt: fallback to the default, labels, ETags, the cache."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from promptadmin.prompts.models import Prompt
from tests.promptadmin.api.conftest import (
    cache_calls,
    errors,
    key_client,
)
from tests.promptadmin.api.prompts import JUDGE, LANGFUSE_JUDGE, basic_client, make_version

pytestmark = pytest.mark.django_db


def test_fetch_defaults_to_production_and_names_the_task_type_used(
    reader: APIClient, judge: Prompt
) -> None:
    default = reader.get(JUDGE)
    assert default.status_code == 200
    body = default.json()
    assert (body["version"], body["task_type_used"], body["labels"]) == (1, None, ["production"])
    assert set(body) >= {
        "component", "agent", "task_type_used", "version", "labels", "syntax", "system",
        "user_templates", "variables", "task", "config", "content_hash",
    }  # fmt: skip
    rubric = reader.get(JUDGE, {"task_type": "rubric", "label": "production"}).json()
    assert rubric["task_type_used"] == "rubric"
    assert rubric["system"] == "You grade {{ subject }} by the rubric."


def test_a_task_type_without_its_own_prompt_falls_back_to_the_default(
    reader: APIClient, judge: Prompt
) -> None:
    body = reader.get(JUDGE, {"task_type": "abstention", "label": "staging"}).json()
    assert (body["task_type_used"], body["version"]) == (None, 2)


def test_an_empty_task_type_in_the_query_means_the_default(
    reader: APIClient, judge: Prompt
) -> None:
    assert reader.get(JUDGE, {"task_type": ""}).json()["task_type_used"] is None


def test_an_unknown_label_is_404_and_never_another_label(reader: APIClient, judge: Prompt) -> None:
    response = reader.get(JUDGE, {"label": "canary"})
    assert response.status_code == 404
    assert "no label 'canary'" in errors(response)[None]
    # The rubric prompt has no staging: no fallback to the default's staging.
    assert reader.get(JUDGE, {"task_type": "rubric", "label": "staging"}).status_code == 404


def test_label_and_version_together_are_refused(reader: APIClient, judge: Prompt) -> None:
    response = reader.get(JUDGE, {"label": "production", "version": "1"})
    assert response.status_code == 400
    assert "version" in errors(response)


def test_latest_is_always_the_newest_version(
    reader: APIClient, writer: APIClient, judge: Prompt, django_capture_on_commit_callbacks: Any
) -> None:
    assert reader.get(JUDGE, {"label": "latest"}).json()["version"] == 2
    assert reader.get(JUDGE, {"version": "2"}).json()["labels"] == ["staging", "latest"]
    with django_capture_on_commit_callbacks(execute=True):
        make_version(judge, system="You grade {{ subject }} kindly.")
    assert reader.get(JUDGE, {"label": "latest"}).json()["version"] == 3
    refused = writer.put(f"{JUDGE}labels/latest", {"version": 1}, format="json")
    assert refused.status_code == 400
    assert "latest" in errors(refused)["label"]


def test_fetch_sends_a_strong_etag_and_answers_304_when_unchanged(
    reader: APIClient, judge: Prompt
) -> None:
    first = reader.get(JUDGE)
    etag = first.headers["ETag"]
    assert etag.startswith('"') and not etag.startswith("W/")
    again = reader.get(JUDGE, HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304
    assert again.content == b""
    assert reader.get(JUDGE, HTTP_IF_NONE_MATCH='"other"').status_code == 200


@pytest.mark.parametrize("hot", [True, False], ids=["hot path", "drf"])
@pytest.mark.parametrize("api", ["native", "langfuse"])
def test_if_none_match_uses_the_weak_comparison_a_list_and_star(
    read_key: str, judge: Prompt, settings: Any, api: str, hot: bool
) -> None:
    settings.API_HOT_PATH = hot
    client, url = (
        (key_client(read_key), JUDGE)
        if api == "native"
        else (basic_client(read_key), LANGFUSE_JUDGE)
    )
    etag = client.get(url).headers["ETag"]
    # RFC 9110 13.1.2: If-None-Match compares weakly; a proxy that compresses a response
    # weakens its tag, and the client still holds the same representation.
    for header in (etag, f"W/{etag}", f'"other", W/{etag}', "*"):
        again = client.get(url, HTTP_IF_NONE_MATCH=header)
        assert (again.status_code, again.headers["ETag"]) == (304, etag), header
    for header in ('"other"', 'W/"other"', etag.strip('"'), f'{etag[:-2]}x"'):
        assert client.get(url, HTTP_IF_NONE_MATCH=header).status_code == 200, header


def test_a_promotion_is_seen_by_the_next_fetch(
    reader: APIClient, ops: APIClient, judge: Prompt, django_capture_on_commit_callbacks: Any
) -> None:
    before = reader.get(JUDGE)
    assert before.json()["version"] == 1
    with django_capture_on_commit_callbacks(execute=True):
        moved = ops.put(
            f"{JUDGE}labels/production", {"task_type": None, "version": 2}, format="json"
        )
    assert moved.json() == {"label": "production", "version": 2}
    after = reader.get(JUDGE, HTTP_IF_NONE_MATCH=before.headers["ETag"])
    assert after.status_code == 200
    assert after.json()["version"] == 2


def test_a_warm_fetch_makes_no_query(
    reader: APIClient, judge: Prompt, django_assert_max_num_queries: Any
) -> None:
    reader.get(JUDGE)
    # One query: the API key (re-read on every request, so revocation is immediate).
    with django_assert_max_num_queries(1):
        assert reader.get(JUDGE).status_code == 200


def test_a_cold_fetch_makes_a_bounded_number_of_queries(
    reader: APIClient, judge: Prompt, django_assert_max_num_queries: Any
) -> None:
    with django_assert_max_num_queries(5):
        assert reader.get(JUDGE, {"task_type": "rubric"}).status_code == 200


def test_a_warm_langfuse_fetch_makes_no_query_and_one_cache_round_trip(
    read_key: str,
    judge: Prompt,
    django_assert_num_queries: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client = basic_client(read_key)
    expected = client.get(LANGFUSE_JUDGE).json()
    calls = cache_calls(monkeypatch)
    with django_assert_num_queries(0):  # the API key is kept in memory
        assert client.get(LANGFUSE_JUDGE).json() == expected
    assert calls == ["get_many"]


def test_a_cold_langfuse_fetch_makes_a_bounded_number_of_queries(
    read_key: str, judge: Prompt, django_assert_max_num_queries: Any
) -> None:
    # The key, the prompt (with its fallback), the newest number, the version, its labels.
    with django_assert_max_num_queries(5):
        assert basic_client(read_key).get(f"{LANGFUSE_JUDGE}%2Frubric").status_code == 200


def test_the_langfuse_path_sends_its_own_etag_and_answers_304(read_key: str, judge: Prompt) -> None:
    import base64

    basic = base64.b64encode(f"{read_key.partition('.')[0]}:{read_key}".encode()).decode()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Basic {basic}")
    url = "/api/public/v2/prompts/verifier%2Fjudge?label=production"
    first = client.get(url)
    assert first.status_code == 200
    assert first.json()["type"] == "chat"
    assert first.headers["ETag"].startswith('"lf-')
    assert client.get(url, HTTP_IF_NONE_MATCH=first.headers["ETag"]).status_code == 304
    native = client.get(JUDGE)
    assert native.status_code == 401  # Basic is only for /api/public/


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/prompts/?task_type=%00",
        "/api/v1/prompts/?component=a%00",
        "/api/v1/prompts/?label=%00",
        "/api/v1/prompts/verifier/judge/?task_type=%00",
        "/api/v1/adapter-instructions/?task=%00",
    ],
)
def test_query_parameters_that_cannot_name_anything_are_a_400(
    reader: APIClient, judge: Prompt, url: str
) -> None:
    response = reader.get(url)
    assert response.status_code == 400
    assert errors(response)


def test_the_langfuse_path_answers_404_for_a_label_that_cannot_exist(
    read_key: str, judge: Prompt
) -> None:
    import base64

    basic = base64.b64encode(f"{read_key.partition('.')[0]}:{read_key}".encode()).decode()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Basic {basic}")
    assert client.get("/api/public/v2/prompts/verifier%2Fjudge?label=%2F").status_code == 404
    assert client.get("/api/public/v2/prompts?label=%2F").json()["data"] == []
    # A NUL is refused before any view, in Langfuse's error shape.
    refused = client.get("/api/public/v2/prompts?label=%00")
    assert refused.status_code == 400 and refused.json()["error"] == "InvalidRequestError"
