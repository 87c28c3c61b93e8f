"""Content as a whole, from the working copy or from a release, in one plain shape.

A :class:`ContentSet` is what a release stores and what two versions of the content are
compared by: the objects (catalog) and every active segment, by id. It turns into the
assembly bundles that ``promptadmin.content.assembly`` assembles from.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, transaction

import assembler
from promptadmin.content.assembly import EntryBundle, NpcBundle
from promptadmin.content.kinds import KINDS
from promptadmin.content.models import (
    REF_FIELDS,
    SEGMENT_SCOPES,
    Entry,
    EntryRuleset,
    Scope,
    Segment,
)
from promptadmin.core.tokens import cached_count, tokenizer
from promptadmin.releases.models import Release, ReleaseSegment

# Where a content set's catalog (and so every release's ``catalog``) keeps each kind of
# object, by the kind's key: under its ``section``, as the API names its collections
# ("npcs"). Every release stores these keys: renaming a kind's section would need every
# stored release's catalog migrated too.
CATALOG_KEYS: dict[str, str] = {key: kind.section for key, kind in KINDS.items()}


# What a segment's state is made of, hashed into the content hash and compared between two
# versions (the token count follows from the content and the encoding).
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
    sha256: str = ""

    def __post_init__(self) -> None:
        if not self.sha256:
            object.__setattr__(self, "sha256", text_hash(self.content))

    def fingerprint(self) -> list[Any]:
        """What identifies this segment's state: its id and :data:`SEGMENT_FIELDS`, the
        content by its hash."""
        return [
            self.id,
            *(self.sha256 if name == "content" else getattr(self, name) for name in SEGMENT_FIELDS),
        ]

    def to_assembler(self) -> assembler.Segment:
        return assembler.Segment(
            id=self.id,
            scope=self.scope,
            content=self.content,
            sort_order=self.sort_order,
            tier=self.tier,
            token_count=cached_count(self),
            title=self.title,
        )


@dataclass(frozen=True)
class Bundles:
    """A content set ready to assemble: every entry's and NPC's bundle, by slug."""

    entries: Mapping[str, EntryBundle]
    npcs: Mapping[str, NpcBundle]

    def load(
        self, entry_slug: str, npc_slugs: Sequence[str]
    ) -> tuple[EntryBundle | None, dict[str, NpcBundle]]:
        """A ``promptadmin.content.assembly.Loader``: no query, no cache round trip."""
        npcs = {slug: self.npcs[slug] for slug in npc_slugs if slug in self.npcs}
        return self.entries.get(entry_slug), npcs


@dataclass(frozen=True)
class ContentSet:
    """The objects and the active segments of one version of the game content."""

    catalog: Mapping[str, list[dict[str, Any]]]
    segments: Mapping[int, SnapSegment]
    _bundles: list[Bundles] = field(default_factory=list, repr=False, compare=False)
    _hash: list[str] = field(default_factory=list, repr=False, compare=False)

    def content_hash(self) -> str:
        """SHA-256 of everything a release holds, in a canonical order; worked out once."""
        if not self._hash:
            body = [
                {plural: self.catalog.get(plural, []) for plural in CATALOG_KEYS.values()},
                [self.segments[pk].fingerprint() for pk in sorted(self.segments)],
            ]
            text = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
            self._hash.append(hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest())
        return self._hash[0]

    def objects(self) -> dict[tuple[str, str], dict[str, Any]]:
        """Every object by (kind, slug), without the database id (it may be reused)."""
        return {
            (plural, row["slug"]): {k: v for k, v in row.items() if k != "id"}
            for plural in CATALOG_KEYS.values()
            for row in self.catalog.get(plural, [])
        }

    def bundles(self) -> Bundles:
        """The assembly bundles, built once per content set."""
        if not self._bundles:
            self._bundles.append(_build_bundles(self))
        return self._bundles[0]


def _build_bundles(content: ContentSet) -> Bundles:
    by_owner: dict[tuple[str, str], list[SnapSegment]] = {}
    for row in content.segments.values():
        by_owner.setdefault((row.scope, row.owner), []).append(row)

    def layer(scope: str, owner: str) -> tuple[assembler.Segment, ...]:
        rows = sorted(by_owner.get((scope, owner), ()), key=lambda r: (r.sort_order, r.id))
        return tuple(row.to_assembler() for row in rows)

    names = {row["slug"]: row["name"] for row in content.catalog.get(CATALOG_KEYS["ruleset"], [])}
    core = layer(Scope.CORE, "")
    entries = {
        row["slug"]: EntryBundle(
            entry_id=row["id"],
            world_slug=row["world"],
            rulesets=tuple(
                assembler.Ruleset(
                    slug=slug, name=names.get(slug, slug), segments=layer(Scope.RULESET, slug)
                )
                for slug in row["rulesets"]
            ),
            core=core,
            world=layer(Scope.WORLD, row["world"]),
            entry=layer(Scope.ENTRY, row["slug"]),
            entry_start=layer(Scope.ENTRY_START, row["slug"]),
        )
        for row in content.catalog.get(CATALOG_KEYS["entry"], [])
    }
    npcs = {
        row["slug"]: NpcBundle(row["slug"], row["name"], layer(Scope.NPC, row["slug"]))
        for row in content.catalog.get(CATALOG_KEYS["npc"], [])
    }
    return Bundles(entries=entries, npcs=npcs)


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
    """The working copy: every object and active segment, as of one moment.

    Its queries must see the same state of the database: under READ COMMITTED, an NPC
    and its segment saved between the catalog query and the segment query would give a
    segment whose object the catalog lacks. On PostgreSQL, outside a transaction, they
    run in a read-only REPEATABLE READ transaction of their own (one snapshot for all);
    SQLite's transactions are serializable. A caller already inside a transaction gets
    its isolation (tests, scripts), and :func:`_read_working_content` then leaves out
    the segments of an object read too late to be in the catalog rather than fail.
    """
    if connection.in_atomic_block:
        return _read_working_content()
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                # Only valid as the transaction's first statement, which this is.
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        return _read_working_content()


def _read_working_content() -> ContentSet:
    """Every object and active segment, in six queries."""
    catalog = working_catalog()
    slugs = {
        f"{field}_id": {row["id"]: row["slug"] for row in catalog[CATALOG_KEYS[field]]}
        for field in REF_FIELDS
    }
    tok = tokenizer()
    segments: dict[int, SnapSegment] = {}
    rows = Segment.objects.filter(active=True, scope__in=SEGMENT_SCOPES).values_list(
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
        segments[pk] = SnapSegment(
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
    return ContentSet(catalog=catalog, segments=segments)


def release_content(release: Release) -> ContentSet:
    """What ``release`` holds, in one query (texts joined)."""
    rows = ReleaseSegment.objects.filter(release=release).values_list(
        "segment_id",
        "scope",
        "owner",
        "title",
        "text__content",
        "metadata",
        "version",
        "tier",
        "sort_order",
        "token_count",
        "token_encoding",
        "text_id",
    )
    segments = {row[0]: SnapSegment(*row) for row in rows}
    return ContentSet(catalog=release.catalog, segments=segments)
