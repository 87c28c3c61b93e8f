"""Content as a whole, from the working copy or from a release, in one plain shape.

A :class:`ContentSet` is what a release holds: the objects (catalog) and every active
segment, by id. ``releases.bundles`` turns it into bundles and a manifest, and back.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.db import connection, transaction
from django.db.models import Q

from promptadmin.content.kinds import KINDS
from promptadmin.content.models import (
    REF_FIELDS,
    SEGMENT_SCOPES,
    Entry,
    EntryRuleset,
    Segment,
)
from promptadmin.core.tokens import tokenizer
from promptadmin.lore.selectors import lore_rows

T = TypeVar("T")

# Where a content set's catalog (and so every release's ``catalog``) keeps each kind of
# object, by the kind's key: under its ``section``, as the API names its collections
# ("npcs"). Every release stores these keys: renaming a kind's section would need every
# stored release's catalog migrated too.
CATALOG_KEYS: dict[str, str] = {key: kind.section for key, kind in KINDS.items()}


# What a segment's state is made of, compared between two versions (the token count
# follows from the content and the encoding).
SEGMENT_FIELDS = ("scope", "owner", "title", "content", "metadata", "version", "tier", "sort_order")


def text_hash(content: str) -> str:
    # surrogatepass: a stored text is checked on the way in, but a hash must never fail.
    return hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True, slots=True)
class SnapSegment:
    """An active segment as a release holds it; ``owner`` is its object's slug."""

    id: int
    scope: str
    owner: str
    title: str
    content: str
    metadata: Any
    version: str
    tier: int
    sort_order: int
    token_count: int
    token_encoding: str


@dataclass(frozen=True)
class ContentSet:
    """The objects and the active segments of one version of the game content, and its
    active lore entries as bundles hold them, by world slug ("": every world's)."""

    catalog: Mapping[str, list[dict[str, Any]]]
    segments: Mapping[int, SnapSegment]
    lore: Mapping[str, list[dict[str, Any]]] = field(default_factory=dict)
    # Worked out once: the bundles (see releases.bundles.built).
    _built: list[Any] = field(default_factory=list, repr=False, compare=False)

    def objects(self) -> dict[tuple[str, str], dict[str, Any]]:
        """Every object by (kind, slug), without the database id (it may be reused)."""
        return catalog_objects(self.catalog)


def catalog_objects(
    catalog: Mapping[str, list[dict[str, Any]]],
) -> dict[tuple[str, str], dict[str, Any]]:
    """Every object of ``catalog`` by (kind, slug), without the database id (it may be
    reused)."""
    return {
        (plural, row["slug"]): {k: v for k, v in row.items() if k != "id"}
        for plural in CATALOG_KEYS.values()
        for row in catalog.get(plural, [])
    }


_OBJECT_COLUMNS = ("id", "slug", "name", "description")
REF_COLUMNS = tuple(f"{field}_id" for field in REF_FIELDS)  # a segment's object, one of them


def working_catalog() -> dict[str, list[dict[str, Any]]]:
    """The working copy's objects, in five queries."""
    catalog: dict[str, list[dict[str, Any]]] = {
        CATALOG_KEYS[key]: list(KINDS[key].model.objects.order_by("slug").values(*_OBJECT_COLUMNS))
        for key in ("world", "ruleset", "npc")  # entries, with their world and rulesets, below
    }
    orders: dict[int, list[str]] = {}
    for entry_id, slug in EntryRuleset.objects.order_by("entry_id", "position").values_list(
        "entry_id", "ruleset__slug"
    ):
        orders.setdefault(entry_id, []).append(slug)
    entries = Entry.objects.order_by("slug").values(*_OBJECT_COLUMNS, "world__slug")
    catalog[CATALOG_KEYS["entry"]] = [
        {
            **{name: row[name] for name in _OBJECT_COLUMNS},
            "world": row["world__slug"],
            "rulesets": orders.get(row["id"], []),
        }
        for row in entries
    ]
    return catalog


def working_content() -> ContentSet:
    """The working copy: every object and active segment, as of one moment (see
    :func:`one_snapshot`)."""
    return one_snapshot(_read_working_content)


def one_snapshot(read: Callable[[], T]) -> T:
    """``read()``, whose queries all see one state of the database.

    Under READ COMMITTED, an NPC and its segment saved between the catalog query and the
    segment query would give a segment whose object the catalog lacks. On PostgreSQL,
    outside a transaction, the queries run in a read-only REPEATABLE READ transaction of
    their own (one snapshot for all); SQLite's transactions are serializable. A caller
    already inside a transaction gets its isolation (tests, scripts), and
    :func:`segments_of` then leaves out the segments of an object read too late to be in
    the catalog rather than fail.
    """
    if connection.in_atomic_block:
        return read()
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                # Only valid as the transaction's first statement, which this is.
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        return read()


def _read_working_content() -> ContentSet:
    """Every object, active segment and active lore entry, in seven queries."""
    catalog = working_catalog()
    segments = {row.id: row for row in segments_of(catalog, Q())}
    return ContentSet(catalog=catalog, segments=segments, lore=lore_rows())


def segments_of(catalog: Mapping[str, list[dict[str, Any]]], where: Q) -> list[SnapSegment]:
    """The active segments matching ``where`` whose object is in ``catalog`` (one query),
    their token counts made afresh when made with another encoding."""
    slugs = {
        f"{field}_id": {row["id"]: row["slug"] for row in catalog[CATALOG_KEYS[field]]}
        for field in REF_FIELDS
    }
    tok = tokenizer()
    found = []
    rows = Segment.objects.filter(where, active=True, scope__in=SEGMENT_SCOPES).values_list(
        "id",
        "scope",
        *REF_COLUMNS,
        "title",
        "content",
        "metadata",
        "version",
        "tier",
        "sort_order",
        "token_count",
        "token_encoding",
    )
    for pk, scope, *refs, title, content, metadata, version, tier, order, count, encoding in rows:
        owner: str | None = ""
        for field_name, ref in zip(REF_COLUMNS, refs, strict=True):
            if ref is not None:
                owner = slugs[field_name].get(ref)
        if owner is None:
            # Only under READ COMMITTED: its object was made (or it moved to one) after
            # the catalog was read, so it belongs to a later state of the content.
            continue
        if count is None or encoding != tok.name:
            count, encoding = tok.count(content), tok.name
        found.append(
            SnapSegment(
                id=pk,
                scope=scope,
                owner=owner,
                title=title.strip(),
                content=content,
                metadata=metadata,
                version=version,
                tier=tier,
                sort_order=order,
                token_count=count,
                token_encoding=encoding,
            )
        )
    return found
