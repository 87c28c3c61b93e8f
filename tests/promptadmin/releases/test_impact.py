"""The impact report: what two versions of the content differ by, and the label moves
that confirm failing expectations."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from django.core.cache import cache
from django.core.management import call_command

from promptadmin.content.models import Segment
from promptadmin.content.services import segments
from promptadmin.releases import selectors, services, serving
from promptadmin.releases.snapshot import SEGMENT_FIELDS, SnapSegment, working_content

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def demo() -> None:
    cache.clear()
    serving._loaded.clear()
    call_command("seed_demo")


def test_a_title_only_edit_changes_the_hash_the_report_and_what_is_unpublished(
    django_capture_on_commit_callbacks: Any,
) -> None:
    release = services.release_create(actor=None, name="r-one", labels=["production"])
    tone = Segment.objects.get(import_key="w-iron-tone")
    with django_capture_on_commit_callbacks(execute=True):
        segments.segment_update(actor=None, segment=tone, title="Tone of the iron coast")

    assert working_content().content_hash() != release.content_hash
    changed = selectors.compare_report("production", "working")["segments"]["changed"]
    assert [(change["id"], change["fields"]) for change in changed] == [(tone.pk, ["title"])]
    unpublished = selectors.unpublished()
    assert unpublished is not None
    assert [change["id"] for change in unpublished["segments"]["changed"]] == [tone.pk]


def test_every_field_a_release_keeps_of_a_segment_is_hashed_and_compared() -> None:
    # A field left out would be an edit the content hash and the report cannot see.
    derived = {"id", "sha256", "token_count", "token_encoding"}
    kept = {field.name for field in dataclasses.fields(SnapSegment)} - derived
    assert set(SEGMENT_FIELDS) == kept
