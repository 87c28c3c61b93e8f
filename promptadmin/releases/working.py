"""The working copy as a version (``releases.bundles.Version``), read in proportion to what
changed.

PostgreSQL sums up each object's active segments in one query: a fingerprint of every
field a bundle holds (the database hashes the texts; nothing is sent back but 3,000
fingerprints for 100,000 segments). An object whose fingerprint, name and links were seen
before has the bundle it had then: the shared cache remembers which (one entry, a map for
every object of the working copy last read), so its segments are not read. Only the
objects that changed since are read and made into bundles. All of it reads one snapshot of
the database (``snapshot.one_snapshot``).

A bundle the version names is either stored (released once) or held by the version: the
text of one made from a changed object is kept in the shared cache too, and when the
cache has lost it the object is read again. Elsewhere (SQLite) the whole working copy is
read, as ``snapshot.working_content`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.cache import cache
from django.db import connection
from django.db.models import Q

from promptadmin.content.models import SEGMENT_SCOPES, Scope, Segment
from promptadmin.core.tokens import tokenizer
from promptadmin.lore.selectors import lore_rows
from promptadmin.releases import snapshot
from promptadmin.releases.bundles import (
    BUNDLE_FORMAT,
    BUNDLE_KIND,
    CORE,
    Held,
    Owner,
    Version,
    canonical,
    content_hash,
    content_version,
    decode,
    heads,
    hold,
    hold_lore,
    manifest_of,
    sha256,
)
from promptadmin.releases.models import ReleaseBundle
from promptadmin.releases.snapshot import CATALOG_KEYS, SnapSegment

# An object's bundle is remembered this long after it was last made (a bundle named by a
# hash is valid forever: this only bounds what the cache holds).
REMEMBERED_SECONDS = 7 * 24 * 3600
# The bundle kind of each object kind whose segments point at it (entry_start: "entry").
REF_KINDS = ("ruleset", "world", "entry", "npc")


def working_version() -> Version:
    """The working copy as a version: the objects, and a bundle for each."""
    if connection.vendor != "postgresql":
        return content_version(snapshot.working_content())
    return snapshot.one_snapshot(_read)


def _fingerprints() -> dict[tuple[str, int | None], tuple[str, int]]:
    """Each object's active segments summed up: (bundle kind, object id) -> (fingerprint,
    count). Every field a bundle holds goes in, each hashed apart (no two states share a
    fingerprint by running fields together)."""
    table = connection.ops.quote_name(Segment._meta.db_table)
    entry_start, entry = Scope.ENTRY_START.value, Scope.ENTRY.value
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT CASE WHEN scope = %s THEN %s ELSE scope END,"
            f" COALESCE(ruleset_id, world_id, entry_id, npc_id), COUNT(*),"
            f" md5(string_agg(concat(id, ':', md5(scope), md5(title), md5(content),"
            f" md5(metadata::text), md5(version), ':', tier, ':', sort_order, ':',"
            f" COALESCE(token_count::text, '-'), ':', md5(token_encoding)), ',' ORDER BY id))"
            f" FROM {table} WHERE active AND scope = ANY(%s) GROUP BY 1, 2",
            [entry_start, entry, [str(scope) for scope in SEGMENT_SCOPES]],
        )
        return {(kind, owner): (found, count) for kind, owner, count, found in cursor.fetchall()}


# The map of every object's bundle, by what the bundle follows from (see _remembered_key).
# Its shape is in its name: a process running other code never reads a map of another.
REMEMBERED_KEY = f"releases:working-bundles:v{BUNDLE_FORMAT}"


def _remembered_key(kind: str, slug: str, head: Mapping[str, Any], fingerprint: str) -> str:
    """What an object's bundle follows from: the object, its segments' fingerprint and
    the tokenizer (a count made with another encoding is made again)."""
    return sha256(canonical([tokenizer().name, kind, slug, head, fingerprint]))


def _text_key(sha: str) -> str:
    return f"releases:bundle-text:{sha}"


def _read() -> Version:
    catalog = snapshot.working_catalog()
    ids = {
        (kind, row["id"]): row["slug"] for kind in REF_KINDS for row in catalog[CATALOG_KEYS[kind]]
    }
    summed: dict[Owner, tuple[str, int]] = {}
    for (kind, owner), found in _fingerprints().items():
        slug = "" if kind == CORE else ids.get((kind, owner))
        if slug is not None:  # else saved after the catalog was read (READ COMMITTED only)
            summed[(kind, slug)] = found
    objects = heads(catalog)
    keys = {
        owner: _remembered_key(*owner, head, summed.get(owner, ("", 0))[0])
        for owner, head in objects.items()
    }
    remembered: dict[str, str] = cache.get(REMEMBERED_KEY) or {}
    sha_of = {owner: remembered[key] for owner, key in keys.items() if key in remembered}
    # Lore is read whole (one query) and its bundles made again; those stored are not held.
    lore_sha: dict[Owner, str] = {}
    lore_held: dict[str, Held] = {}
    hold_lore(lore_rows(), lore_sha, lore_held)
    # A bundle remembered must be stored, or its text in the cache: else read it again.
    stored = set(
        ReleaseBundle.objects.filter(sha256__in=list({*sha_of.values(), *lore_held})).values_list(
            "sha256", flat=True
        )
    )
    unstored = {owner: sha for owner, sha in sha_of.items() if sha not in stored}
    texts = cache.get_many([_text_key(sha) for sha in set(unstored.values())])
    held = {sha: bundle for sha, bundle in lore_held.items() if sha not in stored}
    for owner, sha in unstored.items():
        text = texts.get(_text_key(sha))
        if text is None:
            del sha_of[owner]
        else:
            held[sha] = Held(*owner, objects[owner], decode(sha, text).rows, text)
    changed = [owner for owner in objects if owner not in sha_of]
    rows = _segments(catalog, [owner for owner in changed if owner in summed])
    made: dict[str, Any] = {}
    for owner in changed:
        sha, bundle = hold(*owner, objects[owner], rows.get(owner, []))
        held[sha] = bundle
        sha_of[owner] = sha
        made[_text_key(sha)] = bundle.text
    if made or remembered.keys() != set(keys.values()):
        # The map of the working copy as read now (what no object has any more goes);
        # two processes writing at once may drop each other's news: read again, no harm.
        made[REMEMBERED_KEY] = {keys[owner]: sha for owner, sha in sha_of.items()}
        cache.set_many(made, REMEMBERED_SECONDS)
    manifest = manifest_of(catalog, {**sha_of, **lore_sha})
    return Version(
        manifest,
        catalog=lambda: catalog,
        content_hash=content_hash(catalog, manifest),
        segment_count=sum(summed[owner][1] for owner in objects if owner in summed),
        held=held,
    )


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
