"""Lore services and selectors: validation through the assembler's entry, revisions,
restore, batch edits, and the lore book a process keeps."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.cache import cache
from django.core.exceptions import ValidationError

import assembler.lore
from assembler.lore import matcher_key
from promptadmin.core.errors import StaleRevisionError
from promptadmin.lore import selectors, services
from promptadmin.lore.models import LoreEntry
from tests.factories import WorldFactory

pytestmark = pytest.mark.django_db


def make(world: Any = None, **fields: Any) -> LoreEntry:
    values = {"content": "The chapel bell has not rung.", "keys": ["bell"], **fields}
    return services.lore_entry_create(actor=None, world=world, **values)


def test_a_change_that_changes_nothing_saves_no_revision() -> None:
    entry = make(title="Bell")
    same = services.lore_entry_update(actor=None, entry=entry, title="Bell", keys=["bell"])
    assert same.revision == 1
    assert entry.history.count() == 1


def test_a_stale_revision_is_refused_under_the_row_lock() -> None:
    entry = make()
    services.lore_entry_update(actor=None, entry=entry, expected_revision=1, priority=2)
    with pytest.raises(StaleRevisionError, match="lore entry"):
        services.lore_entry_update(actor=None, entry=entry, expected_revision=1, priority=5)
    assert LoreEntry.objects.get().priority == 2


def test_restoring_a_revision_of_a_world_since_deleted_is_refused() -> None:
    gone = WorldFactory(slug="gone")
    entry = make(gone)
    services.lore_entry_update(actor=None, entry=entry, world=None)
    gone.delete()
    with pytest.raises(ValidationError, match="no longer exists"):
        services.lore_entry_restore(actor=None, entry=entry, revision=1)


def test_a_batch_edit_sets_group_priority_and_active_of_a_selection() -> None:
    a, b, c = make(title="A"), make(title="B"), make(title="C")
    saved = services.lore_entries_update(
        actor=None, revisions={a.pk: 1, b.pk: 1}, group="bells", active=False
    )
    assert [entry.pk for entry in saved] == [a.pk, b.pk]
    rows = {row.pk: row for row in LoreEntry.objects.all()}
    assert (rows[a.pk].group, rows[a.pk].active, rows[a.pk].revision) == ("bells", False, 2)
    assert (rows[c.pk].group, rows[c.pk].active, rows[c.pk].revision) == ("", True, 1)


def test_a_batch_edit_changes_nothing_if_any_entry_moved_on() -> None:
    a, b = make(title="A"), make(title="B")
    services.lore_entry_update(actor=None, entry=b, priority=9)
    with pytest.raises(StaleRevisionError):
        services.lore_entries_update(actor=None, revisions={a.pk: 1, b.pk: 1}, priority=3)
    assert LoreEntry.objects.get(pk=a.pk).priority == 0


@pytest.mark.parametrize(
    ("revisions", "changes", "words"),
    [
        ({}, {"priority": 1}, "at least one"),
        ({999999: 1}, {"priority": 1}, "no longer exist"),
        (None, {}, "Choose what to change"),
        (None, {"group": " "}, "group name"),
    ],
)
def test_a_batch_edit_refuses_bad_input(revisions, changes, words) -> None:  # type: ignore[no-untyped-def]
    entry = make()
    revisions = {entry.pk: 1} if revisions is None else revisions
    with pytest.raises(ValidationError, match=words):
        services.lore_entries_update(actor=None, revisions=revisions, **changes)


def test_the_book_of_a_world_holds_its_active_entries_and_those_of_every_world() -> None:
    coast, marsh = WorldFactory(slug="coast"), WorldFactory(slug="marsh")
    own = make(coast, title="Own")
    everywhere = make(None, title="Everywhere")
    make(coast, title="Off", active=False)
    make(marsh, title="Elsewhere")
    book = selectors.lore_book("coast")
    assert book is not None
    assert [entry.id for entry in book.entries] == [own.pk, everywhere.pk]
    assert selectors.lore_book("nowhere") is not None  # every world's entries still apply


def test_a_process_keeps_the_book_until_lore_changes(  # type: ignore[no-untyped-def]
    django_assert_num_queries, django_capture_on_commit_callbacks
) -> None:
    coast = WorldFactory(slug="coast")
    make(coast)
    book = selectors.lore_book("coast")
    with django_assert_num_queries(0):
        assert selectors.lore_book("coast") is book
    with django_capture_on_commit_callbacks(execute=True):
        make(coast, title="Gate", keys=["gate"])
    changed = selectors.lore_book("coast")
    assert changed is not book and len(changed.entries) == 2  # type: ignore[union-attr]


def test_a_world_whose_lore_did_not_change_keeps_its_built_book(  # type: ignore[no-untyped-def]
    django_capture_on_commit_callbacks,
) -> None:
    coast, marsh = WorldFactory(slug="coast"), WorldFactory(slug="marsh")
    make(coast)
    book = selectors.lore_book("coast")
    with django_capture_on_commit_callbacks(execute=True):
        make(marsh, title="Reed", keys=["reed"])
    # A new generation: one query, and the matcher already built is used again.
    assert selectors.lore_book("coast") is book


def test_a_large_books_matcher_is_read_from_the_cache_by_a_new_process(  # type: ignore[no-untyped-def]
    monkeypatch, caplog
) -> None:
    coast = WorldFactory(slug="coast")
    make(coast, title="Bell", keys=["bell", "Bell Tower"])
    make(None, title="Gate", keys=["gate"])
    monkeypatch.setattr(selectors, "SHARED_MATCHER_FROM", 2)
    built = selectors.lore_book("coast")
    assert built is not None
    # Another process: none of this one's books, the matcher in the shared cache.
    for books in (selectors._by_generation, selectors._by_content):
        books.clear()

    def no_build(_entries: Any) -> Any:
        raise AssertionError("the matcher was built again")

    with monkeypatch.context() as patched:
        patched.setattr(assembler.lore, "_build_automaton", no_build)
        read = selectors.lore_book("coast")
    assert read is not None and read is not built
    assert (
        read.scan("the gate of the bell tower").keys()
        == built.scan("the gate of the bell tower").keys()
    )
    # Something else under the key: the book is built, as if it were not there.
    key = f"lore:matcher:{matcher_key(built.entries)}"
    cache.set(key, ("not", "a", "matcher"))
    selectors._by_content.clear()
    selectors._by_generation.clear()
    rebuilt = selectors.lore_book("coast")
    assert rebuilt is not None and len(rebuilt.scan("bell gate")) == 2
    assert "unreadable" in caplog.text


def test_a_small_book_is_built_not_read_from_the_cache(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    make(None, title="Gate", keys=["gate"])
    book = selectors.lore_book(None)
    assert book is not None and len(book.entries) < selectors.SHARED_MATCHER_FROM
    assert cache.get(f"lore:matcher:{matcher_key(book.entries)}") is None
