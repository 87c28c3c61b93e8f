"""Reviewing deprecated segments: copy, dismiss, undo (single and bulk), never deleting."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied, ValidationError

from promptadmin.content.models import Segment
from promptadmin.content.services import deprecated as review
from promptadmin.content.services import segments
from promptadmin.content.services.api_keys import api_key_create
from tests.factories import EntryFactory, UserFactory, WorldFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin() -> object:
    user = UserFactory()
    user.groups.add(Group.objects.get(name="admin"))
    return user


def legacy(scope: str = "player", content: str = "Old text.", ref: str | None = None) -> Segment:
    metadata = {"original_ref": ref} if ref else {}
    return segments.segment_import_legacy(
        actor=None, scope=scope, content=content, metadata=metadata
    )


def test_copy_creates_a_linked_segment_and_marks_the_source(admin: object) -> None:
    world = WorldFactory(slug="iron-coast")
    source = legacy()
    copy = review.deprecated_copy(
        actor=admin, segment=source, scope="world", ref=world, content="Edited.", active=True
    )
    assert (copy.scope, copy.world, copy.content, copy.active) == ("world", world, "Edited.", True)
    assert copy.metadata["copied_from"] == source.pk
    source.refresh_from_db()
    assert (review.status_of(source), source.metadata["copies"]) == ("copied", [copy.pk])
    assert (source.content, source.active, source.scope) == ("Old text.", False, "player")
    last = source.history.order_by("-history_id").first()
    assert (last.history_user, last.revision) == (admin, 2)


def test_copy_keeps_the_text_by_default_and_refuses_a_deprecated_target(admin: object) -> None:
    source = legacy(content="Roll well.")
    assert review.deprecated_copy(actor=admin, segment=source, scope="core", ref=None).content == (
        "Roll well."
    )
    with pytest.raises(ValidationError) as exc:
        review.deprecated_copy(actor=admin, segment=source, scope="rng", ref=None)
    assert "deprecated" in exc.value.message_dict["scope"][0]


def test_dismiss_needs_a_reason_and_undo_puts_it_back(admin: object) -> None:
    source = legacy()
    with pytest.raises(ValidationError) as exc:
        review.deprecated_dismiss(actor=admin, segment=source, reason="  ")
    assert "reason" in exc.value.message_dict
    review.deprecated_dismiss(actor=admin, segment=source, reason="Now from the caller.")
    source.refresh_from_db()
    assert (review.status_of(source), source.metadata["review_reason"]) == (
        "dismissed",
        "Now from the caller.",
    )
    with pytest.raises(ValidationError):
        review.deprecated_copy(actor=admin, segment=source, scope="core", ref=None)
    review.deprecated_undo(actor=admin, segment=source)
    source.refresh_from_db()
    assert review.status_of(source) == "pending" and "review_reason" not in source.metadata
    assert source.history.count() == 3  # imported, dismissed, undone: nothing rewritten


def test_undoing_a_copy_deactivates_the_copy_and_deletes_nothing(admin: object) -> None:
    source = legacy()
    copy = review.deprecated_copy(actor=admin, segment=source, scope="core", ref=None, active=True)
    review.deprecated_undo(actor=admin, segment=source)
    copy.refresh_from_db()
    source.refresh_from_db()
    assert not copy.active
    assert review.status_of(source) == "pending"
    assert source.metadata["undone_copies"] == [copy.pk]
    with pytest.raises(ValidationError, match="nothing to undo"):
        review.deprecated_undo(actor=admin, segment=source)


def test_a_player_row_whose_reference_is_an_entry_suggests_that_entry() -> None:
    entry = EntryFactory(slug="drowned-bell", name="The Drowned Bell")
    WorldFactory(slug="twice")
    EntryFactory(slug="twice")
    rows = [legacy(ref="drowned-bell"), legacy(ref="twice"), legacy(ref="nowhere"), legacy()]
    hints = review.suggestions(rows)
    assert list(hints) == [rows[0].pk]  # ambiguous, unknown and empty suggest nothing
    hint = hints[rows[0].pk]
    assert (hint.scope, hint.kind, hint.slug, hint.name) == (
        "entry",
        "entry",
        entry.slug,
        entry.name,
    )


def test_bulk_copy_to_suggestions_and_bulk_dismiss_are_all_or_nothing(admin: object) -> None:
    EntryFactory(slug="drowned-bell")
    good, bad = legacy(ref="drowned-bell"), legacy()
    with pytest.raises(ValidationError) as exc:
        review.deprecated_bulk(actor=admin, action="copy", ids=[good.pk, bad.pk])
    assert str(bad.pk) in exc.value.message_dict["scope"][0]
    assert Segment.objects.count() == 2  # nothing copied
    copies = review.deprecated_bulk(actor=admin, action="copy", ids=[good.pk])
    assert [(c.scope, c.entry.slug) for c in copies] == [("entry", "drowned-bell")]
    dismissed = review.deprecated_bulk(actor=admin, action="dismiss", ids=[bad.pk], reason="Dup.")
    assert [review.status_of(s) for s in dismissed] == ["dismissed"]


def test_bulk_copy_to_one_target(admin: object) -> None:
    world = WorldFactory()
    ids = [legacy().pk, legacy(scope="rng").pk]
    copies = review.deprecated_bulk(
        actor=admin, action="copy", ids=ids, scope="world", ref=world, active=False
    )
    assert [(c.world, c.active) for c in copies] == [(world, False), (world, False)]
    with pytest.raises(ValidationError, match="No deprecated segment"):
        review.deprecated_bulk(actor=admin, action="dismiss", ids=[copies[0].pk], reason="x")


def test_the_list_filters_by_scope_status_and_text(admin: object) -> None:
    a, b, c = legacy(content="Tide high."), legacy(scope="rng", content="Roll."), legacy()
    review.deprecated_dismiss(actor=admin, segment=c, reason="No.")
    assert list(review.deprecated_segments(status="pending")) == [a, b]
    assert list(review.deprecated_segments(status="dismissed")) == [c]
    assert list(review.deprecated_segments(scope="rng")) == [b]
    assert list(review.deprecated_segments(search="tide HIGH")) == [a]
    assert review.deprecated_counts() == {"pending": 2, "copied": 0, "dismissed": 1}


def test_viewers_authors_and_write_keys_cannot_migrate() -> None:
    source = legacy()
    author = UserFactory()
    author.groups.add(Group.objects.get(name="author"))
    viewer = UserFactory()
    key = api_key_create(actor=None, name="w", scope="write")[0]
    for actor in (author, viewer, key):
        with pytest.raises(PermissionDenied):
            review.deprecated_dismiss(actor=actor, segment=source, reason="x")
        with pytest.raises(PermissionDenied):
            review.deprecated_copy(actor=actor, segment=source, scope="core", ref=None)
    assert review.status_of(Segment.objects.get(pk=source.pk)) == "pending"


def test_a_copy_into_an_active_segment_invalidates_the_assembly_cache(
    admin: object, django_capture_on_commit_callbacks: Any
) -> None:
    source = legacy()
    with django_capture_on_commit_callbacks() as callbacks:
        review.deprecated_copy(actor=admin, segment=source, scope="core", ref=None, active=True)
    assert len(callbacks) >= 1
