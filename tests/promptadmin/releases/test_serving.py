"""Serving: the label map in the shared cache follows every move, whatever the timing."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection, transaction

from promptadmin.core.cache import shared_store
from promptadmin.releases import services, serving
from promptadmin.releases.models import Release
from tests.factories import EntryFactory, WorldFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def releases() -> dict[str, Release]:
    cache.clear()
    serving.forget()
    EntryFactory(slug="drowned-bell", world=WorldFactory(slug="iron-coast"))
    return {
        name: services.release_create(actor=None, name=name)
        for name in ("r-one", "r-two", "r-three")
    }


def test_a_label_map_read_before_a_later_move_committed_never_stays_cached(
    releases: dict[str, Release],
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        services.release_label_set(actor=None, label="production", release=releases["r-one"])
    assert serving.labels() == {"production": "r-one"}

    # Two moves commit close together, and their on-commit stores run in the wrong order:
    # the first move's store reads the map, the second move commits and stores its own,
    # then the first store writes what it read.
    read = serving.labels_from_database
    later: list[Any] = []

    def read_then_a_later_move_commits() -> Any:
        found = read()
        if not later:
            with django_capture_on_commit_callbacks() as callbacks:
                services.release_label_set(
                    actor=None, label="production", release=releases["r-three"]
                )
            later.extend(callbacks)
            for callback in callbacks:
                callback()
        return found

    monkeypatch.setattr(serving, "labels_from_database", read_then_a_later_move_commits)
    with django_capture_on_commit_callbacks() as first:
        services.release_label_set(actor=None, label="production", release=releases["r-two"])
    for callback in first:
        callback()

    assert later, "the second move did not commit during the first one's store"
    assert serving.labels() == {"production": "r-three"}
    assert serving.resolve(None).name == "r-three"


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_label_map_read_between_two_moves_committing_out_of_order_never_stays_cached(
    releases: dict[str, Release],
) -> None:
    # Two labels move at once, and the move made first (its row numbered first) commits
    # last: a map read between the two commits, stored last, must still be seen as older.
    for label in ("production", "staging"):
        services.release_label_set(actor=None, label=label, release=releases["r-one"])
    moved, commit = threading.Event(), threading.Event()

    def move_production() -> None:
        try:
            with transaction.atomic():
                services.release_label_set(
                    actor=None, label="production", release=releases["r-two"]
                )
                moved.set()
                commit.wait(10)
        finally:
            connection.close()

    other = threading.Thread(target=move_production)
    other.start()
    assert moved.wait(10)
    services.release_label_set(actor=None, label="staging", release=releases["r-three"])
    between = serving.labels_from_database()  # production's move is not committed yet
    commit.set()
    other.join(10)

    # The staging move's store arrives last, with the map it read between the commits.
    loads = iter([between])
    shared_store(
        serving.LABELS_KEY,
        lambda: next(loads, None) or serving.labels_from_database(),
        serving.label_map_version,
    )

    assert serving.labels() == {"production": "r-two", "staging": "r-three"}
