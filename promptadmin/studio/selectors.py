"""Reads for the studio's pages, each in a number of queries that does not grow with content."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Case, Count, Model, Prefetch, Q, QuerySet, When
from django.urls import reverse

from assembler.explain import layer_title
from promptadmin.content.kinds import KINDS, kind_of
from promptadmin.content.models import (
    DEPRECATED_SCOPES,
    SEGMENT_SCOPES,
    Entry,
    EntryRuleset,
    Ruleset,
    Scope,
    Segment,
    World,
    segment_title,
)
from promptadmin.content.search import search_words, segment_search
from promptadmin.core.templatetags.bidi import labelled


def object_url(obj: Model | None) -> str | None:
    """The studio page of a world, ruleset, entry or NPC."""
    if obj is None:
        return None
    return reverse(f"studio:{kind_of(obj).key}_edit", args=[obj.slug])  # type: ignore[attr-defined]


def segment_words(segment: Segment) -> str:
    """A segment in a writer's words, for messages: its layer, title and owner, never a
    scope key (``entry_start``).

    ``the entry start segment 'Open on the pier' of The Drowned Bell``
    """
    kind = layer_title(segment.scope, capital=False)
    title = f" '{segment.title}'" if segment.title else ""
    ref = segment.ref
    owner = f" of {ref.name}" if ref is not None else ""
    return f"the {kind} segment{title}{owner}"


def segment_list(
    *,
    scope: str = "",
    obj: Model | None = None,
    active: bool | None = None,
    q: str = "",
    order_by: tuple[str, ...] = ("-updated_at", "-id"),
) -> QuerySet[Segment]:
    """Segments matching the list's filters. Every word of ``q`` must match the title or
    the text (as a prefix, through the search index: see content.search); ``#12`` is the
    segment with id 12. Sorting by ``rank`` puts the best matches first."""
    segments = Segment.objects.select_related(*KINDS, "updated_by")
    if scope:
        segments = segments.filter(scope=scope)
    if obj is not None:
        segments = segments.filter(**{kind_of(obj).key: obj})
    if active is not None:
        segments = segments.filter(active=active)
    q = q.strip()
    if q.startswith("#") and q[1:].isascii() and q[1:].isdigit() and len(q) < 19:
        segments = segments.filter(pk=int(q[1:]))
        q = ""
    if search_words(q):
        segments = segment_search(segments, q)
    else:
        # Nothing to rank: the order falls to the next columns (read from their index).
        order_by = tuple(name for name in order_by if name.lstrip("-") != "rank")
    return segments.order_by(*order_by)


@dataclass(frozen=True)
class ScopeCount:
    scope: str
    label: str
    active: int
    inactive: int
    deprecated: bool

    @property
    def total(self) -> int:
        return self.active + self.inactive


def scope_counts(stored: dict[str, list[int]]) -> list[ScopeCount]:
    """Active and inactive segments per scope, as the background check counted them
    (deprecated scopes only when present)."""
    rows = []
    for scope in (*SEGMENT_SCOPES, *DEPRECATED_SCOPES):
        active, inactive = (stored.get(scope) or [0, 0])[:2]
        deprecated = scope in DEPRECATED_SCOPES
        if deprecated and not active + inactive:
            continue
        rows.append(ScopeCount(scope, Scope(scope).label, active, inactive, deprecated))
    return rows


@dataclass(frozen=True)
class BlankSegment:
    pk: int
    scope_label: str


def blank_segments(stored: list[list[Any]]) -> list[BlankSegment]:
    """The active segments without text the background check found."""
    labels = dict(Scope.choices)
    return [BlankSegment(int(pk), str(labels.get(scope, scope))) for pk, scope in stored]


@dataclass(frozen=True)
class Change:
    when: datetime
    who: Any
    action: str
    kind: str
    label: str
    url: str | None


ACTIONS = {"+": "created", "~": "changed", "-": "deleted"}
SCOPE_WORDS = {"npc": "NPC", "rng": "RNG"}


def recent_changes(limit: int = 12) -> list[Change]:
    """The latest changes to content, newest first: one query per kind of object."""
    changes: list[Change] = []
    for record in Segment.history.select_related("history_user").order_by("-history_id")[:limit]:
        deleted = record.history_type == "-"
        changes.append(
            Change(
                when=record.history_date,
                who=record.history_user or record.history_change_reason,
                action=ACTIONS[record.history_type],
                kind=f"{SCOPE_WORDS.get(record.scope, record.scope.replace('_', ' '))} segment",
                label=f"#{record.id} {segment_title(record.title, record.content)} "
                f"(revision {record.revision})",
                url=None if deleted else reverse("studio:segment_history", args=[record.id]),
            )
        )
    for spec in KINDS.values():
        model = spec.model
        kind = str(model._meta.verbose_name)
        records = model.history.select_related("history_user").order_by("-history_id")[:limit]  # type: ignore[attr-defined]
        for record in records:
            url = None
            if record.history_type != "-":
                url = reverse(f"studio:{spec.key}_edit", args=[record.slug])
            changes.append(
                Change(
                    when=record.history_date,
                    who=record.history_user or record.history_change_reason,
                    action=ACTIONS[record.history_type],
                    kind=kind,
                    label=record.name,
                    url=url,
                )
            )
    changes.sort(key=lambda change: change.when, reverse=True)
    return changes[:limit]


def catalog_list(kind: str) -> QuerySet[Any]:
    """Worlds, rulesets or NPCs by name (read in order from their index); count a page
    of them with :func:`with_use_counts`."""
    return KINDS[kind].model._default_manager.order_by("name", "slug")


# What links entries to a world or a ruleset: the model and its column pointing there.
ENTRY_LINKS: dict[type[Any], tuple[type[Any], str]] = {
    World: (Entry, "world_id"),
    Ruleset: (EntryRuleset, "ruleset_id"),
}


def _counts(model: type[Any], column: str, ids: list[int]) -> dict[int, int]:
    """How many rows of ``model`` point at each of ``ids`` through ``column``."""
    rows = model.objects.filter(**{f"{column}__in": ids}).order_by()
    return dict(rows.values_list(column).annotate(n=Count("id")))


def with_use_counts(objects: list[Any]) -> list[Any]:
    """``objects`` (one page of worlds, rulesets, NPCs or entries) with how many segments
    (``segment_count``) and entries (``entry_count``: worlds and rulesets) use each: one
    grouped query per count over the page's rows, never over the whole table."""
    if not objects:
        return objects
    model = type(objects[0])
    key = kind_of(objects[0]).key
    ids = [obj.pk for obj in objects]
    segments = _counts(Segment, f"{key}_id", ids)
    entries = _counts(*ENTRY_LINKS[model], ids) if model in ENTRY_LINKS else {}
    for obj in objects:
        obj.segment_count = segments.get(obj.pk, 0)
        obj.entry_count = entries.get(obj.pk, 0)
    return objects


def ordered_links() -> Prefetch:
    return Prefetch(
        "ruleset_links",
        queryset=EntryRuleset.objects.select_related("ruleset").order_by("position"),
        to_attr="ordered_links",
    )


def entry_list() -> QuerySet[Entry]:
    """Entries by name (read in order from their index), with their world and rulesets;
    count a page of them with :func:`with_use_counts`."""
    return (
        Entry.objects.select_related("world")
        .prefetch_related(ordered_links())
        .order_by("name", "slug")
    )


def segments_of(obj: Model) -> QuerySet[Segment]:
    """The segments that belong to ``obj``, in assembly order."""
    return Segment.objects.filter(**{kind_of(obj).key: obj}).order_by(
        "scope", "tier", "sort_order", "id"
    )


@dataclass
class Revision:
    """One saved state of a segment, as the history page lists it."""

    record: Any
    changed_fields: list[str] = field(default_factory=list)

    @property
    def revision(self) -> int:
        return int(self.record.revision)


HISTORY_FIELDS = {
    "title": "title",
    "content": "text",
    "metadata": "metadata",
    "version": "version label",
    "active": "active",
    "sort_order": "sort order",
    "tier": "tier",
    **dict.fromkeys(KINDS, "object"),
}


def segment_revisions(segment: Segment) -> list[Revision]:
    """Every saved revision of ``segment``, newest first, with what each one changed."""
    records = list(
        segment.history.select_related("history_user").order_by("-history_id")  # type: ignore[attr-defined]
    )
    revisions = []
    for index, record in enumerate(records):
        older = records[index + 1] if index + 1 < len(records) else None
        changed: list[str] = []
        if older is not None:
            for name, label in HISTORY_FIELDS.items():
                attr = f"{name}_id" if name in KINDS else name
                if getattr(record, attr) != getattr(older, attr) and label not in changed:
                    changed.append(label)
        revisions.append(Revision(record, changed))
    return revisions


def revision_record(obj: Model, revision: int) -> Any | None:
    """The history record of ``obj`` (a segment, world, ruleset, NPC or entry) as it was
    at ``revision``: the base of a three-way merge. None when history does not have it."""
    history = obj.history  # type: ignore[attr-defined]
    return history.filter(revision=revision).order_by("-history_id").first()


@dataclass(frozen=True)
class Pick:
    """One option of an object picker."""

    value: str  # kind:slug
    label: str  # Name (slug)
    name: str
    slug: str
    kind: str  # as people read it: "NPC"


PICKS_SHOWN = 12


def pick_objects(kinds: tuple[str, ...], text: str, limit: int = PICKS_SHOWN) -> list[Pick]:
    """The objects of ``kinds`` whose name or slug contains ``text``, those that start
    with it first, then by name: at most ``limit``, one query per kind (small tables:
    thousands of rows at most, so no index is needed to search them)."""
    text = text.strip()[:200].replace("\x00", "")
    found: list[tuple[bool, str, Pick]] = []
    for key in kinds:
        spec = KINDS[key]
        objects = spec.model._default_manager.all()
        if text:
            objects = objects.filter(Q(name__icontains=text) | Q(slug__icontains=text.lower()))
            objects = objects.annotate(
                starts=Case(
                    When(Q(name__istartswith=text) | Q(slug__startswith=text.lower()), then=0),
                    default=1,
                )
            ).order_by("starts", "name", "slug")
        else:
            objects = objects.order_by("name", "slug")
        for obj in objects[:limit]:
            starts = not text or getattr(obj, "starts", 1) == 0
            label = labelled(obj.name, obj.slug)  # as forms.common.object_label
            pick = Pick(f"{key}:{obj.slug}", label, obj.name, obj.slug, spec.label)
            found.append((not starts, obj.name.lower(), pick))
    found.sort(key=lambda item: item[:2])
    return [pick for _later, _name, pick in found[:limit]]
