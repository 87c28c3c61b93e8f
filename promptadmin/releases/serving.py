"""Which content an assembly is served from: a release, a label's release or the working copy.

A release never changes. A process keeps the LOADED_RELEASES releases served most
recently: of each, its index (``Release.index``: a few KB, never the manifest of the whole
game); and the index shards and bundles requests needed, in the bundle memory every
release shares (``releases.bundles``). A release's first request reads its index, then
only the shards and bundles it needs that no release served before had loaded, so a new
release one edit away from the last costs one small query (and one more for what
changed), and memory grows with what is served, not with the releases. Labels move, so
they are read through the shared cache (one round trip, the label map), refreshed the
moment a move commits. A name is a label before it is a release's (an admin may set a
label a release is named after, see releases.services.release_label_set), so a release
named in a request is served from process memory without asking only for
NAME_TRUSTED_SECONDS after the label map last said no label has that name.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection

from assembler import LoreBook
from promptadmin.content.assembly import (
    AssemblyInputError,
    EntryBundle,
    Loader,
    LoreLoader,
    NpcBundle,
    load_content,
)
from promptadmin.core.cache import shared, shared_changed
from promptadmin.lore.selectors import lore_book
from promptadmin.releases.bundles import (
    Index,
    Part,
    Version,
    compose,
    indexed,
    lore_book_of,
    lore_hashes,
    memory,
    release_version,
    stored_parts,
)
from promptadmin.releases.models import (
    PRODUCTION,
    WORKING,
    Release,
    ReleaseAlias,
    ReleaseLabel,
    ReleaseLabelMove,
)

# The shape of the cached map is in its key: a process running other code never reads a map
# of another shape.
LABELS_KEY = "releases:labels:v2"
# Releases a process keeps (their indexes, a few KB each; their shards and bundles are in
# the shared bundle memory).
LOADED_RELEASES = 16
# How long a process serves a release named in a request from its memory before reading
# the label map again: how long, at most, a new label of that name goes unseen there.
NAME_TRUSTED_SECONDS = 2.0

_loaded: OrderedDict[str, ServedRelease | Version] = OrderedDict()
# Names of _loaded that were no label's, and when the label map said so (time.monotonic()).
_not_labels: dict[str, float] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class Served:
    """The content an assembly uses: ``name`` is a release's or ``working``; ``lore``
    gives its lore (a release's from its lore bundles; one made before lore entered
    releases serves none)."""

    name: str
    label: str | None
    load: Loader
    lore: LoreLoader | None = None

    def to_dict(self) -> dict[str, str | None]:
        return {"name": self.name, "label": self.label}


def labels_from_database() -> dict[str, Any]:
    """The label map as the shared cache holds it: every label and the name of its
    release, and its version: how many moves have committed. Moves are never deleted, so
    the count grows with every commit (the newest id would not: ids are numbered when a
    move is made, and two moves may commit in the other order).

    One query (a cache miss on the assembly path costs no more than before the map had a
    version): the version rides on every row, and on a row of its own when no label
    exists (removing the last label is a move too, so the version is needed then).
    """
    quote = connection.ops.quote_name
    label, release, move = (
        quote(model._meta.db_table) for model in (ReleaseLabel, Release, ReleaseLabelMove)
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT (SELECT COUNT(*) FROM {move}), l.name, r.name"
            f" FROM (SELECT 1) AS one LEFT JOIN {label} AS l ON 1 = 1"
            f" LEFT JOIN {release} AS r ON r.id = l.release_id"
        )
        rows = cursor.fetchall()
    return {
        "version": rows[0][0],
        "labels": {name: release_name for _, name, release_name in rows if name is not None},
    }


def labels() -> dict[str, str]:
    """Every label and the name of its release (through the shared cache)."""
    return shared(LABELS_KEY, labels_from_database)["labels"]  # type: ignore[no-any-return]


def label_map_version(label_map: dict[str, Any]) -> int:
    return label_map["version"]  # type: ignore[no-any-return]


def labels_changed() -> None:
    """Once the current transaction commits, store the new label map in the shared cache
    (never leaving an older map there: see :func:`promptadmin.core.cache.shared_store`)."""
    shared_changed(LABELS_KEY, labels_from_database, label_map_version)


class ServedRelease:
    """A release as game servers are served it: its index, read once (a few KB, whatever
    the size of the game). The shards and bundles it names are read when a request first
    needs them, into the bundle memory every release shares: a release one change away
    from one served before reads none but those that changed."""

    def __init__(self, pk: int, index: Index) -> None:
        self.pk = pk
        self.index = index

    def load(
        self, entry_slug: str, npc_slugs: Sequence[str]
    ) -> tuple[EntryBundle | None, dict[str, NpcBundle]]:
        """A ``promptadmin.content.assembly.Loader``: the bundles it needs, and no other."""
        listed, npc_hashes = indexed(self.index, entry_slug, npc_slugs, _kept)
        return compose(listed, npc_hashes, _kept)

    def lore(self, world_slug: str | None) -> LoreBook | None:
        """A ``promptadmin.content.assembly.LoreLoader``: the release's lore for a world."""
        return lore_book_of(lore_hashes(self.index, world_slug), _kept)


def _kept(hashes: Collection[str]) -> dict[str, Part]:
    return stored_parts(hashes, keep=True)


Loaded = ServedRelease | Version


def _remembered(name: str) -> Loaded | None:
    with _lock:
        version = _loaded.get(name)
        if version is not None:
            _loaded.move_to_end(name)
        return version


def _index_of_release(name: str) -> tuple[int, Index] | None:
    """The id and the index of the release called ``name`` (its own name or an alias's),
    in one query that reads nothing else of it."""
    quote = connection.ops.quote_name
    release, alias = (quote(model._meta.db_table) for model in (Release, ReleaseAlias))
    columns = f"r.{quote('id')}, r.{quote('index')}"
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {columns} FROM {release} AS r WHERE r.{quote('name')} = %s"
            f" UNION ALL SELECT {columns} FROM {alias} AS a"
            f" JOIN {release} AS r ON r.{quote('id')} = a.{quote('release_id')}"
            f" WHERE a.{quote('name')} = %s",
            [name, name],
        )
        found = cursor.fetchone()
    if found is None:
        return None
    pk, index = found
    return pk, json.loads(index) if isinstance(index, str) else index


def loaded_release(name: str) -> Loaded | None:
    """The release named ``name``, from process memory or read once: its index (see
    :class:`ServedRelease`); the shards and bundles it names are read when a request needs
    them, and kept."""
    version = _remembered(name)
    if version is not None:
        return version
    found = _index_of_release(name)
    if found is None:
        return None
    pk, index = found
    loaded: Loaded
    if index:
        loaded = ServedRelease(pk, index)
    else:
        # Made without one by code older than the index, still running while a deploy
        # rolls out: served from its whole manifest, as that code served it.
        release = Release.objects.only("id", "manifest", "content_hash", "segment_count")
        loaded = release_version(release.get(pk=pk), keep=True)
    with _lock:
        _loaded[name] = loaded
        while len(_loaded) > LOADED_RELEASES:
            _not_labels.pop(_loaded.popitem(last=False)[0], None)
    return loaded


def _named_release(name: str) -> Loaded | None:
    """The release called ``name`` from process memory, while ``name`` is known to be no
    label's (see NAME_TRUSTED_SECONDS)."""
    seen = _not_labels.get(name)
    if seen is None or time.monotonic() - seen >= NAME_TRUSTED_SECONDS:
        return None
    return _remembered(name)


def forget() -> None:
    """Forget every release and bundle loaded, as a fresh process starts (tests, scripts)."""
    with _lock:
        _loaded.clear()
        _not_labels.clear()
    memory.clear()


WORKING_COPY = Served(WORKING, None, load_content, lore_book)


def resolve(requested: str | None) -> Served:
    """What ``requested`` (a label, a release name or alias, ``working`` or None) serves.

    None serves the ``production`` label's release when that label exists, else the
    working copy. A label goes before a release of the same name. Raises
    AssemblyInputError (field ``release``) for an unknown name.
    """
    if requested == WORKING:
        return WORKING_COPY
    if requested is not None:
        version = _named_release(requested)
        if version is not None:
            return Served(requested, None, version.load, version.lore)
    label = requested or PRODUCTION
    name = labels().get(label)
    if name is not None:
        version = loaded_release(name)
        if version is not None:
            return Served(name, label, version.load, version.lore)
    if requested is None:
        return WORKING_COPY
    version = loaded_release(requested)
    if version is None:
        raise AssemblyInputError(
            {"release": f"No release or label named '{requested}' (or use 'working')."}
        )
    with _lock:
        if requested in _loaded:
            _not_labels[requested] = time.monotonic()
    return Served(requested, None, version.load, version.lore)
