"""Indexes for the studio at a large game's size: the sorts the lists offer, and the
full-text search of segments (a stored tsvector and its GIN index, PostgreSQL only: see
content.search)."""

from django.db import migrations, models

from promptadmin.content.search import search_column


# A stored tsvector of each segment's title (weight A) and text (B), kept by PostgreSQL
# itself, and its GIN index: a search reads matches from the index and ranks them from
# the stored vectors, recomputing nothing. Outside the model (SQLite has neither, and
# content.search only reads it on PostgreSQL).
SEARCH_VECTOR = (
    "setweight(to_tsvector('simple'::regconfig, coalesce(title, '')), 'A')"
    " || setweight(to_tsvector('simple'::regconfig, coalesce(content, '')), 'B')"
)


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
        search_column("promptadmin_segment", "segment_search", SEARCH_VECTOR),
    ]
