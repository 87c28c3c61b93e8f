"""Searching segments by the words of their title and text, and their owner's name.

Every word must match: a word of the segment's title or text that starts with it, or the
name of the object the segment belongs to. On PostgreSQL the words are looked up in
``segment_search``, the GIN index of the segment's stored ``search`` column (a tsvector
of its title, weighted A, and its text, B, which PostgreSQL keeps: see the migration that
adds it), and the owners by their ids (found in the small tables of worlds, rulesets,
entries and NPCs), so nothing scans the segments; the best matches (title before text,
more hits first) rank first, from the stored vectors. Elsewhere (the SQLite of
``make run``) each word is looked for anywhere in the title or the text: a scan, which
that size allows.

>>> search_words("Lantern, oath! #12 l'orée")
['lantern', 'oath', '12', 'l', 'orée']
>>> prefix_query(["lantern", "oath"])
'lantern:* & oath:*'
"""

from __future__ import annotations

import re
from typing import Any

from django.contrib.postgres.search import SearchQuery, SearchRank, SearchVectorField
from django.db import connections
from django.db.models import FloatField, Q, QuerySet, Value
from django.db.models.expressions import RawSQL

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


def stored_vector() -> RawSQL:
    """The segment's stored ``search`` column (PostgreSQL only; not a model field)."""
    return RawSQL('"promptadmin_segment"."search"', [], output_field=SearchVectorField())


def indexed_search(queryset: QuerySet[Any], words: list[str]) -> QuerySet[Any]:
    """PostgreSQL: the GIN index (and the owners' ids) answer which rows match;
    ``ts_rank`` orders them."""
    vector = stored_vector()
    owners = owners_named(words)
    queryset = queryset.annotate(search=vector)
    for word in words:
        query = SearchQuery(f"{word}:*", search_type="raw", config=SEARCH_CONFIG)
        queryset = queryset.filter(Q(search=query) | owners[word])
    everything = SearchQuery(prefix_query(words), search_type="raw", config=SEARCH_CONFIG)
    return queryset.annotate(rank=SearchRank(vector, everything))


def fallback_search(queryset: QuerySet[Any], words: list[str]) -> QuerySet[Any]:
    """Any other database: each word anywhere in the title, the text or the owner's name
    (a scan)."""
    for word in words:
        matches = Q(title__icontains=word) | Q(content__icontains=word)
        for key in KINDS:
            matches |= Q(**{f"{key}__name__icontains": word})
        queryset = queryset.filter(matches)
    return queryset.annotate(rank=Value(0.0, output_field=FloatField()))
