"""The working copy as a version (``releases.bundles.Version``), read in proportion to what
changed.

PostgreSQL keeps a stamp for each object (``WorkingStamp``): a random value it replaces,
by trigger, whenever a statement writes the object's active segments (a world's active
lore entries), with how many there are; and one for the catalog (the objects
themselves). An object whose stamp, slug, name and links were seen before has the bundle
it had then: the shared cache remembers which (one entry, a map for every object of the
working copy last read, per bundle store and tokenizer), and whether it is stored.

So a read takes the stamps (one query of a row per object, 3,300 at 100,000 segments),
then, in one snapshot of the database (``snapshot.one_snapshot``), the objects (five
queries, skipped when the catalog's stamp is the one this process last read) and the
segments of the objects whose stamp is new (one query, none when nothing changed), never
the other 100,000. The last working copy read is kept, in the process and in the shared
cache: while no stamp changed, that is the working copy, after two small queries.

A bundle the version names is either stored (released once) or held by the version: the
text of one made from a changed object is kept in the shared cache too, and when the
cache has lost it the object is read again. Elsewhere (SQLite) the whole working copy is
read, as ``snapshot.working_content`` does.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, Final, NamedTuple

from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import Count, Q

from promptadmin.content.models import REF_FIELDS, SCOPE_REF_FIELD, Scope, Segment
from promptadmin.core.tokens import tokenizer
from promptadmin.lore.models import LoreEntry
from promptadmin.lore.selectors import lore_rows
from promptadmin.releases import snapshot
from promptadmin.releases.bundles import (
    BUNDLE_FORMAT,
    BUNDLE_KIND,
    CORE,
    EVERY_WORLD,
    LORE,
    Held,
    Manifest,
    Owner,
    Version,
    content_hash,
    content_version,
    decode,
    heads,
    hold,
    lore_heads,
    manifest_of,
    sha256,
)
from promptadmin.releases.models import ReleaseBundle, WorkingStamp
from promptadmin.releases.snapshot import CATALOG_KEYS, SnapSegment

# An object's bundle is remembered this long after it was last made (a bundle named by a
# hash is valid forever: this only bounds what the cache holds).
REMEMBERED_SECONDS = 7 * 24 * 3600
# The bundle kind of each object kind whose segments point at it (entry_start: "entry").
REF_KINDS = ("ruleset", "world", "entry", "npc")
# A stamp's owner when there is no object: the core; the lore of every world.
NO_OWNER = 0


def working_version() -> Version:
    """The working copy as a version: the objects, and a bundle for each."""
    if connection.vendor != "postgresql":
        return content_version(snapshot.working_content())
    # In a caller's transaction, the bundles it sees stored may yet be rolled back; and
    # the stamps read now are those of its snapshot (outside one, they are read again in
    # the snapshot the rest is read from).
    committed = not connection.in_atomic_block
    key = _remembered_key(_store())
    rows = _stamp_rows()
    last = _last[0] if _last and _last[0].key == key else None
    if last is not None and last.rows == rows:
        return last.version()  # nothing changed since this process last read it
    shared = _shared(key, rows)
    if shared is not None:  # another process read it
        if committed:
            _last[:] = [shared]
        return shared.version()
    return snapshot.one_snapshot(
        lambda: _read(key, last, None if committed else rows, committed=committed)
    )


class Stamp(NamedTuple):
    """An object's stamp, and how many active segments (lore: entries) it has."""

    stamp: str
    rows: int


StampRow = tuple[str, int, str, int]  # kind, owner (id; 0: none), stamp, count
# The stamps a working copy follows from: its objects', its lore's and its catalog's; not
# those of the scenarios (see releases.scenarios.Judged).
CATALOG = "catalog"
OTHER_STAMPS = ("scenarios", "casts")


def _store() -> str:
    """What tells this database's bundle store from any other that may share the cache:
    the cluster, the database (a copy made with ``createdb -T`` or a dump restored has the
    same stamps, but not the same bundles stored once the two part) and the bundle
    table's file, which a TRUNCATE replaces (the test suite's flush)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT s.system_identifier, d.oid, c.relfilenode"
            " FROM pg_control_system() AS s, pg_database AS d, pg_class AS c"
            " WHERE d.datname = current_database() AND c.oid = %s::regclass",
            [ReleaseBundle._meta.db_table],
        )
        return ".".join(str(part) for part in cursor.fetchone())


def _stamp_rows() -> list[StampRow]:
    """Every stamp the working copy follows from, in order (one query)."""
    table = connection.ops.quote_name(WorkingStamp._meta.db_table)
    with connection.cursor() as cursor:
        # The stamp as text: 3,000 of them made into UUID objects would take longer.
        cursor.execute(
            f"SELECT kind, owner, stamp::text, count FROM {table}"
            f" WHERE kind <> ALL(%s) ORDER BY kind, owner",
            [list(OTHER_STAMPS)],
        )
        return cursor.fetchall()


def _stamps(
    catalog: Mapping[str, list[dict[str, Any]]], rows: list[StampRow]
) -> dict[Owner, Stamp]:
    """Every object's stamp (an object without one has no active segment), by (bundle
    kind, slug); lore's by (``lore``, world slug), "" for every world's."""
    slugs: dict[tuple[str, int], str] = {(CORE, NO_OWNER): "", (LORE, NO_OWNER): EVERY_WORLD}
    for kind in REF_KINDS:
        for row in catalog[CATALOG_KEYS[kind]]:
            slugs[(kind, row["id"])] = row["slug"]
            if kind == "world":
                slugs[(LORE, row["id"])] = row["slug"]
    found: dict[Owner, Stamp] = {}
    for kind, owner, stamp, count in rows:
        slug = slugs.get((kind, owner))
        if slug is not None:  # else made after the catalog was read (READ COMMITTED only)
            found[(kind, slug)] = Stamp(stamp, count)
    return found


def _catalog_stamp(rows: list[StampRow]) -> str | None:
    return next((stamp for kind, _owner, stamp, _count in rows if kind == CATALOG), None)


def _remembered_key(store: str) -> str:
    """Where the map of the working copy's bundles is kept: one per bundle store (see
    :func:`_store`), tokenizer (a count made with another encoding is made again)
    and bundle format."""
    return f"releases:working-stamps:v{BUNDLE_FORMAT}:{store}:{tokenizer().name}"


# An object's bundle as the map remembers it: (stamp, head, sha, stored): made from the
# segments of ``stamp`` and the object's ``head`` (None: lore, whose head is its entries);
# ``stored``: a release holds it (so it is never held again). A plain tuple: 3,300 named
# tuples take 60 ms to pickle, plain ones 2.
Remembered = tuple[str, Mapping[str, Any] | None, str, bool]
STAMP: Final = 0
HEAD: Final = 1
SHA: Final = 2
STORED: Final = 3


def _text_key(sha: str) -> str:
    return f"releases:bundle-text:{sha}"


class Read(NamedTuple):
    """A version as read, and what it follows from: the bundle store and tokenizer
    (``key``), and the stamps (``rows``) of its objects and catalog."""

    key: str
    rows: list[StampRow]
    catalog: Mapping[str, list[dict[str, Any]]]
    manifest: Manifest
    content_hash: str
    segment_count: int
    held: Mapping[str, Held]

    def version(self) -> Version:
        catalog = self.catalog
        return Version(
            self.manifest,
            catalog=lambda: catalog,
            content_hash=self.content_hash,
            segment_count=self.segment_count,
            held=self.held,
        )


# The last working copy this process read (of committed rows only: then its bundles
# stored are stored for good). While its stamps are the same, it is the working copy.
_last: list[Read] = []


def _read(key: str, last: Read | None, rows: list[StampRow] | None, *, committed: bool) -> Version:
    """The working copy (``last``: the one this process read before; ``rows``: the
    stamps, else read now); ``committed``: what is read is committed (the cache may learn
    for good that a bundle is stored)."""
    if rows is None:
        rows = _stamp_rows()
    if last is not None and last.rows == rows:
        return last.version()
    catalog_stamp = _catalog_stamp(rows)
    if (
        last is not None
        and catalog_stamp is not None
        and catalog_stamp == _catalog_stamp(last.rows)
    ):
        catalog = last.catalog  # the objects are the same: only segments changed
    else:
        catalog = snapshot.working_catalog()
    read = _bundles(key, rows, catalog, committed=committed)
    if committed:
        _last[:] = [read]
        _share(read)
    return read.version()


# At most this many bundles held (made since the last release) for a read to be shared:
# the others would decode their texts (at 100,000 segments, a cold cache makes all 3,300).
SHARED_HELD = 200


def _shared_key(key: str) -> str:
    """Where the last working copy read is kept for every process: one that has not read
    it (a new one, or one of many gunicorn workers after a change) takes it from there
    while the stamps are the same. (A digest of the stamps, the catalog, the manifest,
    the content hash, the segment count, and each held bundle's object and head: their
    texts are kept under :func:`_text_key`.)"""
    return f"{key}:last"


def _digest(rows: list[StampRow]) -> str:
    return sha256(repr(rows))


def _share(read: Read) -> None:
    if len(read.held) > SHARED_HELD:
        return  # made whole (a cold cache): the next read, knowing what is stored, is kept
    heads: dict[str, tuple[Owner, Mapping[str, Any] | None]] = {
        # A lore bundle's head is its entries, which its text holds.
        sha: ((bundle.kind, bundle.slug), None if bundle.kind == LORE else bundle.head)
        for sha, bundle in read.held.items()
    }
    value = (
        _digest(read.rows),
        read.catalog,
        read.manifest,
        read.content_hash,
        read.segment_count,
        heads,
    )
    cache.set(_shared_key(read.key), value, REMEMBERED_SECONDS)


def _shared(key: str, rows: list[StampRow]) -> Read | None:
    """The working copy of ``rows`` as another process read it, if it is kept."""
    found = cache.get(_shared_key(key))
    if found is None or found[0] != _digest(rows):
        return None
    _rows, catalog, manifest, content_hash_, segment_count, heads = found
    texts = cache.get_many([_text_key(sha) for sha in heads])
    if len(texts) != len(heads):
        return None  # a text the cache lost: read it again
    held = {
        sha: _held(owner, head, sha, texts[_text_key(sha)]) for sha, (owner, head) in heads.items()
    }
    return Read(key, rows, catalog, manifest, content_hash_, segment_count, held)


def _bundles(
    key: str,
    rows: list[StampRow],
    catalog: Mapping[str, list[dict[str, Any]]],
    *,
    committed: bool,
) -> Read:
    """The version of ``catalog`` whose stamps are ``rows``: each object's bundle as
    remembered under ``key`` when its stamp and head are the same, else made now."""
    stamps = _stamps(catalog, rows)
    # Every object with its head; and every world's lore, and each world's with any.
    objects: dict[Owner, Mapping[str, Any] | None] = {**heads(catalog)}
    objects.update(
        (owner, None) for owner, found in stamps.items() if owner[0] == LORE and found.rows
    )
    remembered: dict[Owner, Remembered] = cache.get(key) or {}
    now: dict[Owner, Remembered] = {}
    none = Stamp("", 0)  # an object without segments
    for owner, head in objects.items():
        known = remembered.get(owner)
        if known is not None and known[STAMP] == stamps.get(owner, none)[0] and known[HEAD] == head:
            now[owner] = known
    # A bundle not stored when last read may be stored since; else its text is in the cache.
    unstored = {owner: known[SHA] for owner, known in now.items() if not known[STORED]}
    held: dict[str, Held] = {}
    if unstored:
        stored = set(
            ReleaseBundle.objects.filter(sha256__in=set(unstored.values())).values_list(
                "sha256", flat=True
            )
        )
        texts = cache.get_many([_text_key(sha) for sha in set(unstored.values()) - stored])
        for owner, sha in unstored.items():
            text = texts.get(_text_key(sha))
            if sha in stored:
                if committed:
                    now[owner] = (now[owner][STAMP], now[owner][HEAD], sha, True)
            elif text is None:
                del now[owner]
            else:
                held[sha] = _held(owner, objects[owner], sha, text)
    made: dict[str, Any] = {}
    changed = [owner for owner in objects if owner not in now]
    for owner, (head, segments) in _read_objects(catalog, changed, objects, stamps).items():
        sha, bundle = hold(*owner, head, segments)
        held[sha] = bundle
        now[owner] = (_stamp(stamps, owner), objects[owner], sha, False)
        made[_text_key(sha)] = bundle.text
    if made or now != remembered:
        # The map of the working copy as read now (what no object has any more goes);
        # two processes writing at once may drop each other's news: read again, no harm.
        made[key] = now
        cache.set_many(made, REMEMBERED_SECONDS)
    manifest = manifest_of(catalog, {owner: known[SHA] for owner, known in now.items()})
    return Read(
        key,
        rows,
        catalog,
        manifest,
        content_hash(catalog, manifest),
        sum(found.rows for owner, found in stamps.items() if owner[0] != LORE),
        held,
    )


def _stamp(stamps: Mapping[Owner, Stamp], owner: Owner) -> str:
    found = stamps.get(owner)
    return "" if found is None else found.stamp


def _held(owner: Owner, head: Mapping[str, Any] | None, sha: str, text: str) -> Held:
    """A bundle made before, from its text (kept in the cache)."""
    part = decode(sha, text)
    return Held(*owner, {LORE: list(part.lore)} if head is None else head, part.rows, text)


def _read_objects(
    catalog: Any,
    owners: list[Owner],
    objects: Mapping[Owner, Mapping[str, Any] | None],
    stamps: Mapping[Owner, Stamp],
) -> dict[Owner, tuple[Mapping[str, Any], list[SnapSegment]]]:
    """What the bundles of ``owners`` are made of, read now (their heads, and segments;
    lore: its entries): one query for segments, one for lore, none for an object that has
    none. A world whose lore is all gone has no lore bundle."""
    wanted = [owner for owner in owners if stamps.get(owner, Stamp("", 0)).rows]
    rows = _segments(catalog, [owner for owner in wanted if owner[0] != LORE])
    found: dict[Owner, tuple[Mapping[str, Any], list[SnapSegment]]] = {}
    for owner in owners:
        head = objects[owner]
        if head is not None:
            found[owner] = (head, rows.get(owner, []))
    lore = [slug for kind, slug in wanted if kind == LORE]
    if lore:
        ids = {row["slug"]: row["id"] for row in catalog[CATALOG_KEYS["world"]]}
        entries = lore_rows([None if slug == EVERY_WORLD else ids[slug] for slug in lore])
        for owner, head in lore_heads({slug: entries.get(slug, []) for slug in lore}).items():
            found[owner] = (head, [])
    return found


def _segments(catalog: Any, owners: list[Owner]) -> dict[Owner, list[SnapSegment]]:
    """The active segments of ``owners``, by owner (one query)."""
    if not owners:
        return {}
    slugs: dict[str, set[str]] = {}
    for kind, slug in owners:
        slugs.setdefault(kind, set()).add(slug)
    where = Q()
    for kind, wanted in slugs.items():
        if kind == CORE:
            where |= Q(scope=Scope.CORE)
        else:
            ids = [row["id"] for row in catalog[CATALOG_KEYS[kind]] if row["slug"] in wanted]
            where |= Q(**{f"{kind}_id__in": ids})
    found: dict[Owner, list[SnapSegment]] = {}
    for row in snapshot.segments_of(catalog, where):
        found.setdefault((BUNDLE_KIND[row.scope], row.owner), []).append(row)
    return found


# Rebuilding the stamps


class StampCheck(NamedTuple):
    """How the stamps stand against the rows they count: objects whose count is wrong,
    objects with active rows and no stamp, and stamps of objects with none (each a
    (kind, owner) pair)."""

    wrong: list[tuple[str, int]]
    missing: list[tuple[str, int]]
    extra: list[tuple[str, int]]

    @property
    def stale(self) -> bool:
        return bool(self.wrong or self.missing or self.extra)


def _counted() -> dict[tuple[str, int], int]:
    """Each object's active segments and each world's active lore entries (owner 0: none,
    the core's and every world's), counted as the triggers of migration releases 0011 do."""
    counted: dict[tuple[str, int], int] = {}
    rows = (
        Segment.objects.filter(active=True, scope__in=list(BUNDLE_KIND))
        .values("scope", *(f"{field}_id" for field in REF_FIELDS))
        .annotate(rows=Count("id"))
        .order_by()
    )
    for row in rows:
        field = SCOPE_REF_FIELD[row["scope"]]
        owner = (BUNDLE_KIND[row["scope"]], row[f"{field}_id"] if field else NO_OWNER)
        counted[owner] = counted.get(owner, 0) + row["rows"]
    lore = LoreEntry.objects.filter(active=True).values_list("world_id").annotate(Count("id"))
    for world, count in lore.order_by():
        counted[(LORE, world or NO_OWNER)] = count
    return counted


def stamps_check() -> StampCheck:
    """The stamps against the rows they count (PostgreSQL; elsewhere there are none). A
    load that skipped the triggers (``pg_restore --disable-triggers``, ``COPY`` with
    ``session_replication_role = replica``) leaves them stale: then readers of the working
    copy would miss what that load changed, until :func:`stamps_rebuild`."""
    if connection.vendor != "postgresql":
        return StampCheck([], [], [])
    counted = _counted()
    kept = {
        (kind, owner): count
        for kind, owner, count in WorkingStamp.objects.exclude(
            kind__in=[CATALOG, *OTHER_STAMPS]
        ).values_list("kind", "owner", "count")
    }
    return StampCheck(
        wrong=sorted(
            owner for owner in counted.keys() & kept.keys() if counted[owner] != kept[owner]
        ),
        missing=sorted(counted.keys() - kept.keys()),
        extra=sorted(owner for owner in kept.keys() - counted.keys() if kept[owner]),
    )


def stamps_rebuild() -> int:
    """Give every object a new stamp and its count made afresh from its rows, and new
    stamps to the catalog, the saved scenarios and the casts, with writers of segments and
    lore held off meanwhile (a table lock, to the commit). Every process then reads the
    working copy afresh once: nothing read before a stale load is trusted. Returns the
    stamps written (0 on SQLite, which keeps none)."""
    if connection.vendor != "postgresql":
        return 0
    tables = ", ".join(
        connection.ops.quote_name(model._meta.db_table) for model in (Segment, LoreEntry)
    )
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(f"LOCK TABLE {tables} IN SHARE MODE")
        counted = _counted()
        WorkingStamp.objects.all().delete()
        stamps = [
            WorkingStamp(kind=kind, owner=owner, stamp=uuid.uuid4(), count=count)
            for (kind, owner), count in sorted(counted.items())
        ]
        stamps += [
            WorkingStamp(kind=kind, owner=NO_OWNER, stamp=uuid.uuid4(), count=0)
            for kind in (CATALOG, *OTHER_STAMPS)
        ]
        WorkingStamp.objects.bulk_create(stamps, batch_size=2000)
    return len(stamps)
