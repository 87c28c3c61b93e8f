"""Releases: immutable snapshots, deduplicated texts, labels, publish, roll back, history."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.core.cache import cache
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management import call_command

from assembler.request import AssembleParams
from promptadmin.content.assembly import assemble_prompt
from promptadmin.content.models import Segment
from promptadmin.content.services import catalog, segments
from promptadmin.content.services.api_keys import api_key_create
from promptadmin.core.errors import StaleStateError
from promptadmin.releases import selectors, services, serving
from promptadmin.releases.bundles import content_version, manifest_hashes, release_content
from promptadmin.releases.models import (
    Release,
    ReleaseAlias,
    ReleaseBundle,
    ReleaseLabel,
    ReleaseLabelMove,
)
from promptadmin.releases.working import working_version
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

NPCS = (("marta-vell", 2), ("old-cobb", 1))
PARAMS = AssembleParams(entry="drowned-bell", first_turn=True, npcs=NPCS)


@pytest.fixture(autouse=True)
def demo() -> None:
    cache.clear()
    serving.forget()
    call_command("seed_demo")


def admin() -> Any:
    user = UserFactory()
    user.groups.add(Group.objects.get(name="admin"))
    return user


def author() -> Any:
    user = UserFactory()
    user.groups.add(Group.objects.get(name="author"))
    return user


def from_release(name: str) -> str:
    return assemble_prompt(PARAMS, load=serving.resolve(name).load).prompt


def test_a_release_assembles_exactly_as_the_working_copy_did() -> None:
    working = assemble_prompt(PARAMS)
    release = services.release_create(actor=author(), notes="first")
    assert release.segment_count == Segment.objects.filter(active=True).count()
    assert from_release(release.name) == working.prompt


def test_a_release_is_immutable_under_later_edits_and_deletes(
    django_capture_on_commit_callbacks: Any,
) -> None:
    before = assemble_prompt(PARAMS).prompt
    release = services.release_create(actor=None)
    edited = Segment.objects.get(import_key="w-iron-tone")
    deleted = Segment.objects.filter(scope="npc", npc__slug="old-cobb").first()
    assert deleted is not None
    with django_capture_on_commit_callbacks(execute=True):
        segments.segment_update(actor=None, segment=edited, content="Fog, always fog.")
        segments.segment_delete(actor=None, segment=deleted)
        catalog.catalog_update(actor=None, obj=deleted.npc, name="Renamed Cobb")
    serving.forget()  # reload from the database: the stored rows are what count

    assert from_release(release.name) == before
    assert "Fog, always fog." in assemble_prompt(PARAMS).prompt
    assert "Fog, always fog." not in from_release(release.name)
    assert "Renamed Cobb" in assemble_prompt(PARAMS).prompt
    assert "Renamed Cobb" not in from_release(release.name)


def test_release_rows_refuse_to_change() -> None:
    release = services.release_create(actor=None)
    release.notes = "rewritten"
    with pytest.raises(ValidationError):
        release.save()
    with pytest.raises(ValidationError):
        release.delete()
    bundle = ReleaseBundle.objects.first()
    assert bundle is not None
    with pytest.raises(ValidationError):
        bundle.save()
    with pytest.raises(ValidationError):
        bundle.delete()


@pytest.mark.postgres
def test_the_database_refuses_to_change_a_release_whatever_the_code_path() -> None:
    from django.db import DatabaseError, transaction

    user = admin()
    release = services.release_create(actor=user, name="r-one", labels=["production"])
    attempts = [
        lambda: Release.objects.filter(pk=release.pk).update(notes="rewritten"),
        lambda: Release.objects.filter(pk=release.pk).update(manifest={}),
        lambda: Release.objects.filter(pk=release.pk).update(index={}),
        lambda: Release.objects.filter(pk=release.pk).delete(),
        lambda: ReleaseBundle.objects.update(content="gone"),
        lambda: ReleaseBundle.objects.filter(kind="npc").delete(),
        lambda: ReleaseLabelMove.objects.update(note="rewritten"),
    ]
    for attempt in attempts:
        with pytest.raises(DatabaseError), transaction.atomic():
            attempt()
    # Deleting the person who made it only forgets who they were.
    user.delete()
    release.refresh_from_db()
    assert release.created_by is None and release.notes == ""


def test_a_release_after_a_one_segment_change_writes_one_bundle_and_the_shards_naming_it() -> None:
    one = services.release_create(actor=None, name="r-one")
    bundles = ReleaseBundle.objects.count()
    segment = Segment.objects.get(import_key="w-iron-tone")
    segments.segment_update(actor=None, segment=segment, content="Fog, always fog.")
    two = services.release_create(actor=None, name="r-two")
    # The world's bundle, and the index shards of its entries (they name its new bundle).
    shards = {*two.index["entries"], *two.index["npcs"]} - {
        *one.index["entries"],
        *one.index["npcs"],
    }
    assert 1 <= len(shards) <= len(two.index["entries"])
    assert ReleaseBundle.objects.count() == bundles + 1 + len(shards)
    changed = manifest_hashes(two.manifest) - manifest_hashes(one.manifest)
    assert len(changed) == 1
    assert ReleaseBundle.objects.get(sha256=changed.pop()).kind == "world"


def test_the_content_hash_follows_the_content_only() -> None:
    one = services.release_create(actor=None, name="r-one")
    two = services.release_create(actor=None, name="r-two")
    assert one.content_hash == two.content_hash == working_version().content_hash
    segment = Segment.objects.get(import_key="w-iron-tone")
    segments.segment_update(actor=None, segment=segment, metadata={"title": "New"})
    three = services.release_create(actor=None, name="r-three")
    assert three.content_hash != one.content_hash
    assert content_version(release_content(one)).content_hash == one.content_hash


def test_a_release_keeps_objects_and_the_rulesets_order() -> None:
    release = services.release_create(actor=None)
    entry = next(e for e in release.catalog["entries"] if e["slug"] == "drowned-bell")
    assert entry["world"] == "iron-coast"
    assert entry["rulesets"] == ["narrative-core", "mystery"]
    assert {"worlds", "rulesets", "npcs", "entries"} <= set(release.catalog)


def test_release_names_default_by_date_and_never_repeat() -> None:
    one = services.release_create(actor=None)
    two = services.release_create(actor=None)
    assert one.name.startswith("r-") and two.name == f"{one.name}-2"
    with pytest.raises(ValidationError) as caught:
        services.release_create(actor=None, name=one.name)
    assert "name" in caught.value.message_dict
    for bad in ("working", "Bad Name", "x" * 65, "-lead", "a\x00b"):
        with pytest.raises(ValidationError) as caught:
            services.release_create(actor=None, name=bad)
        assert "name" in caught.value.message_dict


def test_publish_makes_a_release_and_moves_the_label_in_one_step() -> None:
    user = admin()
    release = services.release_create(actor=user, notes="launch", labels=["production", "staging"])
    assert dict(ReleaseLabel.objects.values_list("name", "release__name")) == {
        "production": release.name,
        "staging": release.name,
    }
    move = ReleaseLabelMove.objects.get(label="production")
    assert (move.from_release, move.to_release, move.by, move.note) == (
        None,
        release,
        user,
        "launch",
    )


def test_roll_back_moves_the_label_back_and_history_keeps_every_move() -> None:
    user = admin()
    first = services.release_create(actor=user, labels=["production"])
    segment = Segment.objects.get(import_key="w-iron-tone")
    segments.segment_update(actor=None, segment=segment, content="Fog, always fog.")
    second = services.release_create(actor=user, labels=["production"])
    services.release_label_set(actor=user, label="production", release=first, note="bad fog")

    assert ReleaseLabel.objects.get(name="production").release == first
    history = [
        (m.from_release, m.to_release, m.note)
        for m in ReleaseLabelMove.objects.filter(label="production")
    ]
    assert history == [(second, first, "bad fog"), (first, second, ""), (None, first, "")]
    # Moving a label where it already is records nothing.
    assert services.release_label_set(actor=user, label="production", release=first) is None
    assert ReleaseLabelMove.objects.filter(label="production").count() == 3


def test_removing_a_label_is_recorded_and_serving_falls_back_to_the_working_copy(
    django_capture_on_commit_callbacks: Any,
) -> None:
    user = admin()
    with django_capture_on_commit_callbacks(execute=True):
        release = services.release_create(actor=user, labels=["production"])
    assert serving.resolve(None).name == release.name
    with django_capture_on_commit_callbacks(execute=True):
        move = services.release_label_remove(actor=user, label="production", note="pause")
    assert (move.from_release, move.to_release) == (release, None)
    assert serving.resolve(None).name == "working"


def test_moving_labels_needs_the_admin_role_or_an_admin_key() -> None:
    release = services.release_create(actor=author())
    with pytest.raises(PermissionDenied):
        services.release_create(actor=author(), labels=["production"])
    with pytest.raises(PermissionDenied):
        services.release_label_set(actor=author(), label="production", release=release)
    write_key = api_key_create(actor=None, name="pipeline", scope="write")[0]
    with pytest.raises(PermissionDenied):
        services.release_label_set(actor=write_key, label="production", release=release)
    admin_key = api_key_create(actor=None, name="ops", scope="admin")[0]
    move = services.release_label_set(actor=admin_key, label="production", release=release)
    assert move is not None and move.via.startswith("API key 'ops'")


def test_viewers_and_read_keys_cannot_make_releases() -> None:
    with pytest.raises(PermissionDenied):
        services.release_create(actor=UserFactory())
    read_key = api_key_create(actor=None, name="game", scope="read")[0]
    with pytest.raises(PermissionDenied):
        services.release_create(actor=read_key)


def test_a_label_name_is_never_a_release_name() -> None:
    services.release_create(actor=None, name="r-one", labels=["qa"])
    with pytest.raises(ValidationError) as caught:
        services.release_create(actor=admin(), name="qa")
    assert "'qa' is a label" in caught.value.message_dict["name"][0]
    release = Release.objects.get(name="r-one")
    for bad in ("working", "Prod", "x" * 37, "a b"):
        with pytest.raises(ValidationError) as caught:
            services.release_label_set(actor=None, label=bad, release=release)
        assert "label" in caught.value.message_dict


@pytest.mark.parametrize("name", ["production", "staging", "latest", "working"])
def test_reserved_names_are_never_release_names_whoever_asks(name: str) -> None:
    for who in (None, admin()):
        with pytest.raises(ValidationError) as caught:
            services.release_create(actor=who, name=name)
        assert f"'{name}'" in caught.value.message_dict["name"][0]
    assert not Release.objects.exists()


def test_a_name_a_label_had_needs_an_admin_to_name_a_release() -> None:
    services.release_create(actor=None, name="r-one", labels=["canary"])
    services.release_label_remove(actor=None, label="canary")
    for who in (author(), api_key_create(actor=None, name="pipeline", scope="write")[0]):
        with pytest.raises(PermissionDenied, match=r"(?i)naming a release 'canary', which was a"):
            services.release_create(actor=who, name="canary")
    assert services.release_create(actor=admin(), name="canary").name == "canary"
    # The default name steps over former labels, so nobody is refused for a name not chosen.
    today = services._default_name()
    services.release_create(actor=None, name="r-two", labels=[today])
    services.release_label_remove(actor=None, label=today)
    assert services.release_create(actor=author()).name == f"{today}-2"


def test_an_admin_setting_a_label_a_release_is_named_after_takes_the_name() -> None:
    write_key = api_key_create(actor=None, name="pipeline", scope="write")[0]
    squatter = services.release_create(actor=write_key, name="canary")
    # The alias the squatter would get is taken too: the next one is used.
    services.release_create(actor=write_key, name=f"canary.r{squatter.pk}")
    target = services.release_create(actor=None, name="r-target")
    move = services.release_label_set(actor=admin(), label="canary", release=target)
    assert move is not None and move.to_release == target
    alias = ReleaseAlias.objects.get(release=squatter)
    assert (alias.name, alias.move) == (f"canary.r{squatter.pk}-2", move)
    assert Release.objects.get(pk=squatter.pk).name == "canary"  # a release never changes
    assert serving.resolve("canary").to_dict() == {"name": "r-target", "label": "canary"}
    assert serving.resolve(alias.name).to_dict() == {"name": alias.name, "label": None}
    assert selectors.release_named("canary") == target
    assert selectors.release_named(alias.name) == squatter
    assert selectors.compare_report("canary", alias.name)["after"]["label"] is None
    # Every name stays taken: neither the label's nor the alias is a new release's.
    for name in ("canary", alias.name):
        with pytest.raises(ValidationError):
            services.release_create(actor=admin(), name=name)


def test_a_label_may_take_the_name_of_the_release_it_points_at() -> None:
    squatter = services.release_create(actor=author(), name="canary")
    services.release_label_set(actor=admin(), label="canary", release=squatter)
    assert ReleaseAlias.objects.get(release=squatter).name == f"canary.r{squatter.pk}"
    assert serving.resolve("canary").to_dict() == {"name": "canary", "label": "canary"}


def test_a_process_serving_a_release_by_name_sees_a_label_take_the_name(
    monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    squatter = services.release_create(actor=author(), name="canary")
    target = services.release_create(actor=None, name="r-target")
    assert serving.resolve("canary").name == "canary"  # now held in this process's memory
    with django_capture_on_commit_callbacks(execute=True):
        services.release_label_set(actor=admin(), label="canary", release=target)
    monkeypatch.setattr(serving, "NAME_TRUSTED_SECONDS", 0.0)  # the time has passed
    assert serving.resolve("canary").to_dict() == {"name": "r-target", "label": "canary"}
    assert squatter.pk


def test_a_label_move_checks_where_it_was_under_its_lock() -> None:
    one = services.release_create(actor=None, name="r-one", labels=["staging"])
    two = services.release_create(actor=None, name="r-two")
    with pytest.raises(StaleStateError, match="it points at r-one now"):
        services.release_label_set(
            actor=None, label="staging", release=two, expected=["r-two", None]
        )
    with pytest.raises(StaleStateError, match="There is no label 'qa'"):
        services.release_label_set(
            actor=None, label="qa", release=two, expected=[services.ANY_RELEASE]
        )
    services.release_label_set(actor=None, label="staging", release=two, expected=["r-one"])
    with pytest.raises(StaleStateError):
        services.release_label_remove(actor=None, label="staging", expected=["r-one"])
    services.release_label_remove(actor=None, label="staging", expected=[services.ANY_RELEASE])
    assert not ReleaseLabel.objects.exists() and one.pk


def test_a_release_of_the_working_copy_takes_constant_queries(
    django_assert_max_num_queries: Any,
) -> None:
    # The name is checked twice: before reading the working copy, then under the names lock.
    services.release_create(actor=None, name="r-zero")
    segments.segment_create(actor=None, scope="core", content="One more core rule.")
    with django_assert_max_num_queries(18) as small:
        services.release_create(actor=None, name="r-one")
    for index in range(30):
        segments.segment_create(actor=None, scope="core", content=f"Extra core rule {index}.")
    with django_assert_max_num_queries(18) as large:
        services.release_create(actor=None, name="r-two")
    assert len(large.captured_queries) == len(small.captured_queries)
    assert release_content(Release.objects.get(name="r-two")).segments.keys() == set(
        Segment.objects.filter(active=True).values_list("pk", flat=True)
    )


def test_a_release_is_never_named_like_a_label_it_is_published_under() -> None:
    # Else the label is stuck: every later move fails, the name being a release's.
    for name, labels in (("staging", ["staging"]), ("qa", ["production", "qa"])):
        with pytest.raises(ValidationError) as caught:
            services.release_create(actor=None, name=name, labels=labels)
        assert set(caught.value.message_dict) == {"name"}
        assert f"'{name}'" in caught.value.message_dict["name"][0]
    assert not Release.objects.exists() and not ReleaseLabel.objects.exists()
    with pytest.raises(ValidationError) as caught:
        services.release_create(actor=None, labels=["working"])
    assert "labels.0" in caught.value.message_dict


def test_publishing_what_was_reviewed_is_refused_once_the_working_copy_changed() -> None:
    reviewed = working_version().content_hash
    segment = Segment.objects.get(import_key="w-iron-tone")
    segments.segment_update(actor=None, segment=segment, content="Fog, always fog.")
    with pytest.raises(services.WorkingCopyChanged) as caught:
        services.release_create(
            actor=None, name="r-one", labels=["production"], expected_hash=reviewed
        )
    assert reviewed[:12] in str(caught.value)
    assert not Release.objects.exists() and not ReleaseLabel.objects.exists()

    current = working_version().content_hash
    release = services.release_create(
        actor=None, name="r-one", labels=["production"], expected_hash=current
    )
    assert release.content_hash == current
