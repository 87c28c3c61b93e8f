"""Searching segments by the words of their title and text, through an index.

On PostgreSQL every word is a prefix (``lant`` finds "lantern"), every word must match,
and the best matches (title before text, more hits first) come first: a full-text query
against ``segment_search``, a GIN index on :func:`search_vector` (the same expression, so
the planner uses it; see the migration that creates it). Elsewhere (the SQLite of
``make run``) each word is looked for anywhere in the title or the text, newest first:
no index, which that size does not need.

>>> search_words("Lantern, oath! #12 l'orée")
['lantern', 'oath', '12', 'l', 'orée']
>>> prefix_query(["lantern", "oath"])
'lantern:* & oath:*'
"""

from __future__ import annotations

import re
from typing import Any

from django.contrib.postgres.search import (
    CombinedSearchVector,
    SearchQuery,
    SearchRank,
    SearchVector,
)
from django.db import connections
from django.db.models import FloatField, Q, QuerySet, Value

# The text-search configuration: no stemming and no stop words, so a prefix is matched as
# typed whatever the language of the game's text.
CONFIG = "simple"
# Words beyond this many are ignored (a pasted paragraph is not a search).
MAX_WORDS = 12
MAX_WORD_LENGTH = 64
_WORD = re.compile(r"[^\W_]+")


def search_vector() -> CombinedSearchVector:
    """A segment's searchable words: its title (weighted A) then its text (B)."""
    return SearchVector("title", weight="A", config=CONFIG) + SearchVector(
        "content", weight="B", config=CONFIG
    )


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
    """``queryset`` narrowed to the segments matching every word of ``text``, annotated
    with ``rank`` (higher: a better match; 0 without the index)."""
    words = search_words(text)
    if not words:
        return queryset.annotate(rank=Value(0.0, output_field=FloatField()))
    if uses_index(queryset):
        return indexed_search(queryset, words)
    return fallback_search(queryset, words)


def indexed_search(queryset: QuerySet[Any], words: list[str]) -> QuerySet[Any]:
    """PostgreSQL: the GIN index answers which rows match; ``ts_rank`` orders them."""
    query = SearchQuery(prefix_query(words), search_type="raw", config=CONFIG)
    vector = search_vector()
    return (
        queryset.annotate(search=vector)
        .filter(search=query)
        .annotate(rank=SearchRank(vector, query))
    )


def fallback_search(queryset: QuerySet[Any], words: list[str]) -> QuerySet[Any]:
    """Any other database: each word anywhere in the title or the text (a scan)."""
    for word in words:
        queryset = queryset.filter(Q(title__icontains=word) | Q(content__icontains=word))
    return queryset.annotate(rank=Value(0.0, output_field=FloatField()))
