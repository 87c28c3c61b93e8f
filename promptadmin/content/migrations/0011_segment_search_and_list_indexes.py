"""Indexes for the studio at a large game's size: the sorts the lists offer, and the
full-text search of segments (a GIN index, PostgreSQL only: see content.search)."""

from typing import Any

import django.contrib.postgres.indexes
import django.contrib.postgres.search
from django.db import migrations, models


class AddIndexOnPostgres(migrations.AddIndex):
    """An index in the model's state everywhere, built only on PostgreSQL (SQLite has no
    GIN indexes; its searches scan, which its size allows)."""

    def database_forwards(self, app_label: str, schema_editor: Any, *args: Any) -> None:
        if schema_editor.connection.vendor == "postgresql":
            super().database_forwards(app_label, schema_editor, *args)

    def database_backwards(self, app_label: str, schema_editor: Any, *args: Any) -> None:
        if schema_editor.connection.vendor == "postgresql":
            super().database_backwards(app_label, schema_editor, *args)


class Migration(migrations.Migration):
    dependencies = [
        ("promptadmin", "0010_import_jobs"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="entry",
            index=models.Index(fields=["name", "slug"], name="entry_by_name"),
        ),
        migrations.AddIndex(
            model_name="npc",
            index=models.Index(fields=["name", "slug"], name="npc_by_name"),
        ),
        migrations.AddIndex(
            model_name="ruleset",
            index=models.Index(fields=["name", "slug"], name="ruleset_by_name"),
        ),
        migrations.AddIndex(
            model_name="world",
            index=models.Index(fields=["name", "slug"], name="world_by_name"),
        ),
        migrations.AddIndex(
            model_name="segment",
            index=models.Index(fields=["updated_at", "id"], name="segment_by_update"),
        ),
        migrations.AddIndex(
            model_name="segment",
            index=models.Index(fields=["token_count", "id"], name="segment_by_tokens"),
        ),
        migrations.AddIndex(
            model_name="segment",
            index=models.Index(fields=["scope", "sort_order", "id"], name="segment_by_scope"),
        ),
        AddIndexOnPostgres(
            model_name="segment",
            index=django.contrib.postgres.indexes.GinIndex(
                django.contrib.postgres.search.CombinedSearchVector(
                    django.contrib.postgres.search.SearchVector(
                        "title", config="simple", weight="A"
                    ),
                    "||",
                    django.contrib.postgres.search.SearchVector(
                        "content", config="simple", weight="B"
                    ),
                    django.contrib.postgres.search.SearchConfig("simple"),
                ),
                name="segment_search",
            ),
        ),
    ]
