"""The impact report: what two versions of the content differ by, and the label moves
that confirm failing expectations."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from django.core.cache import cache
from django.core.management import call_command

from promptadmin.content.models import NPC, Ruleset, Segment
from promptadmin.content.services import catalog, segments
from promptadmin.releases import selectors, services, serving
from promptadmin.releases.snapshot import SEGMENT_FIELDS, SnapSegment
from promptadmin.releases.working import working_version

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def demo() -> None:
    cache.clear()
    serving.forget()
    call_command("seed_demo")


def test_a_title_only_edit_changes_the_hash_the_report_and_what_is_unpublished(
    django_capture_on_commit_callbacks: Any,
) -> None:
    release = services.release_create(actor=None, name="r-one", labels=["production"])
    tone = Segment.objects.get(import_key="w-iron-tone")
    with django_capture_on_commit_callbacks(execute=True):
        segments.segment_update(actor=None, segment=tone, title="Tone of the iron coast")

    assert working_version().content_hash != release.content_hash
    changed = selectors.compare_report("production", "working")["segments"]["changed"]
    assert [(change["id"], change["fields"]) for change in changed] == [(tone.pk, ["title"])]
    unpublished = selectors.unpublished()
    assert unpublished is not None
    assert [change["id"] for change in unpublished["segments"]["changed"]] == [tone.pk]


def test_every_field_a_release_keeps_of_a_segment_is_hashed_and_compared() -> None:
    # A field left out would be an edit the content hash and the report cannot see.
    derived = {"id", "token_count", "token_encoding"}
    kept = {field.name for field in dataclasses.fields(SnapSegment)} - derived
    assert set(SEGMENT_FIELDS) == kept


def test_compare_lists_segments_and_objects_added_changed_and_removed(
    django_capture_on_commit_callbacks: Any,
) -> None:
    spare = catalog.catalog_create(actor=None, model=Ruleset, slug="spare-rules", name="Spare")
    services.release_create(actor=None, name="r-one")
    gone = Segment.objects.filter(scope="npc", npc__slug="old-cobb").first()
    assert gone is not None
    with django_capture_on_commit_callbacks(execute=True):
        added = segments.segment_create(
            actor=None, scope="core", content="Speak plainly.", title="Plain"
        )
        segments.segment_delete(actor=None, segment=gone)
        catalog.catalog_update(
            actor=None,
            obj=NPC.objects.get(slug="marta-vell"),
            name="Marta Vell-Orr",
            description="Harbourmaster of Saltmouth.\nShe keeps the bell's secret.",
        )
        catalog.catalog_create(actor=None, model=NPC, slug="new-face", name="New Face")
        catalog.catalog_delete(actor=None, obj=spare)

    report = selectors.compare_report("r-one", "working")

    found = report["segments"]
    assert [(row["id"], row["title"]) for row in found["added"]] == [(added.pk, "Plain")]
    assert [(row["id"], row["owner"]) for row in found["removed"]] == [(gone.pk, "old-cobb")]
    assert found["changed"] == []
    objects = report["objects"]
    assert objects["added"] == [{"kind": "npcs", "slug": "new-face", "name": "New Face"}]
    assert objects["removed"] == [{"kind": "rulesets", "slug": "spare-rules", "name": "Spare"}]
    [marta] = objects["changed"]
    assert (marta["kind"], marta["slug"], marta["name"]) == ("npcs", "marta-vell", "Marta Vell-Orr")
    assert marta["fields"] == ["description", "name"]
    # Short values before and after; the description, a text, as a diff.
    assert marta["changes"] == [
        {"field": "name", "before": "Marta Vell", "after": "Marta Vell-Orr"}
    ]
    assert " Harbourmaster of Saltmouth.\n+She keeps the bell's secret." in marta["diff"]


def test_a_changed_segment_gives_its_other_fields_before_and_after(
    django_capture_on_commit_callbacks: Any,
) -> None:
    services.release_create(actor=None, name="r-one")
    tone = Segment.objects.get(import_key="w-iron-tone")
    with django_capture_on_commit_callbacks(execute=True):
        segments.segment_update(actor=None, segment=tone, title="Coast", sort_order=99)

    [change] = selectors.compare_report("r-one", "working")["segments"]["changed"]

    assert change["fields"] == ["title", "sort_order"] and change["diff"] == ""
    assert change["changes"] == [
        {"field": "title", "before": "Tone", "after": "Coast"},
        {"field": "sort_order", "before": 10, "after": 99},
    ]
