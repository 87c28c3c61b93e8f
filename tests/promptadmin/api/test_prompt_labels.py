"""Prompt labels through the API: moving, removing, naming, history and scopes."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from promptadmin.prompts.models import Label, Prompt
from tests.promptadmin.api.conftest import (
    errors,
    person,
    session_client,
)
from tests.promptadmin.api.prompts import (
    JUDGE,
)

pytestmark = pytest.mark.django_db


def test_the_label_history_makes_the_same_few_queries_however_long_it_is(
    reader: APIClient, judge: Prompt, django_assert_max_num_queries: Any
) -> None:
    from promptadmin.prompts.services.prompts import prompt_label_move

    assert reader.get(f"{JUDGE}labels/history").json()["count"] == 2
    authors = [person("admin") for _ in range(3)]  # production is protected
    for n in range(12):
        prompt_label_move(actor=authors[n % 3], prompt=judge, name="production", version=2 - n % 2)
    # The prompt, the count for the page, the events with their authors (the key is known).
    with django_assert_max_num_queries(3):
        history = reader.get(f"{JUDGE}labels/history").json()
    assert history["count"] == 14
    assert {event["actor"] for event in history["results"][:12]} == {
        author.get_username() for author in authors
    }


def test_labels_are_removed_and_every_change_is_in_the_history(
    writer: APIClient, reader: APIClient, ops: APIClient, judge: Prompt
) -> None:
    assert ops.put(f"{JUDGE}labels/production", {"version": 2}, format="json").status_code == 200
    assert writer.delete(f"{JUDGE}labels/staging?task_type=").status_code == 204
    assert reader.get(JUDGE, {"label": "staging"}).status_code == 404
    assert writer.delete(f"{JUDGE}labels/staging").status_code == 404
    history = reader.get(f"{JUDGE}labels/history").json()["results"]
    assert [(e["label"], e["action"], e["from_version"], e["to_version"]) for e in history] == [
        ("staging", "removed", 2, None),
        ("production", "moved", 1, 2),
        ("staging", "set", None, 2),
        ("production", "set", None, 1),
    ]
    assert history[0]["actor"].startswith("API key 'content-pipeline' (")


def test_setting_a_label_to_an_unknown_version_names_the_version(
    writer: APIClient, judge: Prompt
) -> None:
    response = writer.put(f"{JUDGE}labels/staging", {"version": 9}, format="json")
    assert response.status_code == 400
    assert "no version 9" in errors(response)["version"]


def test_label_names_follow_the_rule(writer: APIClient, judge: Prompt) -> None:
    assert writer.put(f"{JUDGE}labels/Prod", {"version": 1}, format="json").status_code == 404
    long = "a" * 37
    assert writer.put(f"{JUDGE}labels/{long}", {"version": 1}, format="json").status_code == 404
    response = writer.post(
        f"{JUDGE}versions/",
        {"user_templates": {"default": "x"}, "labels": ["Bad Label"]},
        format="json",
    )
    assert response.status_code == 400
    assert "labels" in errors(response)


def test_reads_need_the_read_scope_and_changes_the_write_scope(
    reader: APIClient, judge: Prompt
) -> None:
    response = reader.put(f"{JUDGE}labels/staging", {"version": 1}, format="json")
    assert response.status_code == 403
    viewer = session_client(person("viewer"))
    assert viewer.get(JUDGE).status_code == 200
    assert viewer.delete(f"{JUDGE}labels/staging").status_code == 403
    author = session_client(person("author"))
    assert author.put(f"{JUDGE}labels/staging", {"version": 1}, format="json").status_code == 200
    assert APIClient().get(JUDGE).status_code in (401, 403)


def test_setting_a_label_refuses_unknown_fields_and_takes_the_version_from_the_query(
    writer: APIClient, judge: Prompt
) -> None:
    response = writer.put(f"{JUDGE}labels/canary", {"version": 1, "extra": 42}, format="json")
    assert response.status_code == 400
    assert "extra" in errors(response)
    assert writer.put(f"{JUDGE}labels/canary?version=2").json() == {"label": "canary", "version": 2}
    missing = writer.put(f"{JUDGE}labels/canary", {}, format="json")
    assert "version" in errors(missing)


def test_the_protected_production_label_moves_only_for_admins_and_admin_keys(
    writer: APIClient, ops: APIClient, judge: Prompt
) -> None:
    author = session_client(person("author"))
    for client in (writer, author):
        moved = client.put(f"{JUDGE}labels/production", {"version": 2}, format="json")
        assert moved.status_code == 403
        assert "protected label 'production'" in errors(moved)[None]
        assert client.delete(f"{JUDGE}labels/production").status_code == 403
        created = client.post(
            f"{JUDGE}versions/",
            {"user_templates": {"default": "x"}, "labels": ["production"]},
            format="json",
        )
        assert created.status_code == 403
        assert client.put(f"{JUDGE}labels/canary", {"version": 2}, format="json").status_code == 200
    assert Label.objects.get(prompt=judge, name="production").version.number == 1
    assert judge.versions.count() == 2
    for client in (ops, session_client(person("admin"))):
        assert client.put(f"{JUDGE}labels/production", {"version": 2}, format="json").json() == {
            "label": "production",
            "version": 2,
        }
        assert client.delete(f"{JUDGE}labels/production").status_code == 204
        back = client.put(f"{JUDGE}labels/production", {"version": 1}, format="json")
        assert back.status_code == 200
