"""Move ``metadata["title"]`` into the ``title`` column and the demo's ``metadata["demo_key"]``
into ``import_key``, on segments and on their recorded history (so that a restore of an old
revision brings its title back). Reversible: the keys go back into the metadata."""

from __future__ import annotations

from typing import Any

from django.db import migrations

TITLE_MAX = 200
KEY_MAX = 64


def _forwards(model: Any) -> None:
    for row in model.objects.filter(metadata__has_any_keys=["title", "demo_key"]).iterator():
        metadata = dict(row.metadata) if isinstance(row.metadata, dict) else {}
        title = metadata.get("title")
        # Keep anything that does not fit the column where it was: no word is lost.
        if isinstance(title, str) and len(title.strip()) <= TITLE_MAX:
            row.title = title.strip()
            del metadata["title"]
        key = metadata.get("demo_key")
        if isinstance(key, str) and len(key) <= KEY_MAX:
            row.import_key = key
            del metadata["demo_key"]
        row.metadata = metadata
        row.save(update_fields=["title", "import_key", "metadata"])


def _backwards(model: Any) -> None:
    for row in model.objects.exclude(title="", import_key="").iterator():
        metadata = dict(row.metadata) if isinstance(row.metadata, dict) else {}
        if row.title:
            metadata["title"] = row.title
        if row.import_key:
            metadata["demo_key"] = row.import_key
        row.metadata = metadata
        row.title = ""
        row.import_key = ""
        row.save(update_fields=["title", "import_key", "metadata"])


def forwards(apps: Any, schema_editor: Any) -> None:
    for name in ("Segment", "HistoricalSegment"):
        _forwards(apps.get_model("promptadmin", name))


def backwards(apps: Any, schema_editor: Any) -> None:
    for name in ("Segment", "HistoricalSegment"):
        _backwards(apps.get_model("promptadmin", name))


class Migration(migrations.Migration):
    dependencies = [("promptadmin", "0007_catalog_revision_segment_title_entry_cast")]

    operations = [migrations.RunPython(forwards, backwards)]
