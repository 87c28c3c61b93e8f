"""The lore list's search at a large book's size: a stored tsvector of each entry's
title and keys (weight A) and content (B), kept by PostgreSQL itself, and its GIN index,
as segments have (see content.search); PostgreSQL only (SQLite scans, which its size
allows).

The index is written as rows are (``fastupdate = off``): an import of thousands of
entries is searched through the index at once, not after the next vacuum has emptied a
pending list the planner would otherwise price as a scan (lore is written far less often
than it is listed)."""

from django.db import migrations

from promptadmin.content.search import search_column


class Migration(migrations.Migration):
    dependencies = [
        ("lore", "0001_lore_entries"),
    ]

    operations = [
        search_column(
            "lore_loreentry",
            "lore_search",
            "setweight(to_tsvector('simple'::regconfig, coalesce(title, '')), 'A')"
            " || setweight(jsonb_to_tsvector('simple'::regconfig, keys, '[\"string\"]'), 'A')"
            " || setweight(to_tsvector('simple'::regconfig, coalesce(content, '')), 'B')",
            storage="fastupdate = off",
        ),
    ]
