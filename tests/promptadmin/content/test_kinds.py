"""The registry of object kinds (promptadmin.content.kinds) drives every place that lists
them: each test runs once per kind in the registry, so a kind added there is filtered,
searched, shown in history and named in errors everywhere, or these tests fail."""

from __future__ import annotations

import doctest
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from promptadmin.api.serializers.content import SegmentFilterSerializer
from promptadmin.content import kinds
from promptadmin.content.kinds import KINDS, Kind
from promptadmin.content.models import (
    NPC,
    REF_FIELDS,
    SCOPE_REF_FIELD,
    Entry,
    Ruleset,
    Segment,
    World,
)
from promptadmin.content.services import segments
from promptadmin.content.services.api_keys import api_key_create
from promptadmin.studio import selectors
from promptadmin.studio.forms.segments import SEGMENT_ERROR_FIELDS
from tests.factories import (
    EntryFactory,
    NPCFactory,
    RulesetFactory,
    UserFactory,
    WorldFactory,
    make_segment,
)

FACTORIES: dict[type[Any], Any] = {
    World: WorldFactory,
    Ruleset: RulesetFactory,
    Entry: EntryFactory,
    NPC: NPCFactory,
}
EVERY_KIND = pytest.mark.parametrize("kind", KINDS.values(), ids=list(KINDS))


def two_objects_with_segments(kind: Kind) -> tuple[Any, Any, Segment]:
    """Two objects of ``kind`` with a segment each; the first one's segment."""
    mine, other = FACTORIES[kind.model](), FACTORIES[kind.model]()
    segment = make_segment(scope=kind.scopes[0], ref=mine, content="Mine.")
    make_segment(scope=kind.scopes[0], ref=other, content="Other.")
    return mine, other, segment


def test_the_examples_in_the_docstrings_hold() -> None:
    assert doctest.testmod(kinds).failed == 0


def test_the_registry_and_the_segment_model_describe_the_same_foreign_keys() -> None:
    assert set(KINDS) == set(REF_FIELDS) == set(filter(None, SCOPE_REF_FIELD.values()))
    for key, kind in KINDS.items():
        assert Segment._meta.get_field(key).related_model is kind.model
        assert kind.scopes and all(SCOPE_REF_FIELD[scope] == key for scope in kind.scopes)


def test_the_api_filters_segments_by_every_kind_and_documents_each_filter() -> None:
    fields = SegmentFilterSerializer().fields
    assert list(fields) == ["scope", *KINDS, "active", "search"]
    assert fields["entry"].help_text == "Segments of this entry (entry, entry_start)."
    assert fields["npc"].help_text == "Segments of this NPC."


@pytest.mark.django_db
@EVERY_KIND
def test_the_segment_list_of_the_api_filters_by_an_object_of_each_kind(kind: Kind) -> None:
    mine, _, segment = two_objects_with_segments(kind)
    client = Client(
        HTTP_AUTHORIZATION=f"Api-Key {api_key_create(actor=None, name='r', scope='read')[1]}"
    )
    response = client.get("/api/v1/segments/", {kind.key: mine.slug})
    assert response.status_code == 200
    assert [row["id"] for row in response.json()["results"]] == [segment.pk]
    assert response.json()["results"][0]["ref"] == mine.slug


@pytest.mark.django_db
@EVERY_KIND
def test_a_segments_api_history_names_the_object_of_each_kind(kind: Kind) -> None:
    mine, other, segment = two_objects_with_segments(kind)
    segments.segment_update(actor=None, segment=segment, ref=other)
    client = Client(
        HTTP_AUTHORIZATION=f"Api-Key {api_key_create(actor=None, name='r', scope='read')[1]}"
    )
    history = client.get(f"/api/v1/segments/{segment.pk}/history/").json()["results"]
    assert [record["ref"] for record in history] == [other.slug, mine.slug]


@pytest.mark.django_db
@EVERY_KIND
def test_the_studio_lists_filters_and_searches_segments_by_an_object_of_each_kind(
    kind: Kind,
) -> None:
    mine, _, segment = two_objects_with_segments(kind)
    assert list(selectors.segment_list(obj=mine)) == [segment]
    assert list(selectors.segment_list(q=mine.name)) == [segment]


@pytest.mark.django_db
@EVERY_KIND
def test_the_studio_history_shows_a_move_to_another_object_of_each_kind(kind: Kind) -> None:
    mine, other, segment = two_objects_with_segments(kind)
    segments.segment_update(actor=None, segment=segment, ref=other)
    assert selectors.segment_revisions(segment)[0].changed_fields == ["object"]
    client = Client()
    client.force_login(UserFactory())
    page = client.get(reverse("studio:segment_history", args=[segment.pk])).content.decode()
    assert mine.name in page and other.name in page


@EVERY_KIND
def test_the_segment_editor_shows_errors_about_an_object_of_each_kind_on_its_picker(
    kind: Kind,
) -> None:
    assert SEGMENT_ERROR_FIELDS[kind.key] == "object"
