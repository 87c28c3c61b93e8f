"""The releases API: serving by release, labels and their history, scenarios, compare."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.cache import cache

from promptadmin.api.serializers import releases as s
from promptadmin.content.models import Segment
from promptadmin.content.services import segments
from promptadmin.content.services.api_keys import api_key_create
from promptadmin.releases import serving
from promptadmin.releases.bundles import shard_of
from promptadmin.releases.models import Release, ReleaseLabel, ReleaseLabelMove, Scenario
from tests.factories import UserFactory
from tests.promptadmin.api.conftest import (
    cache_calls,
    codes,
    errors,
    key_client,
    person,
    session_client,
)

pytestmark = pytest.mark.django_db

BODY: dict[str, Any] = {
    "entry": "drowned-bell",
    "first_turn": True,
    "npcs": [{"npc": "marta-vell", "tier": 2}],
    "state": {"input": "I ring the bell."},
}


@pytest.fixture(autouse=True)
def fresh_process() -> None:
    serving.forget()


@pytest.fixture
def admin_client(db: Any) -> Any:
    return key_client(api_key_create(actor=None, name="ops", scope="admin")[1])


def edit_tone(content: str, capture: Any) -> None:
    segment = Segment.objects.get(import_key="w-iron-tone")
    with capture(execute=True):
        segments.segment_update(actor=None, segment=segment, content=content)


def publish(client: Any, capture: Any, **body: Any) -> Any:
    with capture(execute=True):
        return client.post("/api/v1/releases/", body, format="json")


def put_label(client: Any, label: str, current: str | None, **body: Any) -> Any:
    etag = f'"label-{label}-{current or "none"}"'
    return client.put(f"/api/v1/release-labels/{label}", body, format="json", HTTP_IF_MATCH=etag)


def remove_label(client: Any, label: str, current: str, **body: Any) -> Any:
    etag = f'"label-{label}-{current}"'
    return client.delete(f"/api/v1/release-labels/{label}", body, format="json", HTTP_IF_MATCH=etag)


def assemble(client: Any, **extra: Any) -> Any:
    response = client.post("/api/v1/assemble", {**BODY, **extra}, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def test_create_a_release_answers_the_documented_fields(  # type: ignore[no-untyped-def]
    writer, demo
) -> None:
    response = writer.post(
        "/api/v1/releases/", {"name": "r-2026-11-22", "notes": "first"}, format="json"
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert set(body) == {
        "name",
        "notes",
        "labels",
        "created",
        "created_by",
        "content_hash",
        "segments",
        "aliases",
    }
    assert body["name"] == "r-2026-11-22" and body["labels"] == [] and body["aliases"] == []
    assert body["segments"] == Segment.objects.filter(active=True).count()
    assert body["created_by"].startswith("API key 'content-pipeline'")
    assert writer.get("/api/v1/releases/r-2026-11-22/").json() == body
    assert [r["name"] for r in writer.get("/api/v1/releases/").json()] == ["r-2026-11-22"]


def test_without_release_the_working_copy_is_served_until_production_exists(  # type: ignore[no-untyped-def]
    reader, admin_client, demo, django_capture_on_commit_callbacks
) -> None:
    meta = assemble(reader)["meta"]
    assert meta["release"] == {"name": "working", "label": None}
    publish(admin_client, django_capture_on_commit_callbacks, name="r-one", labels=["production"])
    edit_tone("Fog, always fog.", django_capture_on_commit_callbacks)

    served = assemble(reader)
    assert served["meta"]["release"] == {"name": "r-one", "label": "production"}
    assert "Fog, always fog." not in served["prompt"]
    working = assemble(reader, release="working")
    assert working["meta"]["release"] == {"name": "working", "label": None}
    assert "Fog, always fog." in working["prompt"]
    by_name = assemble(reader, release="r-one")
    assert by_name["meta"]["release"] == {"name": "r-one", "label": None}
    assert by_name["prompt"] == served["prompt"]
    by_label = assemble(reader, release="production")
    assert by_label["meta"]["release"] == {"name": "r-one", "label": "production"}


def test_a_label_move_is_seen_by_the_very_next_request(  # type: ignore[no-untyped-def]
    reader, admin_client, demo, django_capture_on_commit_callbacks
) -> None:
    publish(admin_client, django_capture_on_commit_callbacks, name="r-one", labels=["production"])
    assert assemble(reader)["meta"]["release"]["name"] == "r-one"  # the label is now cached
    edit_tone("Fog, always fog.", django_capture_on_commit_callbacks)
    publish(admin_client, django_capture_on_commit_callbacks, name="r-two", labels=["production"])
    served = assemble(reader)
    assert served["meta"]["release"]["name"] == "r-two"
    assert "Fog, always fog." in served["prompt"]

    with django_capture_on_commit_callbacks(execute=True):
        response = put_label(
            admin_client, "production", "r-two", release="r-one", note="fog broke the intro"
        )
    assert response.status_code == 200, response.json()
    served = assemble(reader)
    assert served["meta"]["release"]["name"] == "r-one"
    assert "Fog, always fog." not in served["prompt"]


def test_a_release_named_explicitly_costs_no_query_once_loaded(  # type: ignore[no-untyped-def]
    reader, writer, demo, django_assert_num_queries
) -> None:
    writer.post("/api/v1/releases/", {"name": "r-one"}, format="json")
    assemble(reader, release="r-one")
    with django_assert_num_queries(0):  # the API key is kept in memory too
        assemble(reader, release="r-one")


def test_a_release_served_makes_one_cache_round_trip_whatever_it_reads(  # type: ignore[no-untyped-def]
    reader, admin_client, demo, monkeypatch, django_capture_on_commit_callbacks
) -> None:
    publish(admin_client, django_capture_on_commit_callbacks, name="r-one", labels=["staging"])
    for release in ("r-one", "working", "staging"):
        assemble(reader, release=release)
    calls = cache_calls(monkeypatch)
    # The keys' generation (checking the key); a named release needs nothing else.
    assemble(reader, release="r-one")
    assert calls == ["get_many"]
    # The working copy and a label's release read the content generation and the labels
    # as well, in that same round trip.
    for release in ("working", "staging"):
        calls.clear()
        assemble(reader, release=release)
        assert calls == ["get_many"]


@pytest.mark.postgres
def test_after_a_publish_the_first_request_by_label_reads_the_new_index_alone(  # type: ignore[no-untyped-def]
    reader, admin_client, demo, django_assert_num_queries, django_capture_on_commit_callbacks
) -> None:
    publish(admin_client, django_capture_on_commit_callbacks, name="r-one", labels=["production"])
    assemble(reader)
    # An NPC the request does not name, listed in another index shard than its NPC's.
    shards = Release.objects.get(name="r-one").index["npcs"]
    listed = {slug: shards[shard_of(slug, len(shards))] for slug in ("marta-vell", "kestrel")}
    assert listed["kestrel"] != listed["marta-vell"]
    segment = Segment.objects.filter(scope="npc", npc__slug="kestrel").first()
    with django_capture_on_commit_callbacks(execute=True):
        segments.segment_update(actor=None, segment=segment, content="Kestrel sails at dawn.")
    publish(admin_client, django_capture_on_commit_callbacks, name="r-two", labels=["production"])

    # Its index (the label map is in the shared cache, the shards and bundles in memory).
    with django_assert_num_queries(1):
        served = assemble(reader)
    assert served["meta"]["release"] == {"name": "r-two", "label": "production"}


def test_preview_serves_releases_too(  # type: ignore[no-untyped-def]
    reader, writer, demo, django_capture_on_commit_callbacks
) -> None:
    writer.post("/api/v1/releases/", {"name": "r-one"}, format="json")
    edit_tone("Fog, always fog.", django_capture_on_commit_callbacks)
    response = reader.post("/api/v1/preview", {**BODY, "release": "r-one"}, format="json")
    assert response.status_code == 200
    assert response.json()["meta"]["release"] == {"name": "r-one", "label": None}
    assert "Fog, always fog." not in response.json()["prompt"]


@pytest.mark.parametrize(
    "value", ["nope", "Production", "", "x" * 65, "a\x00b", 5, ["production"], {}]
)
def test_an_unknown_or_malformed_release_is_a_clear_error(  # type: ignore[no-untyped-def]
    reader, demo, value
) -> None:
    response = reader.post("/api/v1/assemble", {**BODY, "release": value}, format="json")
    assert response.status_code == 400
    assert "release" in errors(response)


def test_a_lone_surrogate_release_is_refused(reader, demo) -> None:  # type: ignore[no-untyped-def]
    body = '{"entry": "drowned-bell", "release": "\\ud800"}'
    response = reader.post("/api/v1/assemble", body, content_type="application/json")
    assert response.status_code == 400
    assert "release" in errors(response)


def test_labels_move_only_for_admins_and_admin_keys(  # type: ignore[no-untyped-def]
    writer, reader, admin_client, demo
) -> None:
    assert writer.post("/api/v1/releases/", {"name": "r-one"}, format="json").status_code == 201
    published = writer.post(
        "/api/v1/releases/", {"name": "r-two", "labels": ["production"]}, format="json"
    )
    assert published.status_code == 403
    assert put_label(writer, "production", None, release="r-one").status_code == 403
    assert put_label(reader, "production", None, release="r-one").status_code == 403
    author = session_client(person("author"))
    assert put_label(author, "production", None, release="r-one").status_code == 403
    admin = session_client(person("admin"))
    assert put_label(admin, "production", None, release="r-one").status_code == 200
    assert reader.post("/api/v1/releases/", {}, format="json").status_code == 403
    assert remove_label(writer, "production", "r-one").status_code == 403
    assert remove_label(admin_client, "production", "r-one").status_code == 200


def test_a_label_moves_only_from_where_the_mover_last_saw_it(  # type: ignore[no-untyped-def]
    admin_client, demo
) -> None:
    admin_client.post("/api/v1/releases/", {"name": "r-one", "labels": ["staging"]}, format="json")
    admin_client.post("/api/v1/releases/", {"name": "r-two"}, format="json")
    label = admin_client.get("/api/v1/release-labels/staging")
    assert label.headers["ETag"] == '"label-staging-r-one"'
    assert put_label(admin_client, "staging", None, release="r-two").status_code == 412
    assert put_label(admin_client, "staging", "r-one", release="r-two").status_code == 200
    assert put_label(admin_client, "staging", "r-one", release="r-one").status_code == 412
    assert remove_label(admin_client, "staging", "r-one").status_code == 412
    assert ReleaseLabel.objects.get(name="staging").release.name == "r-two"
    # If-Match: * asks only that the label exists.
    star = {"format": "json", "HTTP_IF_MATCH": "*"}
    missing = admin_client.put("/api/v1/release-labels/qa", {"release": "r-one"}, **star)
    assert missing.status_code == 412 and not ReleaseLabel.objects.filter(name="qa").exists()
    moved = admin_client.put("/api/v1/release-labels/staging", {"release": "r-one"}, **star)
    assert moved.status_code == 200
    assert ReleaseLabel.objects.get(name="staging").release.name == "r-one"


def test_labels_move_and_go_without_if_match_as_the_contract_shows(  # type: ignore[no-untyped-def]
    admin_client, demo
) -> None:
    admin_client.post("/api/v1/releases/", {"name": "r-one"}, format="json")
    admin_client.post("/api/v1/releases/", {"name": "r-two"}, format="json")
    url = "/api/v1/release-labels/production"
    created = admin_client.put(url, {"release": "r-one", "note": "launch"}, format="json")
    assert created.status_code == 200, created.json()
    moved = admin_client.put(url, {"release": "r-two", "note": "next"}, format="json")
    assert moved.status_code == 200, moved.json()
    assert (moved.json()["from_release"], moved.json()["to_release"]) == ("r-one", "r-two")
    removed = admin_client.delete(url, {"note": "pause"}, format="json")
    assert removed.status_code == 200, removed.json()
    assert not ReleaseLabel.objects.filter(name="production").exists()
    history = admin_client.get(f"{url}/history").json()
    assert [(m["from_release"], m["to_release"], m["note"]) for m in history] == [
        ("r-two", None, "pause"),
        ("r-one", "r-two", "next"),
        (None, "r-one", "launch"),
    ]


def test_label_history_says_who_when_from_to_and_why(  # type: ignore[no-untyped-def]
    admin_client, demo
) -> None:
    admin_client.post("/api/v1/releases/", {"name": "r-one", "labels": ["staging"]}, format="json")
    admin_client.post("/api/v1/releases/", {"name": "r-two"}, format="json")
    assert (
        put_label(admin_client, "staging", "r-one", release="r-two", note="try").status_code == 200
    )
    assert remove_label(admin_client, "staging", "r-two", note="done").status_code == 200
    history = admin_client.get("/api/v1/release-labels/staging/history").json()
    assert [(m["from_release"], m["to_release"], m["note"]) for m in history] == [
        ("r-two", None, "done"),
        ("r-one", "r-two", "try"),
        (None, "r-one", ""),
    ]
    assert all(m["by"].startswith("API key 'ops'") and m["at"] for m in history)


def test_compare_names_the_new_cut_and_the_failing_expectation(  # type: ignore[no-untyped-def]
    admin_client, demo, django_capture_on_commit_callbacks
) -> None:
    tone = Segment.objects.get(import_key="w-iron-tone")
    response = admin_client.post(
        "/api/v1/scenarios/",
        {
            "name": "bell, tight budget",
            "entry": "drowned-bell",
            "first_turn": True,
            "token_budget": 900,
            "expectations": [{"kind": "fits"}, {"kind": "keeps_segment", "segment": tone.pk}],
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    publish(admin_client, django_capture_on_commit_callbacks, name="r-one", labels=["production"])
    # The crafted change: the world's tone segment grows past the budget.
    edit_tone("The iron coast is grey and cold. " * 150, django_capture_on_commit_callbacks)

    report = admin_client.get("/api/v1/releases/production/compare/working").json()
    assert report["before"] == {
        "name": "r-one",
        "label": "production",
        "content_hash": ReleaseLabel.objects.get(name="production").release.content_hash,
    }
    assert report["after"]["name"] == "working" and report["after"]["label"] is None
    changed = report["segments"]["changed"]
    assert [c["id"] for c in changed] == [tone.pk]
    assert changed[0]["fields"] == ["content"] and "+The iron coast" in changed[0]["diff"]
    scenario = next(s for s in report["scenarios"] if s["scenario"] == "bell, tight budget")
    assert scenario["tokens_before"] != scenario["tokens_after"] <= 900
    assert any(f"#{tone.pk}" in cut and "left out" in cut for cut in scenario["cuts_added"])
    failing = {e["expectation"]: e["reason"] for e in scenario["expectations_failing"]}
    assert set(failing) == {"fits without cuts", f"keeps segment #{tone.pk}"}
    assert "left out" in failing[f"keeps segment #{tone.pk}"]
    implicit = [s["scenario"] for s in report["scenarios"] if not s["saved"]]
    assert "drowned-bell: first turn" in implicit and "drowned-bell: later turn" in implicit

    # The other way round, the same cut disappears and the expectations are fixed.
    back = admin_client.get("/api/v1/releases/working/compare/r-one").json()
    scenario = next(s for s in back["scenarios"] if s["scenario"] == "bell, tight budget")
    assert scenario["cuts_removed"] and not scenario["cuts_added"]
    assert len(scenario["expectations_fixed"]) == 2

    # Publishing it asks for confirmation, and records it.
    refused = admin_client.post(
        "/api/v1/releases/", {"name": "r-two", "labels": ["production"]}, format="json"
    )
    assert refused.status_code == 409 and codes(refused) == ["expectations_failing"]
    assert "keeps segment" in refused.json()["errors"][0]["detail"]
    confirmed = admin_client.post(
        "/api/v1/releases/",
        {"name": "r-two", "labels": ["production"], "confirm": True},
        format="json",
    )
    assert confirmed.status_code == 201
    move = ReleaseLabelMove.objects.filter(label="production").first()
    assert move is not None and len(move.confirmed_failures) == 2


def test_compare_unknown_side_is_404(reader, demo) -> None:  # type: ignore[no-untyped-def]
    response = reader.get("/api/v1/releases/nope/compare/working")
    assert response.status_code == 404
    assert errors(response) == {None: "No release or label named 'nope'."}


def test_a_bad_label_in_a_publish_is_named_by_position(  # type: ignore[no-untyped-def]
    admin_client, demo
) -> None:
    response = admin_client.post(
        "/api/v1/releases/", {"labels": ["staging", "Bad Label"]}, format="json"
    )
    assert response.status_code == 400 and "labels.1" in errors(response)


def test_scenarios_crud_with_field_errors(writer, reader, demo) -> None:  # type: ignore[no-untyped-def]
    body = {
        "name": "bell",
        "entry": "drowned-bell",
        "npcs": [{"npc": "marta-vell", "tier": 2}],
        "state": {"input": "hi"},
        "expectations": [{"kind": "contains", "text": "bell"}],
    }
    created = writer.post("/api/v1/scenarios/", body, format="json")
    assert created.status_code == 201, created.json()
    pk = created.json()["id"]
    assert reader.get(f"/api/v1/scenarios/{pk}/").json()["npcs"] == body["npcs"]
    assert reader.post("/api/v1/scenarios/", body, format="json").status_code == 403
    etag = reader.get(f"/api/v1/scenarios/{pk}/").headers["ETag"]
    updated = writer.patch(
        f"/api/v1/scenarios/{pk}/", {"token_budget": 500}, format="json", HTTP_IF_MATCH=etag
    )
    assert updated.json()["token_budget"] == 500 and updated.json()["revision"] == 2
    stale = writer.patch(
        f"/api/v1/scenarios/{pk}/", {"token_budget": 400}, format="json", HTTP_IF_MATCH=etag
    )
    assert stale.status_code == 412
    bad = writer.patch(
        f"/api/v1/scenarios/{pk}/", {"token_budget": -4}, format="json", HTTP_IF_MATCH=etag
    )
    assert bad.status_code == 400 and "token_budget" in errors(bad)
    malformed = writer.post(
        "/api/v1/scenarios/",
        {**body, "token_budget": -1, "state": {"a": "x"}, "expectations": [{"kind": "guess"}]},
        format="json",
    )
    assert malformed.status_code == 400
    assert set(errors(malformed)) == {"token_budget", "state.a", "expectations.0.kind"}
    unknown = writer.post(
        "/api/v1/scenarios/",
        {
            "name": "x",
            "entry": "nope",
            "npcs": ["ghost"],
            "expectations": [{"kind": "max_tokens"}],
        },
        format="json",
    )
    assert unknown.status_code == 400
    assert set(errors(unknown)) == {"entry", "npcs", "expectations.0.tokens"}
    etag = updated.headers["ETag"]
    assert writer.delete(f"/api/v1/scenarios/{pk}/", HTTP_IF_MATCH=etag).status_code == 204
    for hostile, field in (
        ({"name": "a\x00b"}, "name"),
        ({"npcs": "marta-vell"}, "npcs"),
        ({"npcs": [{"npc": {"x": 1}}]}, "npcs.0.npc"),
        ({"npcs": [5]}, "npcs.0"),
        ({"npcs": [{"npc": "marta-vell", "tier": 1e9}]}, "npcs.0.tier"),
        ({"first_turn": "yes"}, "first_turn"),
        ({"state": {"weather": "rain"}}, "state.weather"),
        ({"state": {"input": 5}}, "state.input"),
        ({"expectations": {"kind": "fits"}}, "expectations"),
        ({"expectations": [{"kind": {}}]}, "expectations.0.kind"),
        ({"expectations": [{"kind": ["judge"]}]}, "expectations.0.kind"),
        ({"expectations": [{"kind": "contains", "text": "x" * 5000}]}, "expectations.0.text"),
        ({"token_budget": True}, "token_budget"),
    ):
        response = writer.post("/api/v1/scenarios/", {**body, **hostile}, format="json")
        assert response.status_code == 400, (hostile, response.json())
        assert field in errors(response), (hostile, errors(response))
    assert reader.get(f"/api/v1/scenarios/{pk}/").status_code == 404
    cache.clear()


def test_listing_releases_and_labels_takes_constant_queries(  # type: ignore[no-untyped-def]
    admin_client, demo, django_assert_max_num_queries
) -> None:
    for index in range(6):
        admin_client.post(
            "/api/v1/releases/", {"name": f"r-{index}", "labels": [f"l{index}"]}, format="json"
        )
    with django_assert_max_num_queries(4):  # API key, releases with authors, labels, aliases
        response = admin_client.get("/api/v1/releases/")
    assert [r["labels"] for r in response.json()][:2] == [["l5"], ["l4"]]
    with django_assert_max_num_queries(2):
        assert len(admin_client.get("/api/v1/release-labels/").json()) == 6
    with django_assert_max_num_queries(2):
        assert len(admin_client.get("/api/v1/release-labels/l1/history").json()) == 1


def test_a_release_named_like_a_label_it_publishes_is_a_400_naming_name(  # type: ignore[no-untyped-def]
    admin_client, demo
) -> None:
    response = admin_client.post(
        "/api/v1/releases/", {"name": "production", "labels": ["production"]}, format="json"
    )
    assert response.status_code == 400
    assert set(errors(response)) == {"name"}
    assert admin_client.get("/api/v1/releases/").json() == []
    assert admin_client.get("/api/v1/release-labels/").json() == []


def test_a_write_key_can_no_longer_squat_a_label_an_admin_sets(  # type: ignore[no-untyped-def]
    writer, admin_client, demo
) -> None:
    # The sequence that used to lock admins out of 'production' for good.
    squat = writer.post("/api/v1/releases/", {"name": "production"}, format="json")
    assert squat.status_code == 400 and "reserved" in errors(squat)["name"]
    assert writer.post("/api/v1/releases/", {"name": "r-one"}, format="json").status_code == 201
    assert put_label(admin_client, "production", None, release="r-one").status_code == 200
    # Any other name a label will ever want: the label takes it, the release gets an alias.
    squatter = writer.post("/api/v1/releases/", {"name": "canary"}, format="json")
    assert squatter.status_code == 201
    taken = put_label(admin_client, "canary", None, release="r-one")
    assert taken.status_code == 200, taken.json()
    pk = Release.objects.get(name="canary").pk
    listed = {r["name"]: r["aliases"] for r in writer.get("/api/v1/releases/").json()}
    assert listed == {"canary": [f"canary.r{pk}"], "r-one": []}
    assert writer.get("/api/v1/releases/canary/").json()["name"] == "r-one"
    assert writer.get(f"/api/v1/releases/canary.r{pk}/").json()["name"] == "canary"
    assert assemble(writer, release="canary")["meta"]["release"] == {
        "name": "r-one",
        "label": "canary",
    }
    assert assemble(writer, release=f"canary.r{pk}")["meta"]["release"]["label"] is None
    # A name that was a label takes an admin to become a release's again.
    removed = admin_client.delete("/api/v1/release-labels/canary", {}, format="json")
    assert removed.status_code == 200
    again = writer.post("/api/v1/releases/", {"name": "canary"}, format="json")
    assert again.status_code == 400  # the squatter still has it
    formerly = writer.post("/api/v1/releases/", {"name": "retired"}, format="json")
    assert formerly.status_code == 201
    put_label(admin_client, "old", None, release="retired")
    admin_client.delete("/api/v1/release-labels/old", {}, format="json")
    refused = writer.post("/api/v1/releases/", {"name": "old"}, format="json")
    assert refused.status_code == 403 and "needs a key with scope 'admin'" in errors(refused)[None]
    assert admin_client.post("/api/v1/releases/", {"name": "old"}, format="json").status_code == 201


def test_a_deleted_scenario_leaves_who_when_and_what_for_admins(  # type: ignore[no-untyped-def]
    writer, demo, client
) -> None:
    created = writer.post(
        "/api/v1/scenarios/", {"name": "bell", "entry": "drowned-bell"}, format="json"
    )
    pk = created.json()["id"]
    etag = writer.get(f"/api/v1/scenarios/{pk}/").headers["ETag"]
    assert writer.delete(f"/api/v1/scenarios/{pk}/", HTTP_IF_MATCH=etag).status_code == 204
    deleted = Scenario.history.get(id=pk, history_type="-")
    assert deleted.name == "bell" and deleted.entry == "drowned-bell"
    assert deleted.history_change_reason.startswith("API key 'content-pipeline'")
    client.force_login(UserFactory(is_superuser=True, is_staff=True))
    page = client.get("/admin/releases/historicalscenario/?history_type=-")
    assert page.status_code == 200 and "bell" in page.content.decode()


def test_compare_two_releases(  # type: ignore[no-untyped-def]
    admin_client, demo, django_capture_on_commit_callbacks
) -> None:
    tone = Segment.objects.get(import_key="w-iron-tone")
    publish(admin_client, django_capture_on_commit_callbacks, name="r-one")
    edit_tone("Fog, always fog.", django_capture_on_commit_callbacks)
    publish(admin_client, django_capture_on_commit_callbacks, name="r-two", labels=["staging"])
    edit_tone("Working-copy weather.", django_capture_on_commit_callbacks)

    report = admin_client.get("/api/v1/releases/r-one/compare/staging").json()

    assert (report["before"]["name"], report["before"]["label"]) == ("r-one", None)
    assert (report["after"]["name"], report["after"]["label"]) == ("r-two", "staging")
    assert report["before"]["content_hash"] != report["after"]["content_hash"]
    [change] = report["segments"]["changed"]
    assert change["id"] == tone.pk and change["fields"] == ["content"]
    assert "+Fog, always fog." in change["diff"] and "Working-copy" not in change["diff"]
    assert report["objects"] == {"added": [], "changed": [], "removed": []}
    scenario = next(s for s in report["scenarios"] if s["scenario"] == "drowned-bell: first turn")
    assert scenario["changed"] and scenario["tokens_before"] != scenario["tokens_after"]


def test_a_confirmed_label_move_records_the_expectations_it_confirmed(  # type: ignore[no-untyped-def]
    admin_client, demo, django_capture_on_commit_callbacks
) -> None:
    tone = Segment.objects.get(import_key="w-iron-tone")
    scenario = {
        "name": "bell keeps its tone",
        "entry": "drowned-bell",
        "first_turn": True,
        "token_budget": 900,
        "expectations": [{"kind": "keeps_segment", "segment": tone.pk}],
    }
    assert admin_client.post("/api/v1/scenarios/", scenario, format="json").status_code == 201
    publish(admin_client, django_capture_on_commit_callbacks, name="r-one", labels=["production"])
    edit_tone("The iron coast is grey and cold. " * 150, django_capture_on_commit_callbacks)
    publish(admin_client, django_capture_on_commit_callbacks, name="r-two")

    refused = put_label(admin_client, "production", "r-one", release="r-two")
    assert refused.status_code == 409 and codes(refused) == ["expectations_failing"]
    assert ReleaseLabel.objects.get(name="production").release.name == "r-one"
    with django_capture_on_commit_callbacks(execute=True):
        moved = put_label(
            admin_client, "production", "r-one", release="r-two", note="known", confirm=True
        )

    assert moved.status_code == 200, moved.json()
    [failure] = moved.json()["confirmed_failures"]
    assert failure["scenario"] == "bell keeps its tone"
    assert failure["expectation"] == f"keeps segment #{tone.pk}" and "left out" in failure["reason"]
    [latest, *_] = admin_client.get("/api/v1/release-labels/production/history").json()
    assert latest["to_release"] == "r-two" and latest["confirmed_failures"] == [failure]


def test_publishing_with_the_reviewed_hash_is_refused_once_the_working_copy_changed(  # type: ignore[no-untyped-def]
    admin_client, demo, django_capture_on_commit_callbacks
) -> None:
    publish(admin_client, django_capture_on_commit_callbacks, name="r-one", labels=["production"])
    edit_tone("Fog, always fog.", django_capture_on_commit_callbacks)
    reviewed = admin_client.get("/api/v1/releases/production/compare/working").json()["after"]
    assert reviewed["name"] == "working" and len(reviewed["content_hash"]) == 64
    edit_tone("Fog, and then more fog.", django_capture_on_commit_callbacks)

    body = {"name": "r-two", "labels": ["production"], "expected_hash": reviewed["content_hash"]}
    refused = publish(admin_client, django_capture_on_commit_callbacks, **body)
    assert refused.status_code == 409 and codes(refused) == ["working_copy_changed"]
    assert [r["name"] for r in admin_client.get("/api/v1/releases/").json()] == ["r-one"]

    current = admin_client.get("/api/v1/releases/production/compare/working").json()["after"]
    body["expected_hash"] = current["content_hash"]
    published = publish(admin_client, django_capture_on_commit_callbacks, **body)
    assert published.status_code == 201, published.json()
    assert published.json()["content_hash"] == current["content_hash"]
    for bad in ("abc", "g" * 64, 5, None):
        response = admin_client.post(
            "/api/v1/releases/", {"name": "r-x", "expected_hash": bad}, format="json"
        )
        assert response.status_code == 400 and set(errors(response)) == {"expected_hash"}, bad


UNRENDERABLE = staticmethod(lambda *args: {"n": 2**64})  # what the renderer cannot write


def test_a_release_write_whose_answer_cannot_be_rendered_is_not_committed(  # type: ignore[no-untyped-def]
    admin_client, demo, monkeypatch
) -> None:
    # The client sees an error: a retry must not find the change made.
    admin_client.post("/api/v1/releases/", {"name": "r-one", "labels": ["qa"]}, format="json")
    scenario = {"name": "bell", "entry": "drowned-bell"}
    created = admin_client.post("/api/v1/scenarios/", scenario, format="json").json()
    etag = admin_client.get(f"/api/v1/scenarios/{created['id']}/").headers["ETag"]
    for serializer in (s.ReleaseSerializer, s.LabelMoveSerializer, s.ScenarioSerializer):
        monkeypatch.setattr(serializer, "of", UNRENDERABLE)
    admin_client.raise_request_exception = False  # answer as a server would, not re-raise
    scenario_url = f"/api/v1/scenarios/{created['id']}/"
    writes = [
        ("post", "/api/v1/releases/", {"name": "r-two", "labels": ["production"]}, {}),
        ("put", "/api/v1/release-labels/staging", {"release": "r-one"}, {}),
        ("delete", "/api/v1/release-labels/qa", {"note": "gone"}, {}),
        ("post", "/api/v1/scenarios/", {**scenario, "name": "bell 2"}, {}),
        ("patch", scenario_url, {"token_budget": 5}, {"HTTP_IF_MATCH": etag}),
    ]
    for method, path, body, headers in writes:
        response = getattr(admin_client, method)(path, body, format="json", **headers)
        assert response.status_code == 500, (path, response.content)
        assert response.json()["type"] == "server_error"
    assert list(Release.objects.values_list("name", flat=True)) == ["r-one"]
    assert dict(ReleaseLabel.objects.values_list("name", "release__name")) == {"qa": "r-one"}
    assert ReleaseLabelMove.objects.count() == 1
    assert list(Scenario.objects.values_list("name", "token_budget")) == [
        ("bell", created["token_budget"])
    ]
