"""The working copy's snapshot: one consistent state of the content, whatever is saved
while it is read."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.db import connection, transaction

from promptadmin.content.models import Segment
from promptadmin.content.services import segments
from promptadmin.releases import services, snapshot
from promptadmin.releases.bundles import release_content
from promptadmin.releases.models import Release
from promptadmin.releases.snapshot import working_content
from tests.factories import EntryFactory, NPCFactory, WorldFactory, make_segment


def small_game() -> dict[str, Any]:
    world = WorldFactory(slug="iron-coast")
    entry = EntryFactory(slug="drowned-bell", world=world)
    npc = NPCFactory(slug="marta-vell", name="Marta Vell")
    return {
        "entry": entry,
        "npc": npc,
        "core": make_segment(scope="core", content="You are the narrator."),
        "tone": make_segment(scope="world", ref=world, content="Grey water.", title="Tone"),
        "marta": make_segment(scope="npc", ref=npc, content="Marta, harbourmaster."),
    }


@pytest.mark.django_db
def test_a_segment_whose_object_the_catalog_lacks_is_left_out_not_a_crash(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Under READ COMMITTED an NPC and its segment can be saved between the catalog query
    # and the segment query; replay that interleaving.
    game = small_game()
    read_before = snapshot.working_catalog()
    late = NPCFactory(slug="late-npc")
    make_segment(scope="npc", ref=late, content="Saved while the release was made.")
    monkeypatch.setattr(snapshot, "working_catalog", lambda: read_before)

    content = working_content()

    assert set(content.segments) == {game[name].pk for name in ("core", "tone", "marta")}
    owners = {
        row["slug"] for kind in ("worlds", "npcs", "entries") for row in content.catalog[kind]
    }
    assert all(row.owner in owners for row in content.segments.values() if row.owner)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_working_copy_is_read_in_one_repeatable_read_snapshot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    game = small_game()
    seen: dict[str, str] = {}
    read_catalog = snapshot.working_catalog

    def save_elsewhere() -> None:
        # Another connection commits an edit, and a new NPC with its segment.
        try:
            segments.segment_update(actor=None, segment=game["tone"], content="Fog, always fog.")
            newcomer = NPCFactory(slug="newcomer")
            make_segment(scope="npc", ref=newcomer, content="A stranger on the pier.")
        finally:
            connection.close()

    def catalog_then_concurrent_saves() -> Any:
        with connection.cursor() as cursor:
            cursor.execute("SHOW transaction_isolation")
            seen["isolation"] = cursor.fetchone()[0]
        found = read_catalog()
        thread = threading.Thread(target=save_elsewhere)
        thread.start()
        thread.join(10)
        return found

    monkeypatch.setattr(snapshot, "working_catalog", catalog_then_concurrent_saves)
    release = services.release_create(actor=None, name="r-one")

    assert seen["isolation"] == "repeatable read"
    content = release_content(release)
    assert content.segments[game["tone"].pk].content == "Grey water."
    assert {row.owner for row in content.segments.values()} == {"", "iron-coast", "marta-vell"}
    # The saves did happen: the next snapshot sees them.
    monkeypatch.setattr(snapshot, "working_catalog", read_catalog)
    later = working_content()
    assert later.segments[game["tone"].pk].content == "Fog, always fog."
    assert Segment.objects.filter(npc__slug="newcomer").get().pk in later.segments


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_release_is_written_at_the_default_isolation() -> None:
    # Storing texts other releases may store meanwhile (ON CONFLICT DO NOTHING) and moving
    # labels under a row lock both rely on READ COMMITTED: only the snapshot is repeatable.
    small_game()
    seen: list[str] = []
    store = services._store

    def recording_store(*args: Any, **kwargs: Any) -> Any:
        with connection.cursor() as cursor:
            cursor.execute("SHOW transaction_isolation")
            seen.append(cursor.fetchone()[0])
        return store(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(services, "_store", recording_store)
        services.release_create(actor=None, name="r-one")
    assert seen == ["read committed"]


@pytest.mark.django_db
def test_the_snapshot_reads_the_callers_transaction_when_inside_one(
    django_assert_num_queries: Any,
) -> None:
    small_game()
    # Inside the caller's transaction it can neither change the isolation nor needs a
    # savepoint: the seven queries of the read alone (lore the seventh).
    with django_assert_num_queries(7):
        working_content()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_label_and_a_release_name_made_at_the_same_time_never_collide() -> None:
    # A label 'qa' is being set (not committed yet) while a release 'qa' is made: the
    # release waits for the label to commit, then sees it and is refused.
    small_game()
    services.release_create(actor=None, name="r-one")
    release = Release.objects.get(name="r-one")
    made: list[Any] = []

    def make_release() -> None:
        try:
            made.append(services.release_create(actor=None, name="qa"))
        except ValidationError as exc:
            made.append(exc)
        finally:
            connection.close()

    with transaction.atomic():
        services.release_label_set(actor=None, label="qa", release=release)
        other = threading.Thread(target=make_release)
        other.start()
        # Commit once the release waits for this transaction (or, without a lock, is made).
        for _ in range(1000):
            if made or waiting_for_a_lock():
                break
            other.join(0.01)
    other.join(10)

    assert len(made) == 1 and isinstance(made[0], ValidationError), made
    assert "name" in made[0].message_dict
    assert not Release.objects.filter(name="qa").exists()


def waiting_for_a_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_stat_activity a USING (pid) "
            "WHERE NOT l.granted AND a.datname = current_database())"
        )
        return bool(cursor.fetchone()[0])
