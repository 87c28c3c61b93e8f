"""Reviewing deprecated segments: copy, dismiss, undo (single and bulk), never deleting."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from promptadmin.content.models import Segment
from promptadmin.content.services import deprecated as review
from promptadmin.content.services import segments
from promptadmin.content.services.api_keys import api_key_create
from promptadmin.core import cache as content_cache
from promptadmin.core.roles import role_of
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


def test_bulk_copy_goes_to_each_suggestion_and_skips_rows_without_one(admin: object) -> None:
    EntryFactory(slug="drowned-bell")
    good, bad = legacy(ref="drowned-bell"), legacy()
    result = review.deprecated_bulk(actor=admin, action="copy", ids=[bad.pk, good.pk])
    assert [(c.scope, c.entry.slug, c.metadata["copied_from"]) for c in result.done] == [
        ("entry", "drowned-bell", good.pk)
    ]
    assert [(s.id, s.why) for s in result.skipped] == [(bad.pk, review.NO_TARGET)]
    assert result.skipped[0].reason.startswith(f"Segment #{bad.pk} has no obvious target")
    assert review.status_of(Segment.objects.get(pk=bad.pk)) == "pending"
    assert Segment.objects.get(pk=good.pk).metadata["copies"] == [result.done[0].pk]


def test_bulk_copy_to_one_target(admin: object) -> None:
    world = WorldFactory()
    ids = [legacy().pk, legacy(scope="rng").pk]
    copies = review.deprecated_bulk(
        actor=admin, action="copy", ids=ids, scope="world", ref=world, active=False
    ).done
    assert [(c.world, c.active, c.token_count > 0) for c in copies] == [(world, False, True)] * 2
    assert [c.history.get().history_user for c in copies] == [admin, admin]
    with pytest.raises(ValidationError, match="No deprecated segment"):
        review.deprecated_bulk(actor=admin, action="dismiss", ids=[copies[0].pk], reason="x")


def test_bulk_dismiss_skips_copied_and_already_dismissed_rows_and_says_why(admin: object) -> None:
    pending, copied, dismissed = legacy(), legacy(), legacy()
    review.deprecated_copy(actor=admin, segment=copied, scope="core", ref=None)
    review.deprecated_dismiss(actor=admin, segment=dismissed, reason="Earlier.")
    ids = [pending.pk, copied.pk, dismissed.pk]
    result = review.deprecated_bulk(actor=admin, action="dismiss", ids=ids, reason="Gone.")
    assert [row.pk for row in result.done] == [pending.pk]
    assert [(s.id, s.reason) for s in result.skipped] == [
        (copied.pk, f"Segment #{copied.pk} was copied: undo the copy before dismissing it."),
        (dismissed.pk, f"Segment #{dismissed.pk} was dismissed already."),
    ]
    rows = {row.pk: row for row in Segment.objects.filter(pk__in=ids)}
    assert rows[pending.pk].metadata["review_reason"] == "Gone."
    assert review.status_of(rows[copied.pk]) == "copied"
    assert rows[dismissed.pk].metadata["review_reason"] == "Earlier."
    last = rows[pending.pk].history.order_by("-history_id").first()
    assert (last.history_user, last.revision, last.history_type) == (admin, 2, "~")


def test_bulk_copy_skips_dismissed_and_already_copied_rows(admin: object) -> None:
    pending, copied, dismissed = legacy(), legacy(), legacy()
    first = review.deprecated_copy(actor=admin, segment=copied, scope="core", ref=None)
    review.deprecated_dismiss(actor=admin, segment=dismissed, reason="No.")
    ids = [pending.pk, copied.pk, dismissed.pk]
    result = review.deprecated_bulk(actor=admin, action="copy", ids=ids, scope="core")
    assert [c.metadata["copied_from"] for c in result.done] == [pending.pk]
    assert [(s.id, s.why) for s in result.skipped] == [
        (copied.pk, review.ALREADY_DONE[("copy", "copied")]),
        (dismissed.pk, review.NOT_APPLICABLE[("copy", "dismissed")]),
    ]
    assert Segment.objects.get(pk=copied.pk).metadata["copies"] == [first.pk]


def test_bulk_undo_puts_copied_and_dismissed_rows_back_and_skips_pending_ones(
    admin: object, django_capture_on_commit_callbacks: Any
) -> None:
    copied, dismissed, pending = legacy(), legacy(), legacy()
    copy = review.deprecated_copy(actor=admin, segment=copied, scope="core", ref=None, active=True)
    review.deprecated_dismiss(actor=admin, segment=dismissed, reason="No.")
    ids = [copied.pk, dismissed.pk, pending.pk]
    with django_capture_on_commit_callbacks() as callbacks:
        result = review.deprecated_bulk(actor=admin, action="undo", ids=ids)
    assert len(callbacks) == 1  # an active copy was deactivated: assembly changes
    assert [row.pk for row in result.done] == [copied.pk, dismissed.pk]
    assert [s.reason for s in result.skipped] == [
        f"Segment #{pending.pk} is pending: there is nothing to undo."
    ]
    rows = {row.pk: row for row in Segment.objects.filter(pk__in=ids)}
    assert [review.status_of(row) for row in rows.values()] == ["pending"] * 3
    assert rows[copied.pk].metadata["undone_copies"] == [copy.pk]
    assert "review_reason" not in rows[dismissed.pk].metadata
    copy.refresh_from_db()
    assert (copy.active, copy.revision) == (False, 2)
    assert copy.history.order_by("-history_id").first().history_user == admin
    # Undone, the rows can be copied or dismissed again.
    again = review.deprecated_bulk(actor=admin, action="dismiss", ids=ids, reason="Now.")
    assert (len(again.done), again.skipped) == (3, [])


def test_a_row_a_bulk_copy_cannot_make_is_skipped_with_the_reason_in_one_sentence(
    admin: object,
) -> None:
    blank, fine = legacy(scope="rng", content="   "), legacy(scope="rng")
    result = review.deprecated_bulk(
        actor=admin, action="copy", ids=[blank.pk, fine.pk], scope="core", active=True
    )
    assert [copy.metadata["copied_from"] for copy in result.done] == [fine.pk]
    assert [skipped.reason for skipped in result.skipped] == [
        f"Segment #{blank.pk} cannot be copied: An active segment needs text: write some, or "
        "make it inactive."
    ]


def test_bad_bulk_input_refuses_the_whole_action_and_writes_nothing(
    admin: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(review, "BULK_BATCH_SIZE", 2)
    rows = [legacy() for _ in range(4)]
    core = segments.segment_create(actor=None, scope="core", content="Not deprecated.")
    ids = [row.pk for row in rows]
    with pytest.raises(ValidationError) as exc:  # the bad id is in the last batch
        review.deprecated_bulk(actor=admin, action="dismiss", ids=[*ids, core.pk], reason="x")
    assert exc.value.message_dict["ids"] == [f"No deprecated segment with id {core.pk}."]
    for kwargs, key in (
        ({"action": "burn"}, "action"),
        ({"action": "dismiss", "reason": " "}, "reason"),
        ({"action": "copy", "scope": "world", "ref": None}, "ref"),
        ({"action": "copy", "scope": "rng"}, "scope"),
    ):
        with pytest.raises(ValidationError) as exc:
            review.deprecated_bulk(actor=admin, ids=ids, **kwargs)
        assert key in exc.value.message_dict, kwargs
    with pytest.raises(ValidationError, match="at least one"):
        review.deprecated_bulk(actor=admin, action="undo", ids=[])
    assert [review.status_of(row) for row in Segment.objects.filter(pk__in=ids)] == ["pending"] * 4
    assert Segment.objects.count() == 5


@pytest.mark.parametrize("action", ["copy", "dismiss", "undo"])
def test_bulk_actions_process_every_row_with_a_fixed_number_of_queries_per_batch(
    admin: object, action: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    EntryFactory(slug="drowned-bell")
    WorldFactory(slug="iron-coast")
    refs = ["drowned-bell", "iron-coast", "entry:drowned-bell"]  # suggestions of two kinds
    options: dict[str, Any] = {"reason": "Old."} if action == "dismiss" else {}
    role_of(admin)  # the admin's role is read once, then remembered

    def queries(count: int, batch: int) -> int:
        ids = [legacy(ref=refs[n % len(refs)]).pk for n in range(count)]
        if action == "undo":
            review.deprecated_bulk(actor=admin, action="copy", ids=ids, active=True)
        monkeypatch.setattr(review, "BULK_BATCH_SIZE", batch)
        with CaptureQueriesContext(connection) as captured:
            result = review.deprecated_bulk(actor=admin, action=action, ids=ids, **options)
        assert (len(result.done), result.skipped) == (count, [])
        return len(captured)

    one_batch = queries(3, 3)
    assert queries(9, 9) == one_batch  # as many queries for 9 rows as for 3
    two, three = queries(6, 3), queries(9, 3)
    assert three - two == two - one_batch  # each batch of 3 costs the same


# Titles


def test_a_copy_takes_its_source_title(admin: object) -> None:
    titled = segments.segment_import_legacy(actor=None, scope="rng", content="Roll.")
    Segment.objects.filter(pk=titled.pk).update(title="Luck roll")
    stored_before_columns = legacy()  # a title still in the metadata, as before migration 0008
    long_title = "t" * 201
    Segment.objects.filter(pk=stored_before_columns.pk).update(metadata={"title": " Old state "})
    too_long = legacy()
    Segment.objects.filter(pk=too_long.pk).update(metadata={"title": long_title})
    single = review.deprecated_copy(actor=admin, segment=titled, scope="core", ref=None)
    assert (single.title, "title" in single.metadata) == ("Luck roll", False)
    copies = review.deprecated_bulk(
        actor=admin, action="copy", ids=[stored_before_columns.pk, too_long.pk], scope="core"
    ).done
    assert [(c.title, c.metadata.get("title")) for c in copies] == [
        ("Old state", None),
        ("", long_title),  # kept, word for word, where it fits
    ]


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
    before = content_cache.generation()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        review.deprecated_copy(actor=admin, segment=source, scope="core", ref=None, active=True)
    assert len(callbacks) >= 1
    # Whatever else commits, the content generation moved: no bundle cached before is read.
    assert content_cache.generation() != before
