"""Lore in releases: a release serves its world's lore as it was when it was made, from
content-addressed lore bundles; the working copy's later edits do not reach it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from promptadmin.content.models import Entry
from promptadmin.lore import services as lore
from promptadmin.lore.models import LoreEntry
from promptadmin.releases import bundles, serving, working
from promptadmin.releases import services as releases
from promptadmin.releases.bundles import LORE, manifest_of
from promptadmin.releases.models import Release, ReleaseBundle

pytestmark = pytest.mark.django_db

TURN = {"entry": "drowned-bell", "state": {"input": "Who rang the bell?"}}


def assemble(client: Any, release: str) -> dict[str, Any]:
    response = client.post(
        "/api/v1/assemble",
        json.dumps({**TURN, "release": release}),
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    return response.json()  # type: ignore[no-any-return]


@pytest.fixture
def bell(demo: None) -> LoreEntry:
    serving.forget()
    world = Entry.objects.select_related("world").get(slug="drowned-bell").world
    return lore.lore_entry_create(
        actor=None, world=world, title="The bell", content="Cast from a sunken ship.", keys=["bell"]
    )


def test_a_release_serves_its_lore_as_it_was_when_made(reader, bell) -> None:  # type: ignore[no-untyped-def]
    releases.release_create(actor=None, name="r1")
    lore.lore_entry_update(actor=None, entry=bell, content="Cast from a church in the hills.")

    old, working = assemble(reader, "r1"), assemble(reader, "working")
    assert "Cast from a sunken ship." in old["prompt"]
    assert "hills" not in old["prompt"]
    assert [row["id"] for row in old["meta"]["lore"]] == [bell.pk]
    assert "Cast from a church in the hills." in working["prompt"]

    # A new release picks the change up; the first still serves what it held.
    releases.release_create(actor=None, name="r2")
    assert "hills" in assemble(reader, "r2")["prompt"]
    assert "sunken ship" in assemble(reader, "r1")["prompt"]


def test_a_release_keeps_its_lore_after_the_working_copys_is_deleted(reader, bell) -> None:  # type: ignore[no-untyped-def]
    releases.release_create(actor=None, name="r1")
    releases.release_label_set(
        actor=None, label="production", release=Release.objects.get(name="r1")
    )
    lore.lore_entry_delete(actor=None, entry=bell)
    serving.forget()  # a fresh process: nothing of the release in memory

    assert "sunken ship" in assemble(reader, "r1")["prompt"]
    assert "sunken ship" in assemble(reader, "production")["prompt"]
    assert "sunken ship" not in assemble(reader, "working")["prompt"]


def test_a_release_and_the_working_copy_it_was_made_from_give_one_prompt(reader, bell) -> None:  # type: ignore[no-untyped-def]
    lore.lore_entry_create(
        actor=None, world=None, title="Tides", content="The tide takes the bell.", keys=["tide"]
    )
    releases.release_create(actor=None, name="r1")
    released, working = assemble(reader, "r1"), assemble(reader, "working")
    assert released["prompt"] == working["prompt"]
    assert released["meta"]["lore"] == working["meta"]["lore"]


def test_a_release_after_a_lore_only_change_writes_only_the_changed_lore_bundle(bell) -> None:  # type: ignore[no-untyped-def]
    first = releases.release_create(actor=None, name="r1")
    world = bell.world.slug
    assert set(first.manifest[LORE]) == {world}
    before = set(ReleaseBundle.objects.values_list("sha256", flat=True))
    lore.lore_entry_update(actor=None, entry=bell, priority=5)

    second = releases.release_create(actor=None, name="r2")
    written = ReleaseBundle.objects.exclude(sha256__in=before)
    assert list(written.values_list("kind", flat=True)) == [LORE]
    assert second.manifest[LORE][world] != first.manifest[LORE][world]
    assert {k: v for k, v in second.manifest.items() if k != LORE} == {
        k: v for k, v in first.manifest.items() if k != LORE
    }
    assert second.content_hash != first.content_hash


def test_lore_made_inactive_leaves_the_next_release(reader, bell) -> None:  # type: ignore[no-untyped-def]
    lore.lore_entry_update(actor=None, entry=bell, active=False)
    release = releases.release_create(actor=None, name="r1")
    assert LORE not in release.manifest
    assert assemble(reader, "r1")["meta"]["lore"] == []


def test_a_release_made_before_lore_entered_releases_serves_no_lore(  # type: ignore[no-untyped-def]
    reader, bell, monkeypatch
) -> None:
    # A manifest as releases made before lore bundles have it: no lore section.
    def without_lore(*args: Any) -> dict[str, Any]:
        manifest = manifest_of(*args)
        manifest.pop(LORE, None)
        return manifest

    for module in (bundles, working):
        monkeypatch.setattr(module, "manifest_of", without_lore)
    release = releases.release_create(actor=None, name="r1")
    assert LORE not in release.manifest
    serving.forget()

    data = assemble(reader, "r1")
    assert data["meta"]["lore"] == []
    assert "sunken ship" not in data["prompt"]
    assert "sunken ship" in assemble(reader, "working")["prompt"]
