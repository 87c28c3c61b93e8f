"""Migration 0004 deactivates active deprecated rows before the scope constraint is checked.

Run on a database as an old deployment has it: the constraint missing and active rows of
the deprecated scopes present. Then backwards, and forwards again.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

BEFORE = [("promptadmin", "0003_api_key")]
AFTER = [("promptadmin", "0004_deactivate_active_deprecated_segments")]
TABLE = "promptadmin_segment"


def migrate(targets: list[tuple[str, str]]) -> Any:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return MigrationExecutor(connection).loader.project_state(targets).apps


def constraint_state() -> str | None:
    """``valid``, ``not valid`` or None (missing) for the scope constraint."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT convalidated FROM pg_constraint WHERE conname = 'segment_scope_allowed'"
        )
        row = cursor.fetchone()
    return None if row is None else ("valid" if row[0] else "not valid")


@pytest.fixture
def old_database() -> Iterator[Any]:
    """Schema of 0003 without the scope constraint, holding active deprecated rows."""
    apps = migrate(BEFORE)
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE {TABLE} DROP CONSTRAINT segment_scope_allowed")
    World = apps.get_model("promptadmin", "World")
    Segment = apps.get_model("promptadmin", "Segment")
    world = World.objects.create(slug="iron-coast", name="Iron Coast")
    Segment.objects.create(scope="player", content="The player.", metadata={"title": "P"})
    Segment.objects.create(scope="rng", content="Roll.", metadata={"original_id": "mine"})
    Segment.objects.create(scope="input", content="Kept off.", active=False)
    Segment.objects.create(scope="world", world=world, content="Rust.")
    yield apps
    # Leave the test database at the latest migration for the tests that follow.
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


def rows(apps: Any) -> dict[str, tuple[bool, dict[str, Any]]]:
    Segment = apps.get_model("promptadmin", "Segment")
    return {s.content: (s.active, s.metadata) for s in Segment.objects.all()}


def test_forward_deactivates_active_deprecated_rows_then_adds_the_constraint(
    old_database: Any,
) -> None:
    assert constraint_state() is None
    apps = migrate(AFTER)
    assert constraint_state() == "valid"
    after = rows(apps)
    active, meta = after["The player."]
    assert not active
    assert (meta["deprecated_scope"], meta["title"], meta["original_ref"]) == ("player", "P", None)
    assert "migration 0004" in meta["migration_note"] and meta["deprecated_at"]
    assert after["Roll."][1]["original_id"] != "mine"  # recorded, the old value kept aside
    assert after["Kept off."] == (False, {})  # already inactive: untouched
    assert after["Rust."] == (True, {})  # allowed scopes: untouched
    History = apps.get_model("promptadmin", "HistoricalSegment")
    record = History.objects.get(content="The player.")
    assert record.history_change_reason == "Deactivated: deprecated scope (migration 0004)"
    Segment = apps.get_model("promptadmin", "Segment")
    with pytest.raises(IntegrityError), transaction.atomic():
        Segment.objects.filter(content="Roll.").update(active=True)


def test_backward_restores_every_row_as_it_was(old_database: Any) -> None:
    before = rows(old_database)
    migrate(AFTER)
    apps = migrate(BEFORE)
    assert rows(apps) == before
    # The old rows cannot satisfy the constraint: it checks new rows only, as before.
    assert constraint_state() == "not valid"
    apps = migrate(AFTER)  # and forwards again
    assert not rows(apps)["Roll."][0]
    assert constraint_state() == "valid"


def test_on_a_current_database_forward_and_back_keep_the_constraint() -> None:
    migrate(BEFORE)
    assert constraint_state() == "valid"
    migrate(AFTER)
    assert constraint_state() == "valid"
    migrate(BEFORE)
    assert constraint_state() == "valid"
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
