"""The segments' search index is written as rows are (``fastupdate = off``), as the lore
book's is, and what waits in its pending list is merged in now.

With the default (``fastupdate = on``) PostgreSQL appends new and changed rows' words to
a pending list of up to 4 MB, merged into the index only by a vacuum or when the list is
full, and every search reads that whole list: after a bulk import (or many edits since
the last vacuum) a search of 100,000 segments read about 500 pages of it before its
answer. Segments are written by people, one at a time (and imports are rare), far less
often than they are searched."""

from typing import Any

from django.db import migrations

WRITTEN_AT_ONCE = (
    "SELECT gin_clean_pending_list('segment_search');"
    " ALTER INDEX segment_search SET (fastupdate = off);"
)
PENDING_LIST = "ALTER INDEX segment_search RESET (fastupdate);"


def run(sql: str) -> Any:
    def operation(apps: Any, schema_editor: Any) -> None:
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql)

    return operation


class Migration(migrations.Migration):
    dependencies = [
        ("promptadmin", "0013_npc_tier_from_imported_metadata"),
    ]

    operations = [
        migrations.RunPython(run(WRITTEN_AT_ONCE), run(PENDING_LIST), elidable=False),
    ]
