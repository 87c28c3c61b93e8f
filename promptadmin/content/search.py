"""Searching segments by the words of their title and text, and their owner's name.

Every word must match: a word of the segment's title or text that starts with it, or the
name of the object the segment belongs to. On PostgreSQL the words are looked up in
``segment_search``, the GIN index of the segment's stored ``search`` column (a tsvector
of its title, weighted A, and its text, B, which PostgreSQL keeps: see the migration that
adds it; the index is written as rows are, with no pending list for every search to
read: see migration 0014), and the owners by their ids (found in the small tables of
worlds, rulesets, entries and NPCs), so nothing scans the segments; the best matches
(title before text, more hits first) rank first, from the stored vectors. Elsewhere (the SQLite of
``make run``) each word is looked for anywhere in the title or the text: a scan, which
that size allows.

>>> search_words("Lantern, oath! #12 l'orée")
['lantern', 'oath', '12', 'l', 'orée']
>>> prefix_query(["lantern", "oath"])
'lantern:* & oath:*'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from django.contrib.postgres.search import SearchQuery, SearchRank, SearchVectorField
from django.db import connections, migrations
from django.db.models import FloatField, Q, QuerySet, Value
from django.db.models.expressions import Expression

from promptadmin.content.kinds import KINDS

# The text-search configuration: no stemming and no stop words, so a prefix is matched as
# typed whatever the language of the game's text (the stored column's too).
SEARCH_CONFIG = "simple"

# Words beyond this many are ignored (a pasted paragraph is not a search).
MAX_WORDS = 12
MAX_WORD_LENGTH = 64
# Owners named by a word, at most (a word naming more narrows nothing down).
MAX_OWNERS = 500
_WORD = re.compile(r"[^\W_]+")
# Where a segment's words are looked for without the index: its title, text, owner's name.
SEGMENT_FIELDS = ("title", "content", *(f"{key}__name" for key in KINDS))


def search_column(
    table: str, index: str, vector: str, *, storage: str = ""
) -> migrations.RunPython:
    """A migration's operation giving ``table`` (on PostgreSQL; nothing elsewhere) the
    stored ``search`` tsvector column :func:`word_search` reads, computed as ``vector`` (an
    SQL expression of the row's columns) and kept by PostgreSQL itself, and its GIN index
    ``index`` (``storage``: its storage parameters); undone by dropping both."""
    with_storage = f" WITH ({storage})" if storage else ""
    add = (
        f"ALTER TABLE {table} ADD COLUMN search tsvector GENERATED ALWAYS AS ({vector}) STORED;"
        f" CREATE INDEX {index} ON {table} USING gin (search){with_storage};"
    )
    drop = f"DROP INDEX IF EXISTS {index}; ALTER TABLE {table} DROP COLUMN IF EXISTS search;"

    def run(sql: str) -> Callable[[Any, Any], None]:
        def operation(apps: Any, schema_editor: Any) -> None:
            if schema_editor.connection.vendor == "postgresql":
                schema_editor.execute(sql)

        return operation

    return migrations.RunPython(run(add), run(drop), elidable=False)


def search_words(text: str) -> list[str]:
    """The words of a search, lowercased: letters and digits only, so nothing a person
    types can be read as query syntax."""
    words = [word[:MAX_WORD_LENGTH].lower() for word in _WORD.findall(text)]
    return list(dict.fromkeys(words))[:MAX_WORDS]


def prefix_query(words: list[str]) -> str:
    """A ``to_tsquery`` text in which each word is a prefix and all must match."""
    return " & ".join(f"{word}:*" for word in words)


def uses_index(queryset: QuerySet[Any]) -> bool:
    return connections[queryset.db].vendor == "postgresql"


def segment_search(queryset: QuerySet[Any], text: str) -> QuerySet[Any]:
    """``queryset`` narrowed to the segments matching every word of ``text``, with
    ``rank`` to order by (higher: a better match; 0 without the index)."""
    return word_search(
        queryset,
        text,
        fields=SEGMENT_FIELDS,
        named=owners_named,
    )


Named = Callable[[list[str]], dict[str, Q]]
"""For each word, what else it matches on PostgreSQL besides the stored vector (a
segment's owners, found by name)."""


def word_search(
    queryset: QuerySet[Any], text: str, *, fields: Sequence[str], named: Named | None = None
) -> QuerySet[Any]:
    """``queryset`` (of a model whose table has a stored ``search`` tsvector and its GIN
    index on PostgreSQL) narrowed to the rows matching every word of ``text``, with ``rank``
    to order by. Without the index each word is looked for in ``fields`` (a scan)."""
    words = search_words(text)
    if not words:
        return queryset.alias(rank=Value(0.0, output_field=FloatField()))
    if uses_index(queryset):
        return indexed_search(queryset, words, named)
    return fallback_search(queryset, words, fields)


def owners_named(words: list[str]) -> dict[str, Q]:
    """For each word, the segments whose owner's name holds it (by owner id): one query
    per kind of owner, over tables of thousands of rows at most."""
    named: dict[str, Q] = {word: Q(pk__in=[]) for word in words}
    for key, kind in KINDS.items():
        any_word = Q()
        for word in words:
            any_word |= Q(name__icontains=word)
        rows = kind.model._default_manager.filter(any_word).values_list("pk", "name")
        found = list(rows[: MAX_OWNERS + 1])
        for word in words:
            ids = [pk for pk, name in found if word in name.lower()]
            if ids and len(found) <= MAX_OWNERS:
                named[word] |= Q(**{f"{key}_id__in": ids})
    return named


class StoredVector(Expression):
    """The stored ``search`` column of the query's own table (PostgreSQL only; not a
    model field), named by the table's alias in that query, so that it stays the row's
    own column inside a subquery too (a page read by its keys first: see
    core.pagination)."""

    output_field = SearchVectorField()

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:
        table = compiler.quote_name_unless_alias(compiler.query.get_initial_alias())
        return f"{table}.{connection.ops.quote_name('search')}", []


def indexed_search(
    queryset: QuerySet[Any], words: list[str], named: Named | None = None
) -> QuerySet[Any]:
    """PostgreSQL: the GIN index (and what ``named`` finds) answer which rows match;
    ``ts_rank`` orders them (``rank``)."""
    vector = StoredVector()
    others = named(words) if named is not None else {}
    # Aliases, not annotations: neither the vector nor the rank is sent back with the
    # rows, and the rank is computed only when the rows are ordered by it.
    queryset = queryset.alias(search=vector)
    for word in words:
        query = SearchQuery(f"{word}:*", search_type="raw", config=SEARCH_CONFIG)
        queryset = queryset.filter(Q(search=query) | others.get(word, Q(pk__in=[])))
    everything = SearchQuery(prefix_query(words), search_type="raw", config=SEARCH_CONFIG)
    return queryset.alias(rank=SearchRank(vector, everything))


def fallback_search(
    queryset: QuerySet[Any], words: list[str], fields: Sequence[str] = SEGMENT_FIELDS
) -> QuerySet[Any]:
    """Any other database: each word anywhere in one of ``fields`` (a scan)."""
    for word in words:
        matches = Q()
        for name in fields:
            matches |= Q(**{f"{name}__icontains": word})
        queryset = queryset.filter(matches)
    return queryset.alias(rank=Value(0.0, output_field=FloatField()))
