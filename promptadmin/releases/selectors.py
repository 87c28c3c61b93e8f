"""Reads for the entry points: releases with their labels, a side of a comparison."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ObjectDoesNotExist
from django.db.models import Q, QuerySet

from promptadmin.core import cache as content_cache
from promptadmin.lore.selectors import LORE_GENERATION_KEY
from promptadmin.releases import reports
from promptadmin.releases.bundles import ENTRIES, Version, content_version, release_version
from promptadmin.releases.impact import content_changes
from promptadmin.releases.models import (
    PRODUCTION,
    WORKING,
    Release,
    ReleaseLabel,
    ReleaseLabelMove,
)
from promptadmin.releases.scenarios import Judged, ScenarioSpec
from promptadmin.releases.snapshot import CATALOG_KEYS, ContentSet
from promptadmin.releases.working import working_version


def releases() -> QuerySet[Release]:
    """Releases, newest first, with their labels, aliases and authors (four queries in all);
    their catalogs, manifests and indexes (read when a release is opened or served) left
    out."""
    return (
        Release.objects.select_related("created_by")
        .prefetch_related("labels", "aliases")
        .defer("catalog", "manifest", "index")
    )


def release_called(name: str) -> Release | None:
    """The release whose own name, or one of whose aliases, is ``name`` (never a label's)."""
    return releases().filter(Q(name=name) | Q(aliases__name=name)).first()


def release_named(name: str) -> Release:
    """The release the label ``name`` points at, else the one called ``name`` (a label
    goes first: an admin may set a label a release is named after)."""
    return _named(name)[0]


def _named(name: str, rows: QuerySet[Release] | None = None) -> tuple[Release, str | None]:
    """:func:`release_named` (read from ``rows``: :func:`releases` by default), and
    ``name`` when it is a label (else None)."""
    rows = releases() if rows is None else rows
    release = rows.filter(labels__name=name).first()
    if release is not None:
        return release, name
    release = rows.filter(Q(name=name) | Q(aliases__name=name)).first()
    if release is None:
        raise ObjectDoesNotExist(f"No release or label named '{name}'.")
    return release, None


NOTHING = ContentSet(catalog={plural: [] for plural in CATALOG_KEYS.values()}, segments={})


def side(name: str | None) -> tuple[Version, dict[str, Any]]:
    """One side of a comparison: ``working``, a label, a release name, or None (nothing
    published yet: every object and segment is new). Its ``content_hash`` is what a
    publish of the working copy compared may expect (``expected_hash``)."""
    if name is None:
        described = {"name": "nothing", "label": None, "content_hash": None}
        return content_version(NOTHING), described
    if name == WORKING:
        version = working_version()
        return version, {"name": WORKING, "label": None, "content_hash": version.content_hash}
    # Its manifest in the same query; neither its catalog (read when needed) nor its labels.
    release, label = _named(name, Release.objects.defer("catalog"))
    described = {"name": release.name, "label": label, "content_hash": release.content_hash}
    return release_version(release), described


def _scenarios(old: Version, new: Version) -> list[ScenarioSpec]:
    """The scenarios a comparison judges: the saved ones, then the implicit ones of every
    entry either side holds."""
    return _judged(old, new).specs()


def _judged(old: Version, new: Version) -> Judged:
    """:func:`_scenarios`, read when needed (a report kept needs none of them)."""
    return Judged([*old.manifest[ENTRIES], *new.manifest[ENTRIES]])


def compare_report(before: str | None, after: str) -> dict[str, Any]:
    """The impact report of going from ``before`` to ``after`` (each a side's name)."""
    old, old_side = side(before)
    new, new_side = side(after)
    report = reports.report(old, new, _judged(old, new))
    return {"before": old_side, "after": new_side, **report}


def compare_started(before: str | None, after: str) -> dict[str, Any]:
    """:func:`compare_report`, but when many scenarios must be assembled again (a change
    to the core), the report without them (``scenarios`` empty) and ``pending``: the key
    the background task fills in, and how far it is (see ``reports.progress``)."""
    old, old_side = side(before)
    new, new_side = side(after)
    report = reports.started(old, new, _judged(old, new), before_name=before, after_name=after)
    return {"before": old_side, "after": new_side, **report}


def compare_fill(before: str | None, after: str, key: str) -> str:
    """Make the report :func:`compare_started` left pending under ``key`` (the task)."""
    try:
        old, _ = side(before)
        new, _ = side(after)
    except ObjectDoesNotExist:  # a label removed meanwhile: the page, polling, says so
        return reports.stale(key)
    return reports.fill(old, new, _judged(old, new), key)


def unpublished() -> dict[str, Any] | None:
    """What the working copy changes against the production release (None: no label).

    Worked out once per content change and production release (reading the whole working
    copy takes about 0.3 s at 10,000 segments); the label itself is read every time.
    Only the bundles that differ are read from the release.
    """
    # The release's manifest, index and catalog (half a megabyte at 1,000 entries) are read
    # only when the summary is worked out again, not on every dashboard.
    label = (
        ReleaseLabel.objects.select_related("release")
        .defer("release__manifest", "release__catalog", "release__index")
        .filter(name=PRODUCTION)
        .first()
    )
    if label is None:
        return None
    # Lore has a generation of its own: a lore change makes a new summary too.
    generations = f"{content_cache.generation()}.{content_cache.generation(LORE_GENERATION_KEY)}"
    key = content_cache.key(generations, "unpublished", label.release.name)
    found: dict[str, Any] | None = content_cache.get_many([key]).get(key)
    if found is None:
        old, new = release_version(label.release), working_version()
        found = {
            "release": label.release.name,
            **content_changes(old, new),
        }
        content_cache.set_many({key: found})
    return found


def choices() -> list[tuple[str, str]]:
    """What a person can pick to preview or compare: the working copy, labels, releases."""
    # Names only: a release row holds its manifest, which a list of names never reads.
    labels = list(ReleaseLabel.objects.order_by("name").values_list("name", "release__name"))
    names = list(Release.objects.values_list("name", flat=True)[:200])
    return [
        (WORKING, "Working copy (unpublished edits)"),
        *[(label, f"{label} → {release}") for label, release in labels],
        *[(name, name) for name in names],
    ]


def label_moves() -> QuerySet[ReleaseLabelMove]:
    """Every move of a label, newest first, with its releases and who moved it."""
    return ReleaseLabelMove.objects.select_related("from_release", "to_release", "by")
