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
