"""The review of deprecated-scope segments: copy to an allowed scope, dismiss, undo.

A deprecated row is never changed in what it says, never activated and never deleted:
its review state lives in its metadata (``review_status``, ``review_reason``, ``copies``)
and every action is a saved change with a history record (who and when). A copy is a
new segment whose metadata links back (``copied_from``); undoing a copy deactivates the
copy (kept, with its history) and puts the source back to pending.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, Q, QuerySet

from promptadmin.content.kinds import KINDS
from promptadmin.content.models import DEPRECATED_SCOPES, Segment
from promptadmin.content.services import segments
from promptadmin.content.services.legacy_import import check_can_migrate
from promptadmin.core.actors import Actor, record_actor, user_or_none


class Status:
    PENDING = "pending"
    COPIED = "copied"
    DISMISSED = "dismissed"
    ALL = (PENDING, COPIED, DISMISSED)


MAX_REASON = 500
BULK_LIMIT = 1000


def status_of(segment: Segment) -> str:
    value = segment.metadata.get("review_status") if isinstance(segment.metadata, dict) else None
    return value if value in Status.ALL else Status.PENDING


def status_q(status: str) -> Q:
    """Rows with review ``status`` (rows never reviewed are pending)."""
    if status == Status.PENDING:
        return ~Q(metadata__has_key="review_status") | Q(metadata__review_status=Status.PENDING)
    return Q(metadata__review_status=status)


def deprecated_segments(
    *, scope: str | None = None, status: str | None = None, search: str | None = None
) -> QuerySet[Segment]:
    """Every deprecated-scope segment, filtered; oldest first."""
    queryset = Segment.objects.filter(scope__in=DEPRECATED_SCOPES)
    if scope:
        queryset = queryset.filter(scope=scope)
    if status:
        queryset = queryset.filter(status_q(status))
    for word in (search or "").split():
        queryset = queryset.filter(content__icontains=word)
    return queryset.order_by("id")


def deprecated_counts() -> dict[str, int]:
    """Deprecated rows per review status, in one query."""
    base = Segment.objects.filter(scope__in=DEPRECATED_SCOPES)
    counts = base.aggregate(**{s: Count("id", filter=status_q(s)) for s in Status.ALL})
    return {status: counts[status] for status in Status.ALL}


@dataclass(frozen=True)
class Suggestion:
    scope: str
    kind: str
    slug: str
    name: str

    @property
    def ref_value(self) -> str:
        return f"{self.kind}:{self.slug}"


def suggestions(rows: Iterable[Segment]) -> dict[int, Suggestion]:
    """Where each row's text obviously belongs: the one object its legacy reference names.

    A ``player`` row whose legacy reference is an entry's slug suggests that entry. A bare
    slug that names objects of two kinds, or none, suggests nothing (never a guess). One
    query per kind.
    """
    wanted: dict[int, tuple[str | None, str]] = {}
    for row in rows:
        ref = row.metadata.get("original_ref") if isinstance(row.metadata, dict) else None
        if isinstance(ref, str) and ref:
            kind, sep, slug = ref.partition(":")
            wanted[row.pk] = (kind, slug) if sep and kind in KINDS else (None, ref)
    slugs = {slug for _, slug in wanted.values()}
    found: dict[str, dict[str, str]] = {}
    for key, kind in KINDS.items():
        found[key] = (
            dict(kind.model._default_manager.filter(slug__in=slugs).values_list("slug", "name"))
            if slugs
            else {}
        )
    result: dict[int, Suggestion] = {}
    for pk, (named, slug) in wanted.items():
        kinds = [named] if named else [key for key in KINDS if slug in found[key]]
        if len(kinds) == 1 and slug in found[kinds[0]]:
            kind = kinds[0]
            result[pk] = Suggestion(KINDS[kind].scopes[0], kind, slug, found[kind][slug])
    return result


def _lock_deprecated(segment: Segment) -> Segment:
    current = Segment.objects.select_for_update().get(pk=segment.pk)
    if current.scope not in DEPRECATED_SCOPES:
        raise ValidationError(
            {"id": f"Segment #{current.pk} has the scope '{current.scope}', not a deprecated one."}
        )
    return current


def _save_review(current: Segment, actor: Actor, metadata: dict[str, Any]) -> Segment:
    current.metadata = metadata
    current.revision += 1
    current.updated_by = user_or_none(actor)
    record_actor(current, actor)
    current.save(update_fields=["metadata", "revision", "updated_by", "updated_at"])
    return current


@transaction.atomic
def deprecated_copy(
    *,
    actor: Actor,
    segment: Segment,
    scope: str,
    ref: segments.Ref,
    content: str | None = None,
    active: bool = False,
) -> Segment:
    """Copy a deprecated segment's text (or the author's edit of it) to an allowed scope.

    Returns the new segment; its metadata links back, the source is marked copied and
    links forward. A dismissed row must be put back to pending (undo) first.
    """
    check_can_migrate(actor)
    source = _lock_deprecated(segment)
    if status_of(source) == Status.DISMISSED:
        raise ValidationError(
            {"id": f"Segment #{source.pk} was dismissed: undo the dismissal before copying it."}
        )
    text = source.content if content is None else content
    title = source.metadata.get("title") if isinstance(source.metadata, dict) else None
    metadata: dict[str, Any] = {
        "copied_from": source.pk,
        "copied_from_scope": source.scope,
    }
    if isinstance(title, str) and title.strip():
        metadata["title"] = title
    copy = segments.segment_create(
        actor=actor, scope=scope, ref=ref, content=text, metadata=metadata, active=active
    )
    previous = source.metadata.get("copies") if isinstance(source.metadata, dict) else None
    copies = [*previous, copy.pk] if isinstance(previous, list) else [copy.pk]
    _save_review(
        source,
        actor,
        {**source.metadata, "review_status": Status.COPIED, "copies": copies},
    )
    return copy


@transaction.atomic
def deprecated_dismiss(*, actor: Actor, segment: Segment, reason: str) -> Segment:
    """Mark a deprecated segment as not worth keeping, saying why (it is kept)."""
    check_can_migrate(actor)
    reason = reason.strip()
    if not reason:
        raise ValidationError({"reason": "Say why this segment is dismissed."})
    if len(reason) > MAX_REASON or "\x00" in reason:
        raise ValidationError(
            {"reason": f"A reason is at most {MAX_REASON} characters, without NUL."}
        )
    source = _lock_deprecated(segment)
    status = status_of(source)
    if status == Status.COPIED:
        raise ValidationError(
            {"id": f"Segment #{source.pk} was copied: undo the copy before dismissing it."}
        )
    if status == Status.DISMISSED and source.metadata.get("review_reason") == reason:
        return source
    return _save_review(
        source,
        actor,
        {**source.metadata, "review_status": Status.DISMISSED, "review_reason": reason},
    )


@transaction.atomic
def deprecated_undo(*, actor: Actor, segment: Segment) -> Segment:
    """Put a copied or dismissed segment back to pending.

    Undoing a copy deactivates the copies (they stay, with their history, linked back as
    ``undone_copies``); nothing is deleted.
    """
    check_can_migrate(actor)
    source = _lock_deprecated(segment)
    status = status_of(source)
    if status == Status.PENDING:
        raise ValidationError({"id": f"Segment #{source.pk} is pending: there is nothing to undo."})
    metadata = {
        key: value
        for key, value in source.metadata.items()
        if key not in ("review_status", "review_reason", "copies")
    }
    if status == Status.COPIED:
        copies = source.metadata.get("copies") or []
        for copy in Segment.objects.filter(pk__in=copies, active=True):
            segments.segment_update(actor=actor, segment=copy, active=False)
        undone = metadata.get("undone_copies")
        metadata["undone_copies"] = [*(undone if isinstance(undone, list) else []), *copies]
    return _save_review(source, actor, metadata)


@transaction.atomic
def deprecated_bulk(
    *,
    actor: Actor,
    action: str,
    ids: list[int],
    reason: str = "",
    scope: str | None = None,
    ref: segments.Ref = None,
    active: bool = False,
) -> list[Segment]:
    """Copy or dismiss many deprecated segments, all or none.

    A copy goes to ``scope``/``ref`` when given, else to each row's suggestion (a row
    without one refuses the whole action, naming it). Returns the copies or the dismissed rows.
    """
    check_can_migrate(actor)
    if action not in ("copy", "dismiss"):
        raise ValidationError({"action": "Use 'copy' or 'dismiss'."})
    if not ids:
        raise ValidationError({"ids": "Choose at least one segment."})
    if len(ids) > BULK_LIMIT:
        raise ValidationError({"ids": f"At most {BULK_LIMIT} segments at a time."})
    rows = list(Segment.objects.filter(pk__in=ids, scope__in=DEPRECATED_SCOPES).order_by("id"))
    missing = sorted(set(ids) - {row.pk for row in rows})
    if missing:
        raise ValidationError(
            {"ids": f"No deprecated segment with id {', '.join(map(str, missing))}."}
        )
    if action == "dismiss":
        return [deprecated_dismiss(actor=actor, segment=row, reason=reason) for row in rows]
    targets: dict[int, tuple[str, segments.Ref]] = {}
    if scope is not None:
        targets = {row.pk: (scope, ref) for row in rows}
    else:
        suggested = suggestions(rows)
        unsuggested = [row.pk for row in rows if row.pk not in suggested]
        if unsuggested:
            raise ValidationError(
                {
                    "scope": "Choose a scope and object: no target is obvious for segment(s) "
                    f"{', '.join(map(str, unsuggested))}."
                }
            )
        for row in rows:
            hint = suggested[row.pk]
            obj = KINDS[hint.kind].model._default_manager.get(slug=hint.slug)
            targets[row.pk] = (hint.scope, obj)
    return [
        deprecated_copy(
            actor=actor,
            segment=row,
            scope=targets[row.pk][0],
            ref=targets[row.pk][1],
            active=active,
        )
        for row in rows
    ]
