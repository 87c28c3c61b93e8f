"""Interfaces, adapter instructions and the prompt list."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from promptadmin.prompts.models import Prompt
from promptadmin.prompts.services.prompts import prompt_create
from tests.promptadmin.api.conftest import (
    codes,
    errors,
)
from tests.promptadmin.api.prompts import basic_client, make_prompt, make_version

pytestmark = pytest.mark.django_db


def test_interfaces_and_adapter_instructions_are_managed_with_the_write_scope(
    writer: APIClient, reader: APIClient
) -> None:
    created = writer.post(
        "/api/v1/interfaces/",
        {"name": "claude_tool", "supports_system_prompt": True, "supports_structured_output": True},
        format="json",
    )
    assert created.status_code == 201
    assert reader.post("/api/v1/interfaces/", {"name": "x"}, format="json").status_code == 403
    adapter = writer.post(
        "/api/v1/adapter-instructions/",
        {"interface": "claude_tool", "task": "parsing", "order": 1,
         "system_addition": "Use the tool.", "user_addition": "", "active": True},
        format="json",
    )  # fmt: skip
    assert adapter.status_code == 201, adapter.json()
    url = f"/api/v1/adapter-instructions/{adapter.json()['id']}"
    stale = writer.patch(url, {"active": False}, format="json", HTTP_IF_MATCH='"old"')
    assert stale.status_code == 412
    changed = writer.patch(
        url, {"active": False}, format="json", HTTP_IF_MATCH=adapter.headers["ETag"]
    )
    assert changed.json()["active"] is False
    in_use = writer.delete("/api/v1/interfaces/claude_tool", HTTP_IF_MATCH=created.headers["ETag"])
    assert in_use.status_code == 409
    bad = writer.post(
        "/api/v1/adapter-instructions/",
        {"interface": "nope", "task": "parsing", "system_addition": "{{ a.b }}"},
        format="json",
    )
    assert bad.status_code == 400
    assert set(errors(bad)) == {"interface"}
    bad_template = writer.post(
        "/api/v1/adapter-instructions/",
        {"interface": "claude_tool", "task": "parsing", "system_addition": "{{ a.b }}"},
        format="json",
    )
    assert "attribute access" in errors(bad_template)["system_addition"]


def test_the_prompt_list_filters_and_shows_labels(
    reader: APIClient, judge: Prompt, django_assert_max_num_queries: Any
) -> None:
    for n in range(5):
        make_version(make_prompt(f"task{n}"), ("production",))
    with django_assert_max_num_queries(5):
        body = reader.get("/api/v1/prompts/", {"component": "verifier"}).json()
    assert body["count"] == 7
    first = body["results"][0]
    assert (first["task_type"], first["labels"], first["latest_version"]) == (
        None,
        {"production": 1, "staging": 2},
        2,
    )
    staged = reader.get("/api/v1/prompts/", {"label": "staging"}).json()
    assert [p["task_type"] for p in staged["results"]] == [None]
    defaults = reader.get("/api/v1/prompts/", {"task_type": ""}).json()
    assert defaults["count"] == 1


def test_the_prompt_list_treats_latest_as_having_a_version_as_the_langfuse_list_does(
    reader: APIClient, read_key: str, judge: Prompt
) -> None:
    make_prompt("empty")  # no version yet: nothing is latest
    listed = reader.get("/api/v1/prompts/", {"label": "latest"}).json()
    assert [(p["task_type"], p["latest_version"]) for p in listed["results"]] == [
        (None, 2),
        ("rubric", 1),
    ]
    langfuse = basic_client(read_key).get("/api/public/v2/prompts", {"label": "latest"}).json()
    assert [p["name"] for p in langfuse["data"]] == ["verifier/judge", "verifier/judge/rubric"]


def test_the_prompt_list_filters_by_agent(reader: APIClient, judge: Prompt) -> None:
    prompt_create(actor=None, component="verifier", agent="parser")
    prompt_create(actor=None, component="summarizer", agent="judge")
    listed = reader.get("/api/v1/prompts/", {"agent": "judge"}).json()
    assert [(p["component"], p["task_type"]) for p in listed["results"]] == [
        ("summarizer", None),
        ("verifier", None),
        ("verifier", "rubric"),
    ]
    both = reader.get("/api/v1/prompts/", {"agent": "parser", "component": "verifier"}).json()
    assert [(p["agent"], p["latest_version"]) for p in both["results"]] == [("parser", None)]


def test_creating_the_same_prompt_twice_names_the_address(writer: APIClient, judge: Prompt) -> None:
    response = writer.post(
        "/api/v1/prompts/", {"component": "verifier", "agent": "judge"}, format="json"
    )
    assert response.status_code == 400
    assert "already exists" in errors(response)["task_type"]
    assert codes(response)
