"""Segments: CRUD by id, filters, token counts and revisions, history, restore, concurrency."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from django.db import connection
from django.db.models import Q

from promptadmin.content.kinds import KINDS
from promptadmin.content.models import Segment
from promptadmin.content.services import segments as segment_services
from promptadmin.core.tokens import tokenizer
from tests.factories import NPCFactory, WorldFactory, make_segment
from tests.promptadmin.api.conftest import codes, errors, key_client, person

pytestmark = pytest.mark.django_db


def test_create_returns_token_count_revision_and_etag(writer) -> None:  # type: ignore[no-untyped-def]
    WorldFactory(slug="coast")
    body = {"scope": "world", "ref": "coast", "content": "Rust stains everything.", "sort_order": 5}
    response = writer.post("/api/v1/segments/", body, format="json")
    assert response.status_code == 201
    data = response.json()
    assert data["token_count"] == tokenizer().count("Rust stains everything.")
    assert (data["revision"], data["ref"], data["active"], data["tier"]) == (1, "coast", True, 0)
    assert response["ETag"] == f'"segment-{data["id"]}-r1"'
    assert writer.get(f"/api/v1/segments/{data['id']}/")["ETag"] == response["ETag"]


def test_core_segments_belong_to_nothing(writer) -> None:  # type: ignore[no-untyped-def]
    ok = writer.post("/api/v1/segments/", {"scope": "core", "content": "Narrate."}, format="json")
    assert ok.status_code == 201 and ok.json()["ref"] is None
    WorldFactory(slug="coast")
    bad = writer.post(
        "/api/v1/segments/", {"scope": "core", "ref": "coast", "content": "x"}, format="json"
    )
    assert "ref" in errors(bad)


def test_a_ref_of_the_wrong_kind_or_unknown_is_named(writer) -> None:  # type: ignore[no-untyped-def]
    NPCFactory(slug="cobb")
    for body in (
        {"scope": "world", "ref": "cobb", "content": "x"},
        {"scope": "world", "content": "x"},
    ):
        response = writer.post("/api/v1/segments/", body, format="json")
        assert response.status_code == 400
        assert "world" in errors(response)["ref"]


@pytest.mark.parametrize(
    ("change", "attr", "words"),
    [
        ({"content": "Rust \ud800 stains."}, "content", "Surrogate"),
        ({"metadata": {"title": "Rust \ud800"}}, "metadata", "surrogate"),
        ({"metadata": {"tags\udfff": ["a"]}}, "metadata", "surrogate"),
        ({"metadata": {"tags": ["a\x00"]}}, "metadata", "NUL"),
    ],
)
def test_text_that_cannot_be_stored_is_a_400_naming_the_field(  # type: ignore[no-untyped-def]
    writer, change, attr, words
) -> None:
    body = json.dumps({"scope": "core", "content": "Rust.", **change})
    response = writer.post("/api/v1/segments/", body, content_type="application/json")
    assert response.status_code == 400
    assert words in errors(response)[attr]
    assert not Segment.objects.exists()


@pytest.mark.parametrize("scope", ["game_state", "player", "rng", "input"])
def test_deprecated_scopes_cannot_be_created(writer, scope: str) -> None:  # type: ignore[no-untyped-def]
    response = writer.post("/api/v1/segments/", {"scope": scope, "content": "x"}, format="json")
    assert response.status_code == 400
    detail = errors(response)["scope"]
    assert f"'{scope}' is deprecated" in detail
    assert "core, ruleset, world, entry, entry_start, npc" in detail


def test_deprecated_segments_cannot_be_activated(writer) -> None:  # type: ignore[no-untyped-def]
    legacy = segment_services.segment_import_legacy(actor=None, scope="rng", content="d20")
    response = writer.patch(
        f"/api/v1/segments/{legacy.pk}/",
        {"active": True},
        format="json",
        HTTP_IF_MATCH=f'"segment-{legacy.pk}-r1"',
    )
    assert response.status_code == 400
    assert "'rng' is deprecated" in errors(response)["active"]
    assert "core, ruleset, world, entry, entry_start, npc" in errors(response)["active"]


def test_update_bumps_revision_and_recounts_tokens(writer) -> None:  # type: ignore[no-untyped-def]
    segment = make_segment(content="One.")
    url = f"/api/v1/segments/{segment.pk}/"
    response = writer.patch(
        url, {"content": "One. Two. Three."}, format="json", HTTP_IF_MATCH=writer.get(url)["ETag"]
    )
    assert response.status_code == 200
    assert response.json()["revision"] == 2
    assert response.json()["token_count"] == tokenizer().count("One. Two. Three.")
    assert response["ETag"] == f'"segment-{segment.pk}-r2"'


def test_put_replaces_and_scope_is_fixed(writer) -> None:  # type: ignore[no-untyped-def]
    segment = make_segment(content="One.", metadata={"title": "t"}, sort_order=3)
    url = f"/api/v1/segments/{segment.pk}/"
    etag = writer.get(url)["ETag"]
    moved = writer.put(url, {"scope": "world", "content": "x"}, format="json", HTTP_IF_MATCH=etag)
    assert moved.status_code == 400 and "scope" in errors(moved)
    replaced = writer.put(
        url, {"scope": "core", "content": "Two."}, format="json", HTTP_IF_MATCH=etag
    )
    assert replaced.status_code == 200
    assert (replaced.json()["metadata"], replaced.json()["sort_order"]) == ({}, 0)


def test_if_match_is_required_and_must_be_current(writer) -> None:  # type: ignore[no-untyped-def]
    segment = make_segment(content="One.")
    other = make_segment(content="Other.")
    url = f"/api/v1/segments/{segment.pk}/"
    current = f'"segment-{segment.pk}-r1"'
    assert writer.patch(url, {"content": "x"}, format="json").status_code == 428
    assert writer.delete(url).status_code == 428
    for wrong in (f'"segment-{other.pk}-r1"', f"W/{current}", '"junk"'):
        response = writer.patch(url, {"content": "x"}, format="json", HTTP_IF_MATCH=wrong)
        assert response.status_code == 412, wrong
    assert (
        writer.patch(url, {"content": "Two."}, format="json", HTTP_IF_MATCH=current).status_code
        == 200
    )
    stale = writer.delete(url, HTTP_IF_MATCH=current)
    assert stale.status_code == 412 and codes(stale) == ["precondition_failed"]
    assert "the current revision is 2" in errors(stale)[None]
    assert writer.delete(url, HTTP_IF_MATCH=f'"segment-{segment.pk}-r2"').status_code == 204
    assert not Segment.objects.filter(pk=segment.pk).exists()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_of_two_concurrent_writers_with_the_same_etag_only_one_succeeds(  # type: ignore[no-untyped-def]
    write_key, monkeypatch
) -> None:
    segment = make_segment(content="Original.")
    etag = f'"segment-{segment.pk}-r1"'
    first_holds_lock = threading.Event()
    validate = segment_services.validate_segment

    def slow_validate(current: Segment, exclude: Any = None) -> None:
        # The first writer has locked the row and checked its revision: let the second
        # writer read the segment (revision 1) and reach the lock before this one commits.
        if current.content == "First.":
            first_holds_lock.set()
            time.sleep(0.5)
        validate(current, exclude)

    monkeypatch.setattr(segment_services, "validate_segment", slow_validate)
    results: dict[str, int] = {}

    def write(content: str) -> None:
        try:
            response = key_client(write_key).patch(
                f"/api/v1/segments/{segment.pk}/",
                {"content": content},
                format="json",
                HTTP_IF_MATCH=etag,
            )
            results[content] = response.status_code
        finally:
            connection.close()

    first = threading.Thread(target=write, args=("First.",))
    first.start()
    assert first_holds_lock.wait(10)
    second = threading.Thread(target=write, args=("Second.",))
    second.start()
    first.join(10)
    second.join(10)
    assert results == {"First.": 200, "Second.": 412}
    assert Segment.objects.get(pk=segment.pk).content == "First."


def test_filters_search_and_pagination(reader, demo) -> None:  # type: ignore[no-untyped-def]
    def ids(query: str) -> set[int]:
        response = reader.get(f"/api/v1/segments/?page_size=200&{query}")
        assert response.status_code == 200, response.json()
        return {row["id"] for row in response.json()["results"]}

    world = set(Segment.objects.filter(world__slug="iron-coast").values_list("id", flat=True))
    assert ids("world=iron-coast") == world
    assert ids("scope=npc&npc=old-cobb") == set(
        Segment.objects.filter(npc__slug="old-cobb").values_list("id", flat=True)
    )
    assert ids("entry=drowned-bell") == set(
        Segment.objects.filter(entry__slug="drowned-bell").values_list("id", flat=True)
    )
    assert ids("active=false") == set(
        Segment.objects.filter(active=False).values_list("id", flat=True)
    )
    # The title is searched too; every word must begin a word (the full-text index).
    found = ids("search=TIDE-IRON")
    assert found and found >= set(
        Segment.objects.filter(
            Q(content__icontains="tide-iron") | Q(title__icontains="tide-iron")
        ).values_list("id", flat=True)
    )
    page = reader.get("/api/v1/segments/?page_size=5&page=2").json()
    assert page["count"] == Segment.objects.count() and len(page["results"]) == 5
    assert reader.get("/api/v1/segments/?active=maybe").status_code == 400
    assert reader.get("/api/v1/segments/?page_size=0").status_code == 400
    assert reader.get("/api/v1/segments/?page=999").status_code == 404
    # Found by schemathesis: an empty page was silently the first.
    for page in ("", "0", "two", "1.5"):
        response = reader.get(f"/api/v1/segments/?page={page}")
        assert response.status_code == 400, page
        assert response.json()["errors"][0]["attr"] == "page"


def test_list_takes_a_constant_number_of_queries(reader, django_assert_num_queries) -> None:  # type: ignore[no-untyped-def]
    def list_segments() -> int:
        with django_assert_num_queries(2) as captured:  # count, page (the key is kept)
            assert reader.get("/api/v1/segments/?page_size=200").status_code == 200
        return len(captured)

    assert reader.get("/api/v1/me").status_code == 200  # reads the key
    world, npc = WorldFactory(), NPCFactory()
    make_segment(scope="world", ref=world)
    few = list_segments()
    for i in range(20):
        make_segment(scope="world", ref=WorldFactory())
        make_segment(scope="npc", ref=npc, tier=i % 3)
    assert list_segments() == few


def test_history_lists_every_revision_newest_first(writer) -> None:  # type: ignore[no-untyped-def]
    segment = make_segment(content="One.")
    segment_services.segment_update(actor=None, segment=segment, content="Two.")
    body = writer.get(f"/api/v1/segments/{segment.pk}/history/").json()
    rows = [(r["revision"], r["change"], r["content"]) for r in body["results"]]
    assert rows == [(2, "changed", "Two."), (1, "created", "One.")]


def test_history_names_the_person_or_the_api_key_behind_each_change(writer, write_key) -> None:  # type: ignore[no-untyped-def]
    author = person("author")
    segment = make_segment(content="One.")
    segment_services.segment_update(actor=author, segment=segment, content="Two.")
    etag = writer.get(f"/api/v1/segments/{segment.pk}/")["ETag"]
    changed = writer.patch(
        f"/api/v1/segments/{segment.pk}/", {"content": "Three."}, format="json", HTTP_IF_MATCH=etag
    )
    assert changed.status_code == 200
    body = writer.get(f"/api/v1/segments/{segment.pk}/history/").json()
    rows = [(r["revision"], r["changed_by"], r["changed_via"]) for r in body["results"]]
    prefix = write_key.partition(".")[0]
    assert rows == [
        (3, None, f"API key 'content-pipeline' ({prefix})"),
        (2, author.username, None),
        (1, None, None),
    ]


def test_restore_brings_back_a_revision_as_a_new_one(writer) -> None:  # type: ignore[no-untyped-def]
    segment = make_segment(content="One.", sort_order=1)
    segment_services.segment_update(actor=None, segment=segment, content="Two.", sort_order=2)
    url = f"/api/v1/segments/{segment.pk}/restore/"
    response = writer.post(url, {"revision": 1}, format="json")
    assert response.status_code == 200
    assert (response.json()["content"], response.json()["sort_order"]) == ("One.", 1)
    assert response.json()["revision"] == 3
    history = writer.get(f"/api/v1/segments/{segment.pk}/history/").json()["results"]
    assert [r["revision"] for r in history] == [3, 2, 1]
    missing = writer.post(url, {"revision": 9}, format="json")
    assert missing.status_code == 400 and "revision" in errors(missing)
    stale = writer.post(
        url, {"revision": 2}, format="json", HTTP_IF_MATCH=f'"segment-{segment.pk}-r2"'
    )
    assert stale.status_code == 412


def test_a_count_made_with_another_encoding_is_not_served(reader) -> None:  # type: ignore[no-untyped-def]
    segment = make_segment(content="Counted long ago.")
    Segment.objects.filter(pk=segment.pk).update(token_count=999, token_encoding="p50k_base")
    body = reader.get(f"/api/v1/segments/{segment.pk}/").json()
    assert body["token_count"] == tokenizer().count("Counted long ago.")


# Deprecated rows are read-only (hardening: these answered 500 with a KeyError)

DEPRECATED = ["game_state", "player", "rng", "input"]


def _legacy(scope: str) -> Segment:
    return segment_services.segment_import_legacy(actor=None, scope=scope, content="Old text.")


def _assert_read_only(response: Any, legacy: Segment) -> None:
    assert response.status_code == 400
    assert codes(response) == ["deprecated_read_only"]
    detail = errors(response)["scope"]
    assert f"'{legacy.scope}'" in detail and "read-only" in detail
    unchanged = Segment.objects.get(pk=legacy.pk)
    assert (unchanged.content, unchanged.revision, unchanged.active) == ("Old text.", 1, False)


@pytest.mark.parametrize("scope", DEPRECATED)
def test_putting_a_deprecated_segment_is_refused_as_read_only(writer, scope: str) -> None:  # type: ignore[no-untyped-def]
    legacy = _legacy(scope)
    WorldFactory(slug="coast")
    response = writer.put(
        f"/api/v1/segments/{legacy.pk}/",
        {"scope": scope, "ref": "coast", "content": "New text.", "active": False},
        format="json",
        HTTP_IF_MATCH=f'"segment-{legacy.pk}-r1"',
    )
    _assert_read_only(response, legacy)


@pytest.mark.parametrize("scope", DEPRECATED)
@pytest.mark.parametrize("body", [{"ref": "coast"}, {"ref": None}, {"content": "New text."}])
def test_patching_a_deprecated_segment_is_refused_as_read_only(  # type: ignore[no-untyped-def]
    writer, scope: str, body: dict[str, Any]
) -> None:
    legacy = _legacy(scope)
    WorldFactory(slug="coast")
    response = writer.patch(
        f"/api/v1/segments/{legacy.pk}/",
        body,
        format="json",
        HTTP_IF_MATCH=f'"segment-{legacy.pk}-r1"',
    )
    _assert_read_only(response, legacy)


@pytest.mark.parametrize("scope", DEPRECATED)
def test_restoring_a_deprecated_segment_is_refused_as_read_only(writer, scope: str) -> None:  # type: ignore[no-untyped-def]
    legacy = _legacy(scope)
    response = writer.post(f"/api/v1/segments/{legacy.pk}/restore/", {"revision": 1}, format="json")
    _assert_read_only(response, legacy)
    assert legacy.history.count() == 1


def test_deleting_a_deprecated_segment_is_refused(writer) -> None:  # type: ignore[no-untyped-def]
    legacy = _legacy("player")
    response = writer.delete(
        f"/api/v1/segments/{legacy.pk}/", HTTP_IF_MATCH=f'"segment-{legacy.pk}-r1"'
    )
    _assert_read_only(response, legacy)


def test_search_uses_the_full_text_index(reader, django_assert_num_queries) -> None:  # type: ignore[no-untyped-def]
    """``?search=`` is the studio's search: words matched as prefixes through the GIN
    index (not a scan of every segment's text), the owner's name, the list's order."""
    world = WorldFactory(name="Saltmarsh", slug="saltmarsh")
    lantern = make_segment(scope="world", ref=world, title="Lanterns", content="They swore.")
    oath = make_segment(scope="world", ref=world, content="The lantern oath binds.")
    make_segment(scope="world", ref=WorldFactory(), content="A distant tern cries.")

    def ids(query: str) -> list[int]:
        response = reader.get(f"/api/v1/segments/?search={query}")
        assert response.status_code == 200, response.json()
        return [row["id"] for row in response.json()["results"]]

    assert ids("LANT") == [lantern.pk, oath.pk]  # a prefix, in the title or the text
    assert ids("lantern%20oa") == [oath.pk]  # every word
    assert ids("tern") == [ids("distant")[0]]  # a word's beginning, not its middle
    assert ids("saltm") == [lantern.pk, oath.pk]  # the owner's name
    with django_assert_num_queries(len(KINDS) + 2) as captured:  # owners by kind, count, page
        ids("lantern")
    page = captured.captured_queries[-1]["sql"]
    assert "@@" in page and "to_tsquery" in page, page
