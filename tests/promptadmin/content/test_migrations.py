"""The hand-written data migration: segment titles and the demo's keys leave the metadata."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("promptadmin", "0007_catalog_revision_segment_title_entry_cast")]
AFTER = [("promptadmin", "0008_segment_title_and_import_key_from_metadata")]


def migrate(targets: list[tuple[str, str]]) -> Any:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_titles_and_demo_keys_move_out_of_the_metadata_and_back() -> None:
    apps = migrate(BEFORE)
    Segment = apps.get_model("promptadmin", "Segment")
    titled = Segment.objects.create(
        scope="core",
        content="You narrate.",
        metadata={"title": " Old wars ", "demo_key": "c-narrator", "source": "wiki"},
    )
    too_long = Segment.objects.create(scope="core", content="x", metadata={"title": "t" * 201})
    plain = Segment.objects.create(scope="core", content="y", metadata={"source": "notes"})
    try:
        apps = migrate(AFTER)
        Segment = apps.get_model("promptadmin", "Segment")
        row = Segment.objects.get(pk=titled.pk)
        assert (row.title, row.import_key, row.metadata) == (
            "Old wars",
            "c-narrator",
            {"source": "wiki"},
        )
        # A title the column cannot hold stays where it was: no word is lost.
        assert Segment.objects.get(pk=too_long.pk).metadata == {"title": "t" * 201}
        assert Segment.objects.get(pk=plain.pk).metadata == {"source": "notes"}

        apps = migrate(BEFORE)
        Segment = apps.get_model("promptadmin", "Segment")
        back = Segment.objects.get(pk=titled.pk)
        assert back.metadata == {"source": "wiki", "title": "Old wars", "demo_key": "c-narrator"}
        assert back.title == ""
    finally:
        migrate(executor_leaf())


def executor_leaf() -> list[tuple[str, str]]:
    executor = MigrationExecutor(connection)
    return executor.loader.graph.leaf_nodes()


@pytest.mark.django_db(transaction=True)
def test_imported_npc_segments_take_the_tier_their_metadata_kept_and_give_it_back() -> None:
    """Migration 0011: imported NPC rows at tier 0 with ``"tier": n`` in their metadata."""
    apps = migrate([("promptadmin", "0010_import_jobs")])
    npc = apps.get_model("promptadmin", "NPC").objects.create(slug="oren", name="Oren")
    Segment = apps.get_model("promptadmin", "Segment")
    History = apps.get_model("promptadmin", "HistoricalSegment")

    def imported(legacy_id: str, **fields: Any) -> Any:
        return Segment.objects.create(
            scope="npc", npc=npc, content="Scarred.", legacy_id=legacy_id, **fields
        )

    lost = imported("1", metadata={"tier": 2, "mood": "wary"})
    edited = imported("2", metadata={"tier": 1}, revision=2)  # someone set tier 0 since
    odd = imported("3", metadata={"tier": "high"})
    own = Segment.objects.create(scope="npc", npc=npc, content="x", metadata={"tier": 1})
    try:
        apps = migrate([("promptadmin", "0013_npc_tier_from_imported_metadata")])
        Segment = apps.get_model("promptadmin", "Segment")
        row = Segment.objects.get(pk=lost.pk)
        assert (row.tier, row.metadata, row.revision) == (2, {"mood": "wary"}, 2)
        record = History.objects.filter(id=lost.pk).order_by("-history_id").first()
        assert (record.tier, record.history_change_reason) == (
            2,
            "Tier taken from the imported metadata",
        )
        for untouched in (edited, odd, own):
            again = Segment.objects.get(pk=untouched.pk)
            assert (again.tier, again.metadata) == (0, untouched.metadata)

        apps = migrate([("promptadmin", "0010_import_jobs")])
        back = apps.get_model("promptadmin", "Segment").objects.get(pk=lost.pk)
        assert (back.tier, back.metadata, back.revision) == (0, {"mood": "wary", "tier": 2}, 3)
    finally:
        migrate(executor_leaf())
