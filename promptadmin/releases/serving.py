"""Which content an assembly is served from: a release, a label's release or the working copy.

A release never changes, so its bundles are kept in process memory: assembling a release
named explicitly costs no query and no cache round trip. Not for as long as the process
lives, though: memory bounds it to the LOADED_RELEASES releases served most recently (the
next one pushes out the least recently used, which is loaded again, in one query, the
next time it is served). Labels move, so they are read through the shared cache (one
round trip, the label map), refreshed the moment a move commits. A name is a label before
it is a release's (an admin may set a label a release is named after, see
releases.services.release_label_set), so a release named in a request is served from
process memory without asking only for NAME_TRUSTED_SECONDS after the label map last
said no label has that name.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Q

from promptadmin.content.assembly import AssemblyInputError, Loader, LoreLoader, load_content
from promptadmin.core.cache import shared, shared_changed
from promptadmin.lore.selectors import lore_book
from promptadmin.releases.models import (
    PRODUCTION,
    WORKING,
    Release,
    ReleaseLabel,
    ReleaseLabelMove,
)
from promptadmin.releases.snapshot import Bundles, release_content

# The shape of the cached map is in its key: a process running other code never reads a map
# of another shape.
LABELS_KEY = "releases:labels:v2"
# Releases whose bundles a process keeps: a release of 10,000 segments of 30 to 120 words
# takes about 9 MB, so 8 take about 75 MB in each process. Serving is production's, maybe
# staging's, and a few named ones; a bound of 32 would let a burst of old releases named
# in previews hold some 300 MB.
LOADED_RELEASES = 8
# How long a process serves a release named in a request from its memory before reading
# the label map again: how long, at most, a new label of that name goes unseen there.
NAME_TRUSTED_SECONDS = 2.0

_loaded: OrderedDict[str, Bundles] = OrderedDict()
# Names of _loaded that were no label's, and when the label map said so (time.monotonic()).
_not_labels: dict[str, float] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class Served:
    """The content an assembly uses: ``name`` is a release's or ``working``; ``lore``
    gives its lore (releases hold none yet: lore enters them with content-addressed
    bundles)."""

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


def _remembered(name: str) -> Bundles | None:
    with _lock:
        bundles = _loaded.get(name)
        if bundles is not None:
            _loaded.move_to_end(name)
        return bundles


def release_bundles(name: str) -> Bundles | None:
    """The bundles of the release named ``name``, from process memory or loaded once."""
    bundles = _remembered(name)
    if bundles is not None:
        return bundles
    release = Release.objects.filter(Q(name=name) | Q(aliases__name=name)).first()
    if release is None:
        return None
    bundles = release_content(release).bundles()
    with _lock:
        _loaded[name] = bundles
        while len(_loaded) > LOADED_RELEASES:
            _not_labels.pop(_loaded.popitem(last=False)[0], None)
    return bundles


def _named_release(name: str) -> Bundles | None:
    """The release called ``name`` from process memory, while ``name`` is known to be no
    label's (see NAME_TRUSTED_SECONDS)."""
    seen = _not_labels.get(name)
    if seen is None or time.monotonic() - seen >= NAME_TRUSTED_SECONDS:
        return None
    return _remembered(name)


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
        bundles = _named_release(requested)
        if bundles is not None:
            return Served(requested, None, bundles.load)
    label = requested or PRODUCTION
    name = labels().get(label)
    if name is not None:
        bundles = release_bundles(name)
        if bundles is not None:
            return Served(name, label, bundles.load)
    if requested is None:
        return WORKING_COPY
    bundles = release_bundles(requested)
    if bundles is None:
        raise AssemblyInputError(
            {"release": f"No release or label named '{requested}' (or use 'working')."}
        )
    with _lock:
        if requested in _loaded:
            _not_labels[requested] = time.monotonic()
    return Served(requested, None, bundles.load)
