"""Content-addressed bundles: releases that grow with what changed.

What one object contributes to assembly (the core's segments; a ruleset's name and
segments; a world's segments; an entry's world, rulesets, ``entry`` and ``entry_start``
segments; an NPC's name and segments) is a **bundle**: canonical JSON, named by its
SHA-256, stored once (``ReleaseBundle``) whatever the number of releases holding it. A
release is a **manifest** naming the bundle of every object:

    {"format": 1, "core": <hash>,
     "worlds": {slug: <hash>}, "rulesets": {slug: <hash>}, "npcs": {slug: <hash>},
     "entries": {slug: [<the entry's own>, <its world's>, <its rulesets', in order>...]},
     "lore": {"": <every world's lore>, slug: <the world's own lore>}}

so an entry's prompt depends on the core and the hashes listed for it, and on the lore of
every world and of its world (listed under ``lore`` only when there is some; no section
without lore, so content without lore keeps the hash it had before lore entered releases);
an NPC's part on its hash. A lore bundle holds the active lore entries, as
:mod:`assembler.lore` uses them, so a lore-only change writes one new bundle. A release made
before lore entered releases has no ``lore`` section: it serves no lore.

A hash never changes meaning: a bundle loaded once serves every release naming it, from a
per-process memory bounded by ``RELEASE_BUNDLE_MEMORY_MB`` (least recently used first out),
and two versions are compared by their manifests before any bundle is read.

Game servers are served from a release's **index** (``Release.index``), not its manifest:
the manifest's entries and NPCs are split by slug into **shards**, bundles of kind
``index`` (content-addressed like the others), and the index names the core's and the
lore's bundles and every shard. An assembly reads the release's index (small), the shards
of its entry and NPCs, then their bundles; a new release one change away names the same
shards but the changed ones, so its first request in a process reads none but those. A
shard, and the index, name about the square root of the entries or NPCs (the index also
names a lore bundle per world with lore, as the manifest does): what a process reads grows
with what it serves and what changed, not with the whole game.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings

import assembler
from promptadmin.content.assembly import EntryBundle, NpcBundle, segment_for_assembly
from promptadmin.content.models import Scope
from promptadmin.lore.selectors import bundle_book
from promptadmin.releases.models import Release, ReleaseBundle
from promptadmin.releases.snapshot import CATALOG_KEYS, ROW_FIELDS, ContentSet, SnapSegment

BUNDLE_FORMAT = 1
MANIFEST_FORMAT = 1

CORE = "core"
# Lore's bundles, one for every world's lore (slug "") and one per world with lore of its own.
LORE = "lore"
EVERY_WORLD = ""
# The bundle each scope's segments go to, by the kind of the object they belong to.
BUNDLE_KIND: dict[str, str] = {
    Scope.CORE: CORE,
    Scope.RULESET: "ruleset",
    Scope.WORLD: "world",
    Scope.ENTRY: "entry",
    Scope.ENTRY_START: "entry",
    Scope.NPC: "npc",
}
# Where a manifest lists each kind's bundles: under the catalog's section ("npcs").
SECTIONS: dict[str, str] = {kind: CATALOG_KEYS[kind] for kind in ("world", "ruleset", "npc")}
ENTRIES = CATALOG_KEYS["entry"]
NPCS = SECTIONS["npc"]
# A release's index and its shards (see the module's docstring and index_of).
INDEX = "index"
INDEX_FORMAT = 1
ITEMS = "items"

Manifest = dict[str, Any]


def canonical(value: Any) -> str:
    """The one text of a JSON value: keys sorted, no spaces, characters as they are.

    >>> canonical({"b": [1, "é"], "a": None})
    '{"a":null,"b":[1,"é"]}'
    """
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def sha256(text: str) -> str:
    # surrogatepass: stored text is checked on the way in, but a hash must never fail.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _order(row: SnapSegment) -> tuple[str, int, int]:
    return (row.scope, row.sort_order, row.id)


def encode(kind: str, slug: str, head: Mapping[str, Any], rows: Iterable[SnapSegment]) -> str:
    """A bundle's canonical text: its kind, its object's slug, what else of the object
    assembly uses (``head``), and its segments by (scope, sort order, id)."""
    segments = [
        {name: getattr(row, name) for name in ROW_FIELDS} for row in sorted(rows, key=_order)
    ]
    return canonical(
        {"format": BUNDLE_FORMAT, "kind": kind, "slug": slug, **head, "segments": segments}
    )


class Part:
    """A bundle read back, ready to assemble: its segments by scope as the assembler wants
    them, and as a release holds them (for comparisons); a lore bundle's entries; an index
    shard's slugs and what the manifest names for each."""

    __slots__ = (
        "entry_id",
        "items",
        "kind",
        "layers",
        "lore",
        "name",
        "rows",
        "rulesets",
        "sha256",
        "size",
        "slug",
        "world",
    )

    def __init__(
        self,
        *,
        sha256: str,
        kind: str,
        slug: str,
        rows: Sequence[SnapSegment],
        name: str = "",
        entry_id: int | None = None,
        world: str = "",
        rulesets: Sequence[str] = (),
        lore: Sequence[Mapping[str, Any]] = (),
        items: Mapping[str, Any] | None = None,
        size: int = 0,
    ) -> None:
        self.sha256 = sha256
        self.lore = tuple(lore)
        self.items = items or {}
        self.kind = kind
        self.slug = slug
        self.name = name
        self.entry_id = entry_id
        self.world = world
        self.rulesets = tuple(rulesets)
        self.rows = tuple(sorted(rows, key=_order))
        layers: dict[str, list[assembler.Segment]] = {}
        for row in self.rows:
            layers.setdefault(row.scope, []).append(segment_for_assembly(row))
        self.layers = {scope: tuple(found) for scope, found in layers.items()}
        self.size = size

    def layer(self, scope: str) -> tuple[assembler.Segment, ...]:
        return self.layers.get(scope, ())

    def npc(self) -> NpcBundle:
        return NpcBundle(self.slug, self.name, self.layer(Scope.NPC))


def decode(sha: str, text: str) -> Part:
    """A stored bundle as a :class:`Part`."""
    body = json.loads(text)
    slug = body["slug"]
    rows = [
        SnapSegment(owner=slug, **{name: row[name] for name in ROW_FIELDS})
        for row in body["segments"]
    ]
    return Part(
        sha256=sha,
        kind=body["kind"],
        slug=slug,
        rows=rows,
        name=body.get("name", ""),
        entry_id=body.get("id"),
        world=body.get("world", ""),
        rulesets=body.get("rulesets", ()),
        lore=body.get(LORE, ()),
        items=body.get(ITEMS),
        # What it takes in memory, roughly: the text it was read from, twice (Python's
        # strings and the objects around them), and the segment objects.
        size=2 * len(text) + 400 * len(rows),
    )


Owner = tuple[str, str]  # (bundle kind, slug); the core's slug is ""


@dataclass(frozen=True)
class Held:
    """A bundle made from segments read now (not read back from the store)."""

    kind: str
    slug: str
    head: Mapping[str, Any]
    rows: Sequence[SnapSegment]
    text: str

    def part(self, sha: str) -> Part:
        return Part(
            sha256=sha,
            kind=self.kind,
            slug=self.slug,
            rows=self.rows,
            name=self.head.get("name", ""),
            entry_id=self.head.get("id"),
            world=self.head.get("world", ""),
            rulesets=self.head.get("rulesets", ()),
            lore=self.head.get(LORE, ()),
            items=self.head.get(ITEMS),
        )


def heads(catalog: Mapping[str, list[dict[str, Any]]]) -> dict[Owner, dict[str, Any]]:
    """Every object that has a bundle, and what of the object its bundle holds (besides
    its segments): a ruleset's and an NPC's name; an entry's id, world and rulesets."""
    found: dict[Owner, dict[str, Any]] = {(CORE, ""): {}}
    for kind, section in SECTIONS.items():
        for row in catalog.get(section, []):
            found[(kind, row["slug"])] = {} if kind == "world" else {"name": row["name"]}
    for row in catalog.get(ENTRIES, []):
        found[("entry", row["slug"])] = {
            "id": row["id"],
            "world": row["world"],
            "rulesets": list(row["rulesets"]),
        }
    return found


def lore_heads(lore: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[Owner, dict[str, Any]]:
    """The lore bundles of ``lore`` (active entries as bundle rows, by world slug, ""
    for every world's): one per world that has some, its entries by id."""
    return {
        (LORE, slug): {LORE: sorted(rows, key=lambda row: row["id"])}
        for slug, rows in lore.items()
        if rows
    }


def hold_lore(
    lore: Mapping[str, Sequence[Mapping[str, Any]]],
    sha_of: dict[Owner, str],
    held: dict[str, Held],
) -> None:
    """Add the lore bundles of ``lore`` (see :func:`lore_heads`) to ``sha_of`` and ``held``."""
    for owner, head in lore_heads(lore).items():
        sha, bundle = hold(*owner, head, [])
        sha_of[owner] = sha
        held[sha] = bundle


def lore_hashes(manifest: Manifest, world: str | None) -> tuple[str, ...]:
    """The lore bundles an assembly in ``world`` reads: every world's, the world's own
    (none from a manifest made before lore entered releases)."""
    lore = manifest.get(LORE) or {}
    return tuple(lore[slug] for slug in dict.fromkeys((EVERY_WORLD, world or "")) if slug in lore)


def lore_book_of(hashes: Sequence[str], fetch: Fetch) -> assembler.LoreBook | None:
    """The lore book of the lore bundles ``hashes`` (read by ``fetch``), built once per
    process for those hashes; None without lore."""
    if not hashes:
        return None
    return bundle_book(
        tuple(hashes),
        lambda: [row for part in fetch(hashes).values() for row in part.lore],
    )


def hold(
    kind: str, slug: str, head: Mapping[str, Any], rows: Sequence[SnapSegment]
) -> tuple[str, Held]:
    """An object's bundle made from its segments: its hash, and it."""
    text = encode(kind, slug, head, rows)
    return sha256(text), Held(kind, slug, head, rows, text)


def manifest_of(
    catalog: Mapping[str, list[dict[str, Any]]], sha_of: Mapping[Owner, str]
) -> Manifest:
    """The manifest of ``catalog``'s objects, whose bundles are ``sha_of``."""
    manifest: Manifest = {"format": MANIFEST_FORMAT, "core": sha_of[(CORE, "")]}
    for kind, section in SECTIONS.items():
        manifest[section] = {
            row["slug"]: sha_of[(kind, row["slug"])] for row in catalog.get(section, [])
        }
    lore = {slug: sha for (kind, slug), sha in sorted(sha_of.items()) if kind == LORE}
    if lore:  # without lore, the manifest (and the content hash) of a release made before
        manifest[LORE] = lore
    worlds, rulesets = manifest[SECTIONS["world"]], manifest[SECTIONS["ruleset"]]
    manifest[ENTRIES] = {
        row["slug"]: [
            sha_of[("entry", row["slug"])],
            worlds[row["world"]],
            *(rulesets[slug] for slug in row["rulesets"]),
        ]
        for row in catalog.get(ENTRIES, [])
    }
    return manifest


def content_hash(catalog: Mapping[str, list[dict[str, Any]]], manifest: Manifest) -> str:
    """SHA-256 of everything a release holds: its objects and its bundles' hashes.

    (Releases made before bundles keep the hash they were made with, over every segment.)
    """
    objects = {plural: catalog.get(plural, []) for plural in CATALOG_KEYS.values()}
    return sha256(canonical({"catalog": objects, "manifest": manifest}))


def built(content: ContentSet) -> tuple[Manifest, dict[str, Held]]:
    """``content`` as a manifest and its bundles by hash; worked out once per content set."""
    if content._built:
        return content._built[0]  # type: ignore[no-any-return]
    by_owner: dict[Owner, list[SnapSegment]] = {}
    for row in content.segments.values():
        by_owner.setdefault((BUNDLE_KIND[row.scope], row.owner), []).append(row)
    held: dict[str, Held] = {}
    sha_of: dict[Owner, str] = {}
    for (kind, slug), head in heads(content.catalog).items():
        sha, bundle = hold(kind, slug, head, by_owner.get((kind, slug), []))
        sha_of[(kind, slug)] = sha
        held[sha] = bundle
    hold_lore(content.lore, sha_of, held)
    result = (manifest_of(content.catalog, sha_of), held)
    content._built.append(result)
    return result


def manifest_hashes(manifest: Manifest) -> set[str]:
    """Every bundle ``manifest`` names."""
    found = {manifest["core"]}
    for section in SECTIONS.values():
        found.update(manifest[section].values())
    for listed in manifest[ENTRIES].values():
        found.update(listed)
    found.update((manifest.get(LORE) or {}).values())
    return found


def shard_count(size: int) -> int:
    """How many shards a section of ``size`` objects is split into: the least power of two
    whose square is ``size`` or more, so that a shard and the index each name about the
    square root of the section (and the count changes only as the game grows fourfold).

    >>> [shard_count(size) for size in (0, 1, 2, 5, 1000, 2000)]
    [1, 1, 2, 4, 32, 64]
    """
    count = 1
    while count * count < size:
        count *= 2
    return count


def shard_of(slug: str, count: int) -> int:
    """The shard of ``count`` that lists ``slug`` (by its hash: stable, and even).

    >>> shard_of("drowned-bell", 1), shard_of("drowned-bell", 4)
    (0, 3)
    """
    digest = hashlib.sha256(slug.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:4]) % count


Index = dict[str, Any]


def index_of(manifest: Manifest) -> tuple[Index, dict[str, Held]]:
    """The index a release is served from, and its shards by hash.

    ``{"format": 1, "core": <hash>, "lore": {...as in the manifest}, "entries": [<shard>...],
    "npcs": [<shard>...]}``: the entries of the manifest are split by :func:`shard_of` into
    ``shard_count`` shards, each a bundle ``{"kind": "index", "slug": "entries/<n>",
    "items": {slug: what the manifest names}}``, and so are the NPCs.
    """
    index: Index = {"format": INDEX_FORMAT, "core": manifest["core"]}
    index[LORE] = manifest.get(LORE) or {}
    held: dict[str, Held] = {}
    for section in (ENTRIES, NPCS):
        listed: Mapping[str, Any] = manifest[section]
        count = shard_count(len(listed))
        shards: list[dict[str, Any]] = [{} for _ in range(count)]
        for slug, value in listed.items():
            shards[shard_of(slug, count)][slug] = value
        index[section] = []
        for number, items in enumerate(shards):
            sha, bundle = hold(INDEX, f"{section}/{number}", {ITEMS: items}, [])
            held[sha] = bundle
            index[section].append(sha)
    return index, held


def indexed(
    index: Index, entry_slug: str, npc_slugs: Sequence[str], fetch: Fetch
) -> tuple[list[str] | None, dict[str, str]]:
    """What ``index`` names for an entry (the core's bundle, then those the manifest lists
    for it; None: no such entry) and the NPCs of ``npc_slugs`` it has, read from the shards
    they are in (by ``fetch``, all at once)."""

    def shard(section: str, slug: str) -> str:
        shards: list[str] = index[section]
        return shards[shard_of(slug, len(shards))]

    entry_shard = shard(ENTRIES, entry_slug)
    npc_shards = {slug: shard(NPCS, slug) for slug in npc_slugs}
    parts = fetch({entry_shard, *npc_shards.values()})
    listed = parts[entry_shard].items.get(entry_slug)
    npcs = {
        slug: parts[sha].items[slug] for slug, sha in npc_shards.items() if slug in parts[sha].items
    }
    return (None if listed is None else [index["core"], *listed]), npcs


class BundleMemory:
    """Bundles loaded in this process, by hash, least recently used first out once their
    sizes pass ``RELEASE_BUNDLE_MEMORY_MB``. Shared by every release: a hash never changes
    meaning, so what is here is valid forever."""

    def __init__(self) -> None:
        self._parts: OrderedDict[str, Part] = OrderedDict()
        self._lock = threading.Lock()
        self.size = 0

    def get_many(self, hashes: Iterable[str]) -> dict[str, Part]:
        found: dict[str, Part] = {}
        with self._lock:
            for sha in hashes:
                part = self._parts.get(sha)
                if part is not None:
                    self._parts.move_to_end(sha)
                    found[sha] = part
        return found

    def put(self, part: Part) -> None:
        budget = settings.RELEASE_BUNDLE_MEMORY_MB * 1024 * 1024
        if part.size > budget:
            return  # kept by no one: it would push out everything else
        with self._lock:
            if part.sha256 in self._parts:
                return
            self._parts[part.sha256] = part
            self.size += part.size
            while self.size > budget:
                _sha, oldest = self._parts.popitem(last=False)
                self.size -= oldest.size

    def __contains__(self, sha: str) -> bool:
        return sha in self._parts

    def __len__(self) -> int:
        return len(self._parts)

    def clear(self) -> None:
        with self._lock:
            self._parts.clear()
            self.size = 0


memory = BundleMemory()


def stored_parts(hashes: Collection[str], *, keep: bool = True) -> dict[str, Part]:
    """The stored bundles named ``hashes``: from this process's memory, the rest in one
    query. ``keep``: remember those read (serving); a comparison reading many passes
    False, so that it does not push out what game servers are served."""
    found = memory.get_many(hashes)
    missing = [sha for sha in hashes if sha not in found]
    if missing:
        rows = ReleaseBundle.objects.filter(sha256__in=missing).values_list("sha256", "content")
        for sha, text in rows:
            part = found[sha] = decode(sha, text)
            if keep:
                memory.put(part)
    return found


Fetch = Callable[[Collection[str]], Mapping[str, Part]]


class Version:
    """One version of the content as assemblies and comparisons see it: a manifest, the
    bundles it names and, when asked, the catalog. Bundles made from segments read now
    are ``held``; the others are read from the store by hash when first needed."""

    def __init__(
        self,
        manifest: Manifest,
        *,
        catalog: Callable[[], Mapping[str, list[dict[str, Any]]]],
        content_hash: str,
        segment_count: int,
        held: Mapping[str, Held] | None = None,
        keep: bool = False,
    ) -> None:
        self.manifest = manifest
        self.content_hash = content_hash
        self.segment_count = segment_count
        self.held = dict(held or {})
        self._keep = keep
        self._parts: dict[str, Part] = {}
        self._catalog = catalog
        self._catalog_read: list[Mapping[str, list[dict[str, Any]]]] = []
        self._worlds: dict[str, str] | None = None

    @property
    def catalog(self) -> Mapping[str, list[dict[str, Any]]]:
        if not self._catalog_read:
            self._catalog_read.append(self._catalog())
        return self._catalog_read[0]

    @property
    def npc_hashes(self) -> Mapping[str, str]:
        return self.manifest[SECTIONS["npc"]]  # type: ignore[no-any-return]

    def entry_world(self, slug: str) -> str | None:
        """The world of the entry ``slug`` (None: no such entry), from the manifest alone:
        a world's bundle names its slug, so its hash names the world."""
        listed = self.manifest[ENTRIES].get(slug)
        if listed is None:
            return None
        if self._worlds is None:
            self._worlds = {sha: name for name, sha in self.manifest[SECTIONS["world"]].items()}
        return self._worlds.get(listed[1])

    def entry_lore_hashes(self, slug: str) -> tuple[str, ...]:
        """The lore bundles an assembly of the entry ``slug`` reads."""
        world = self.entry_world(slug)
        return () if world is None else lore_hashes(self.manifest, world)

    def lore(self, world_slug: str | None) -> assembler.LoreBook | None:
        """A ``promptadmin.content.assembly.LoreLoader``: this version's lore for an
        assembly in ``world_slug``."""
        return lore_book_of(lore_hashes(self.manifest, world_slug), self.parts)

    def entry_hashes(self, slug: str) -> list[str] | None:
        """What the entry ``slug`` assembles from: the core's bundle, its own, its world's
        and its rulesets' (None: no such entry)."""
        listed = self.manifest[ENTRIES].get(slug)
        return None if listed is None else [self.manifest["core"], *listed]

    def parts(self, hashes: Collection[str]) -> Mapping[str, Part]:
        found: dict[str, Part] = {}
        wanted = []
        for sha in hashes:
            part = self._parts.get(sha)
            if part is None and sha in self.held:
                part = self._parts[sha] = self.held[sha].part(sha)
            if part is None:
                wanted.append(sha)
            else:
                found[sha] = part
        if wanted:
            found.update(stored_parts(wanted, keep=self._keep))
        return found

    @property
    def loaded(self) -> Mapping[str, Part]:
        """The bundles this version has read so far, by hash."""
        return self._parts

    def pinned(self, hashes: Collection[str], known: Mapping[str, Part] | None = None) -> Version:
        """This version with the bundles ``hashes`` read now, once, and kept by it alone
        (a comparison assembling many scenarios reads what they need in one query).
        ``known``: bundles read already (by another version, say): a hash names one
        content, so those are taken as they are, not read again."""
        known = known or {}
        version = Version(
            self.manifest,
            catalog=self._catalog,
            content_hash=self.content_hash,
            segment_count=self.segment_count,
            held=self.held,
            keep=self._keep,
        )
        version._catalog_read = self._catalog_read
        version._parts.update((sha, known[sha]) for sha in hashes if sha in known)
        version._parts.update(self.parts([sha for sha in hashes if sha not in known]))
        return version

    def load(
        self, entry_slug: str, npc_slugs: Sequence[str]
    ) -> tuple[EntryBundle | None, dict[str, NpcBundle]]:
        """A ``promptadmin.content.assembly.Loader``: the bundles it needs, and no other."""
        listed = self.entry_hashes(entry_slug)
        npc_hashes = {slug: self.npc_hashes[slug] for slug in npc_slugs if slug in self.npc_hashes}
        return compose(listed, npc_hashes, self.parts)

    def content(self) -> ContentSet:
        """Everything this version holds, as a content set (reads every bundle)."""
        parts = self.parts(manifest_hashes(self.manifest))
        segments = {row.id: row for part in parts.values() for row in part.rows}
        lore = {part.slug: list(part.lore) for part in parts.values() if part.kind == LORE}
        return ContentSet(catalog=self.catalog, segments=segments, lore=lore)


def compose(
    listed: Sequence[str] | None, npc_hashes: Mapping[str, str], fetch: Fetch
) -> tuple[EntryBundle | None, dict[str, NpcBundle]]:
    """An entry's content from the bundles ``listed`` (the core's, its own, its world's,
    its rulesets'; None: no such entry), and the NPCs' from theirs, read by ``fetch``."""
    parts = fetch([*(listed or ()), *npc_hashes.values()])
    npcs = {slug: parts[sha].npc() for slug, sha in npc_hashes.items()}
    if listed is None:
        return None, npcs
    core, own, world, *rulesets = (parts[sha] for sha in listed)
    bundle = EntryBundle(
        entry_id=own.entry_id or 0,
        world_slug=own.world,
        rulesets=tuple(
            assembler.Ruleset(slug=part.slug, name=part.name, segments=part.layer(Scope.RULESET))
            for part in rulesets
        ),
        core=core.layer(Scope.CORE),
        world=world.layer(Scope.WORLD),
        entry=own.layer(Scope.ENTRY),
        entry_start=own.layer(Scope.ENTRY_START),
    )
    return bundle, npcs


def content_version(content: ContentSet) -> Version:
    """A content set as a version: every bundle made from its segments."""
    manifest, held = built(content)
    return Version(
        manifest,
        catalog=lambda: content.catalog,
        content_hash=content_hash(content.catalog, manifest),
        segment_count=len(content.segments),
        held=held,
    )


def release_version(release: Release, *, keep: bool = False) -> Version:
    """A release as a version: its bundles are read from the store when first needed.
    ``keep``: remember them in this process (see :func:`stored_parts`)."""
    pk = release.pk
    return Version(
        release.manifest,
        catalog=lambda: (
            release.catalog
            if "catalog" in release.__dict__
            else Release.objects.values_list("catalog", flat=True).get(pk=pk)
        ),
        content_hash=release.content_hash,
        segment_count=release.segment_count,
        keep=keep,
    )


def release_content(release: Release) -> ContentSet:
    """Everything ``release`` holds (reads every bundle it names)."""
    return release_version(release).content()


def store(held: Mapping[str, Held]) -> int:
    """Write the bundles of ``held`` (a version's, an index's shards) that are not stored
    yet; how many were written. A bundle another release stored meanwhile is skipped."""
    hashes = list(held)
    known: set[str] = set()
    for start in range(0, len(hashes), BATCH):
        chunk = hashes[start : start + BATCH]
        known.update(
            ReleaseBundle.objects.filter(sha256__in=chunk).values_list("sha256", flat=True)
        )
    new = [
        ReleaseBundle(sha256=sha, kind=bundle.kind, content=bundle.text)
        for sha, bundle in held.items()
        if sha not in known
    ]
    ReleaseBundle.objects.bulk_create(new, batch_size=WRITE_BATCH, ignore_conflicts=True)
    return len(new)


BATCH = 5000  # hashes looked up per query
WRITE_BATCH = 200  # bundles per INSERT (some 40 KB each)
