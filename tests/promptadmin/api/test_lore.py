"""Lore over the API: the contract (paths, field names, status codes), filters and
pagination, ETags and If-Match, history and restore, the test endpoint, permissions,
hostile input, and lore in the assembly's answer."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from assembler.lore import MAX_LORE_KEY_LENGTH, MAX_LORE_KEYS, MAX_LORE_TEST_TEXT
from promptadmin.core.tokens import tokenizer
from promptadmin.lore import services
from promptadmin.lore.models import LoreEntry
from tests.factories import WorldFactory
from tests.promptadmin.api.conftest import errors, person, session_client

pytestmark = pytest.mark.django_db

BELL = {
    "world": "coast",
    "title": "The drowned bell",
    "content": "The chapel bell has not rung since the flood.",
    "keys": ["bell", "chapel"],
}


@pytest.fixture
def coast(db: Any) -> Any:
    return WorldFactory(slug="coast", name="Iron Coast")


def post(client: Any, body: Any, path: str = "/api/v1/lore/") -> Any:
    return client.post(path, json.dumps(body), content_type="application/json")


def make(world: Any = None, **fields: Any) -> LoreEntry:
    values = {"content": "The chapel bell has not rung.", "keys": ["bell"], **fields}
    return services.lore_entry_create(actor=None, world=world, **values)


def test_create_answers_every_field_of_the_contract(writer, coast) -> None:  # type: ignore[no-untyped-def]
    response = post(writer, BELL)
    assert response.status_code == 201
    data = response.json()
    assert list(data) == [
        "id",
        "world",
        "title",
        "content",
        "keys",
        "match",
        "priority",
        "group",
        "constant",
        "recursive",
        "active",
        "metadata",
        "token_count",
        "revision",
        "created_at",
        "updated_at",
    ]
    assert data["match"] == {"whole_words": True, "case_sensitive": False}
    assert (data["world"], data["priority"], data["group"], data["revision"]) == (
        "coast",
        0,
        None,
        1,
    )
    assert (data["constant"], data["recursive"], data["active"]) == (False, True, True)
    assert data["token_count"] == tokenizer().count(BELL["content"])
    assert response["ETag"] == f'"loreentry-{data["id"]}-r1"'
    assert writer.get(f"/api/v1/lore/{data['id']}/")["ETag"] == response["ETag"]


def test_an_entry_of_every_world_has_world_null_and_text_is_stored_with_newlines(writer) -> None:  # type: ignore[no-untyped-def]
    body = {**BELL, "world": None, "content": "One.\r\nTwo.\rThree.", "group": "bells"}
    data = post(writer, body).json()
    assert (data["world"], data["group"]) == (None, "bells")
    assert data["content"] == "One.\nTwo.\nThree."
    assert LoreEntry.objects.get().content == "One.\nTwo.\nThree."


def test_match_options_are_taken_and_given_back(writer, coast) -> None:  # type: ignore[no-untyped-def]
    data = post(writer, {**BELL, "match": {"whole_words": False, "case_sensitive": True}}).json()
    assert data["match"] == {"whole_words": False, "case_sensitive": True}
    patched = writer.patch(
        f"/api/v1/lore/{data['id']}/",
        {"match": {"case_sensitive": False}},
        format="json",
        HTTP_IF_MATCH=f'"loreentry-{data["id"]}-r1"',
    )
    assert patched.json()["match"] == {"whole_words": False, "case_sensitive": False}


@pytest.mark.parametrize(
    ("change", "attr", "words"),
    [
        ({"keys": []}, "keys", "at least one key"),
        ({"keys": ["bell", " "]}, "keys", "Key 2 is blank"),
        ({"keys": ["x" * (MAX_LORE_KEY_LENGTH + 1)]}, "keys", str(MAX_LORE_KEY_LENGTH)),
        ({"keys": [f"k{i}" for i in range(MAX_LORE_KEYS + 1)]}, "keys", str(MAX_LORE_KEYS)),
        ({"keys": ["bell\ttower"]}, "keys", "control character"),
        ({"keys": "bell"}, "keys", "list"),
        ({"keys": ["bell\ud800"]}, "keys", "Surrogate"),
        ({"content": "Rust \x00 stains."}, "content", "Null characters"),
        ({"content": "Rust \udfff stains."}, "content", "Surrogate"),
        ({"content": "x" * 200_001}, "content", "200000"),
        ({"content": "   "}, "content", "needs text"),
        ({"title": "t" * 201}, "title", "200"),
        ({"group": "   "}, "group", "group name"),
        ({"priority": 2**31}, "priority", "less than or equal"),
        ({"priority": 1.5}, "priority", "integer"),
        ({"priority": True}, "priority", "integer"),
        ({"match": {"whole_words": "yes"}}, "match.whole_words", "true or false"),
        ({"match": {"fuzzy": True}}, "match.fuzzy", "Unknown field"),
        ({"world": "nowhere"}, "world", "No world"),
        ({"world": "bad\x00slug"}, "world", ""),
        ({"colour": "red"}, "colour", "Unknown field"),
        ({"metadata": {"n": [1, {"deep": "\x00"}]}}, "metadata", "NUL"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(writer, coast, change, attr, words) -> None:  # type: ignore[no-untyped-def]
    response = post(writer, {**BELL, **change})
    assert response.status_code == 400, response.content
    # The field, or the item of it at fault (keys.0).
    found = {name: detail for name, detail in errors(response).items() if name}
    named = [d for name, d in found.items() if name == attr or name.startswith(f"{attr}.")]
    assert named and any(words in detail for detail in named), found
    assert not LoreEntry.objects.exists()


@pytest.mark.parametrize("attr", ["title", "content", "group"])
def test_a_lone_surrogate_is_one_error_on_its_field(writer, coast, attr) -> None:  # type: ignore[no-untyped-def]
    response = post(writer, {**BELL, attr: "Rust \udfff stains."})
    assert response.status_code == 400, response.content
    assert [error["attr"] for error in response.json()["errors"]] == [attr]


@pytest.mark.parametrize(
    "body",
    [
        '{"world": "coast", "content": "x", "keys": ["bell"], "priority": NaN}',
        '{"world": "coast", "content": "x", "keys": ["bell"], "priority": 1e400}',
        '{"world": "coast", "content": "x", "keys": ["bell"], "metadata": '
        + "[" * 5000
        + "]" * 5000
        + "}",
        '{"world": "coast", "content": "x", "keys": ["bell"], "metadata": {"a\\ud800": 1}}',
    ],
)
def test_unreadable_json_is_a_400_never_a_500(writer, coast, body) -> None:  # type: ignore[no-untyped-def]
    response = writer.post("/api/v1/lore/", body, content_type="application/json")
    assert response.status_code == 400
    assert not LoreEntry.objects.exists()


def test_a_constant_entry_needs_no_key(writer, coast) -> None:  # type: ignore[no-untyped-def]
    response = post(writer, {**BELL, "keys": [], "constant": True})
    assert response.status_code == 201
    assert response.json()["keys"] == []


def test_list_filters_by_world_group_active_and_search_and_is_paginated(reader, coast) -> None:  # type: ignore[no-untyped-def]
    other = WorldFactory(slug="marsh")
    bell = make(coast, title="Bell", group="bells", priority=5)
    make(coast, title="Gate", content="The gate is shut.", keys=["gate"], active=False)
    make(other, title="Reed", content="Reeds whisper.", keys=["reed"])
    everywhere = make(None, title="Moon", content="The moon is red.", keys=["Moon"])

    def ids(query: str) -> list[int]:
        response = reader.get(f"/api/v1/lore/{query}")
        assert response.status_code == 200, response.content
        return [row["id"] for row in response.json()["results"]]

    assert len(ids("")) == 4
    assert ids("?world=coast&active=true") == [bell.pk]
    assert ids("?group=bells") == [bell.pk]
    assert ids("?search=REED") == [LoreEntry.objects.get(title="Reed").pk]
    assert ids("?search=moon") == [everywhere.pk]
    assert ids("?every_world=true") == [everywhere.pk]
    page = reader.get("/api/v1/lore/?page_size=1&page=2").json()
    assert set(page) == {"count", "next", "previous", "results"}
    assert page["count"] == 4 and len(page["results"]) == 1
    assert reader.get("/api/v1/lore/?world=nowhere").json()["results"] == []
    for bad in ("?active=yes", "?page_size=0", "?world=" + "x" * 65):
        assert reader.get(f"/api/v1/lore/{bad}").status_code == 400


def test_the_list_costs_the_same_queries_whatever_its_length(reader, coast) -> None:  # type: ignore[no-untyped-def]
    make(coast)
    reader.get("/api/v1/lore/")  # the key is looked up once, then remembered
    with CaptureQueriesContext(connection) as one:
        assert reader.get("/api/v1/lore/").status_code == 200
    for index in range(20):
        make(coast if index % 2 else None, title=f"Entry {index}")
    with CaptureQueriesContext(connection) as many:
        assert reader.get("/api/v1/lore/").status_code == 200
    assert len(many) == len(one), [q["sql"] for q in many.captured_queries]


def test_put_patch_and_delete_need_the_current_etag(writer, coast) -> None:  # type: ignore[no-untyped-def]
    entry = make(coast)
    url = f"/api/v1/lore/{entry.pk}/"
    assert writer.patch(url, {"priority": 3}, format="json").status_code == 428
    stale = f'"loreentry-{entry.pk}-r9"'
    assert writer.patch(url, {"priority": 3}, format="json", HTTP_IF_MATCH=stale).status_code == 412
    current = writer.get(url)["ETag"]
    patched = writer.patch(url, {"priority": 3}, format="json", HTTP_IF_MATCH=current)
    assert patched.status_code == 200
    assert (patched.json()["priority"], patched.json()["revision"]) == (3, 2)
    assert patched["ETag"] == f'"loreentry-{entry.pk}-r2"'
    # The old ETag is stale now: someone else's save is never overwritten.
    assert writer.put(url, BELL, format="json", HTTP_IF_MATCH=current).status_code == 412
    put = writer.put(url, {**BELL, "keys": ["gong"]}, format="json", HTTP_IF_MATCH=patched["ETag"])
    assert put.status_code == 200
    # PUT is the whole entry: what it leaves out takes its default.
    assert (put.json()["keys"], put.json()["priority"]) == (["gong"], 0)
    assert writer.delete(url, HTTP_IF_MATCH=patched["ETag"]).status_code == 412
    assert writer.delete(url, HTTP_IF_MATCH=put["ETag"]).status_code == 204
    assert writer.get(url).status_code == 404


def test_history_lists_every_revision_and_restore_makes_a_new_one(writer, coast) -> None:  # type: ignore[no-untyped-def]
    entry = make(coast, title="Bell")
    services.lore_entry_update(actor=None, entry=entry, title="Great bell", keys=["gong"])
    history = writer.get(f"/api/v1/lore/{entry.pk}/history/")
    assert history.status_code == 200
    rows = history.json()["results"]
    assert [(row["revision"], row["change"], row["title"]) for row in rows] == [
        (2, "changed", "Great bell"),
        (1, "created", "Bell"),
    ]
    assert list(rows[0])[:5] == ["revision", "change", "changed_at", "changed_by", "changed_via"]
    assert rows[1]["keys"] == ["bell"] and rows[1]["world"] == "coast"
    restored = post(writer, {"revision": 1}, f"/api/v1/lore/{entry.pk}/restore/")
    assert restored.status_code == 200
    assert (restored.json()["title"], restored.json()["keys"], restored.json()["revision"]) == (
        "Bell",
        ["bell"],
        3,
    )
    assert post(writer, {"revision": 7}, f"/api/v1/lore/{entry.pk}/restore/").status_code == 400
    stale = writer.post(
        f"/api/v1/lore/{entry.pk}/restore/",
        {"revision": 1},
        format="json",
        HTTP_IF_MATCH=f'"loreentry-{entry.pk}-r2"',
    )
    assert stale.status_code == 412


def test_the_test_endpoint_says_which_entries_fire_and_why(reader, coast) -> None:  # type: ignore[no-untyped-def]
    bell = make(coast, title="Bell", content="The bell fell in the flood.", keys=["bell"])
    flood = make(None, title="Flood", content="The flood drowned the lower city.", keys=["flood"])
    make(WorldFactory(slug="marsh"), title="Reed", keys=["bell"])
    response = post(reader, {"world": "coast", "text": "A bell rings."}, "/api/v1/lore/test")
    assert response.status_code == 200
    data = response.json()
    assert data["world"] == "coast"
    assert [(row["id"], row["trigger"]["source"], row["by"]) for row in data["entries"]] == [
        (bell.pk, "text", None),
        (flood.pk, "lore", bell.pk),
    ]
    first = data["entries"][0]
    assert set(first) == {"id", "title", "status", "trigger", "by", "tokens", "reason", "matches"}
    assert first["trigger"] == {
        "key": "bell",
        "source": "text",
        "message": None,
        "start": 2,
        "end": 6,
    }
    assert first["reason"] == "triggered: key 'bell' in the text"
    assert first["matches"] == [{"key": "bell", "start": 2, "end": 6}]
    assert first["tokens"] == tokenizer().count("The bell fell in the flood.")


def test_the_test_endpoint_refuses_bad_input_naming_the_field(reader, coast) -> None:  # type: ignore[no-untyped-def]
    for body, attr in (
        ({"world": "nowhere", "text": "bell"}, "world"),
        ({"world": "coast", "text": "x" * (MAX_LORE_TEST_TEXT + 1)}, "text"),
        ({"world": "coast", "text": "bell\ud800"}, "text"),
        ({"world": "coast"}, "text"),
        ({"world": "coast", "text": "bell", "depth": 3}, "depth"),
    ):
        response = post(reader, body, "/api/v1/lore/test")
        assert response.status_code == 400
        assert attr in errors(response)


def test_the_test_sees_a_change_once_committed(  # type: ignore[no-untyped-def]
    reader, coast, django_capture_on_commit_callbacks
) -> None:
    body = {"world": "coast", "text": "The gate."}
    assert post(reader, body, "/api/v1/lore/test").json()["entries"] == []
    with django_capture_on_commit_callbacks(execute=True):
        gate = make(coast, keys=["gate"])
    assert [row["id"] for row in post(reader, body, "/api/v1/lore/test").json()["entries"]] == [
        gate.pk
    ]


@pytest.mark.parametrize(
    ("who", "allowed"),
    [("read key", False), ("viewer", False), ("write key", True), ("author", True)],
)
def test_writes_need_a_write_key_or_an_author(who, allowed, read_key, write_key, coast) -> None:  # type: ignore[no-untyped-def]
    from tests.promptadmin.api.conftest import key_client

    client = {
        "read key": lambda: key_client(read_key),
        "write key": lambda: key_client(write_key),
        "viewer": lambda: session_client(person(None)),
        "author": lambda: session_client(person("author")),
    }[who]()
    assert client.get("/api/v1/lore/").status_code == 200
    assert post(client, {"world": "coast", "text": "bell"}, "/api/v1/lore/test").status_code == 200
    response = post(client, BELL)
    assert response.status_code == (201 if allowed else 403)
    assert LoreEntry.objects.exists() is allowed


def test_anonymous_callers_are_refused(client, coast) -> None:  # type: ignore[no-untyped-def]
    assert client.get("/api/v1/lore/").status_code in (401, 403)


def test_a_world_with_lore_is_not_deleted_from_under_it(writer, coast) -> None:  # type: ignore[no-untyped-def]
    make(coast)
    response = writer.delete("/api/v1/worlds/coast/", HTTP_IF_MATCH=f'"world-{coast.pk}-r1"')
    assert response.status_code == 409
    assert "lore entries" in response.json()["errors"][0]["detail"]


def test_assembly_reports_the_lore_of_the_entrys_world(reader, demo) -> None:  # type: ignore[no-untyped-def]
    from promptadmin.content.models import Entry

    entry = Entry.objects.select_related("world").get(slug="drowned-bell")
    bell = make(entry.world, title="The bell", content="It was cast from a sunken ship.")
    make(WorldFactory(slug="elsewhere"), title="Elsewhere", keys=["bell"])
    turn = {
        "entry": "drowned-bell",
        "release": "working",
        "state": {"input": "Who rang the bell?"},
    }
    data = post(reader, turn, "/api/v1/assemble").json()
    assert [row["id"] for row in data["meta"]["lore"]] == [bell.pk]
    report = data["meta"]["lore"][0]
    assert set(report) == {"id", "title", "status", "trigger", "by", "tokens", "reason"}
    assert report["status"] == "included"
    assert report["trigger"]["source"] == "input" and report["trigger"]["key"] == "bell"
    assert "It was cast from a sunken ship." in data["prompt"]
    assert "lore" in data["meta"]["order"]
    preview = post(reader, turn, "/api/v1/preview").json()
    assert [row["id"] for row in preview["meta"]["lore"]] == [bell.pk]


def test_the_requests_lore_options_turn_lore_off_or_bound_its_room(reader, demo) -> None:  # type: ignore[no-untyped-def]
    from promptadmin.content.models import Entry

    entry = Entry.objects.select_related("world").get(slug="drowned-bell")
    make(entry.world, title="The bell", content="It was cast from a sunken ship.")
    turn = {"entry": "drowned-bell", "release": "working", "state": {"input": "The bell?"}}
    off = post(reader, {**turn, "lore": {"enabled": False}}, "/api/v1/assemble").json()
    assert off["meta"]["lore"] == [] and "sunken ship" not in off["prompt"]
    tight = post(reader, {**turn, "lore": {"budget": 1}}, "/api/v1/preview").json()
    assert [row["status"] for row in tight["meta"]["lore"]] == ["left_out"]
    refused = post(reader, {**turn, "lore": {"scan_depth": 101, "x": 1}}, "/api/v1/assemble")
    assert refused.status_code == 400
    assert set(errors(refused)) == {"lore.scan_depth", "lore.x"}
