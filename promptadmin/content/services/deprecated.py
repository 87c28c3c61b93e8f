"""The review of deprecated-scope segments: copy to an allowed scope, dismiss, undo.

A deprecated row is never changed in what it says, never activated and never deleted:
its review state lives in its metadata (the keys of ``legacy_import.ReviewKey``: status,
reason, copies) and every action is a saved change with a history record (who and when).
A copy is a new segment whose metadata links back (``copied_from``); undoing a copy
deactivates the copy (kept, with its history) and puts the source back to pending.

A single action refuses a row it does not apply to (a copied row cannot be dismissed); a
bulk action over a filtered selection skips such rows and reports each with the reason.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.db.models import Count, Q, QuerySet
from django.utils import timezone
from simple_history.utils import bulk_create_with_history, bulk_update_with_history

from promptadmin.content.kinds import KINDS
from promptadmin.content.models import DEPRECATED_SCOPES, REF_FIELDS, Segment
from promptadmin.content.search import search_words, segment_search
from promptadmin.content.services import segments
from promptadmin.content.services.legacy_import import (
    MIGRATING,
    ReviewKey,
    title_from_metadata,
)
from promptadmin.core.actors import Actor, record_actor, user_or_none
from promptadmin.core.cache import content_changed
from promptadmin.core.roles import Role, require
from promptadmin.core.text import normalize_newlines
from promptadmin.core.tokens import store_count


class Status(models.TextChoices):
    """Where a deprecated row's review stands (kept in its metadata, ReviewKey.STATUS)."""

    PENDING = "pending"
    COPIED = "copied"
    DISMISSED = "dismissed"


class Action(models.TextChoices):
    """What a review does to a deprecated row."""

    COPY = "copy"
    DISMISS = "dismiss"
    UNDO = "undo"


MAX_REASON = 500
# Rows a bulk action locks and writes at a time: a fixed number of queries per batch.
BULK_BATCH_SIZE = 500

# Why an action does not apply to a row in a review status. A single action refuses with
# it; a bulk action skips the row and reports it.
NOT_APPLICABLE: dict[tuple[str, str], str] = {
    (Action.COPY, Status.DISMISSED): "was dismissed: undo the dismissal before copying it",
    (Action.DISMISS, Status.COPIED): "was copied: undo the copy before dismissing it",
    (Action.UNDO, Status.PENDING): "is pending: there is nothing to undo",
}
# A bulk action also skips rows already in the state it leads to: acting on a filtered
# selection twice must not copy a row twice (a single copy may, on purpose).
ALREADY_DONE: dict[tuple[str, str], str] = {
    (Action.COPY, Status.COPIED): "was copied already: copy it again on its own if you mean to",
    (Action.DISMISS, Status.DISMISSED): "was dismissed already",
}
NO_TARGET = "has no obvious target: choose a scope and object to copy it to"


def status_of(segment: Segment) -> str:
    value = _meta(segment).get(ReviewKey.STATUS)
    return value if value in Status.values else Status.PENDING


def status_q(status: str) -> Q:
    """Rows with review ``status`` (rows never reviewed are pending)."""
    marked = Q(**{f"metadata__{ReviewKey.STATUS}": status})
    if status == Status.PENDING:
        return ~Q(metadata__has_key=ReviewKey.STATUS) | marked
    return marked


def deprecated_segments(
    *, scope: str | None = None, status: str | None = None, search: str | None = None
) -> QuerySet[Segment]:
    """Every deprecated-scope segment, filtered (``search``: words of the title or text,
    through the search index); oldest first."""
    queryset = Segment.objects.filter(scope__in=DEPRECATED_SCOPES)
    if scope:
        queryset = queryset.filter(scope=scope)
    if status:
        queryset = queryset.filter(status_q(status))
    if search_words(search or ""):
        queryset = segment_search(queryset, search or "")
    return queryset.order_by("id")


def deprecated_counts() -> dict[str, int]:
    """Deprecated rows per review status, in one query."""
    base = Segment.objects.filter(scope__in=DEPRECATED_SCOPES)
    counts = base.aggregate(**{s: Count("id", filter=status_q(s)) for s in Status.values})
    return {status: counts[status] for status in Status.values}


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


def _refuse_unless_applicable(action: str, source: Segment) -> None:
    why = NOT_APPLICABLE.get((action, status_of(source)))
    if why is not None:
        raise ValidationError({"id": f"Segment #{source.pk} {why}."})


def _clean_reason(reason: str) -> str:
    reason = normalize_newlines(reason).strip()
    if not reason:
        raise ValidationError({"reason": "Say why this segment is dismissed."})
    if len(reason) > MAX_REASON or "\x00" in reason:
        raise ValidationError(
            {"reason": f"A reason is at most {MAX_REASON} characters, without NUL."}
        )
    return reason


def _meta(segment: Segment) -> dict[str, Any]:
    return segment.metadata if isinstance(segment.metadata, dict) else {}


def _copied(source: Segment, copy_pk: int) -> dict[str, Any]:
    """The source's metadata once copied to ``copy_pk`` (a row may be copied more than once)."""
    previous = _meta(source).get(ReviewKey.COPIES)
    copies = [*previous, copy_pk] if isinstance(previous, list) else [copy_pk]
    return {**_meta(source), ReviewKey.STATUS: Status.COPIED, ReviewKey.COPIES: copies}


def _dismissed(source: Segment, reason: str) -> dict[str, Any]:
    return {**_meta(source), ReviewKey.STATUS: Status.DISMISSED, ReviewKey.REASON: reason}


def _undone(source: Segment) -> dict[str, Any]:
    """The source's metadata back to pending; the copies it had are kept as undone copies."""
    cleared = (ReviewKey.STATUS, ReviewKey.REASON, ReviewKey.COPIES)
    metadata = {key: value for key, value in _meta(source).items() if key not in cleared}
    if status_of(source) == Status.COPIED:
        undone = metadata.get(ReviewKey.UNDONE_COPIES)
        metadata[ReviewKey.UNDONE_COPIES] = [
            *(undone if isinstance(undone, list) else []),
            *copy_ids(source),
        ]
    return metadata


def copy_ids(source: Segment) -> list[int]:
    """The ids of the copies a copied row links forward to (none for other rows)."""
    copies = _meta(source).get(ReviewKey.COPIES)
    return [pk for pk in copies if isinstance(pk, int)] if isinstance(copies, list) else []


def review_reason(source: Segment) -> str | None:
    """Why a dismissed row was dismissed (None for other rows)."""
    reason = _meta(source).get(ReviewKey.REASON)
    return reason if isinstance(reason, str) else None


def _linked_back(source: Segment, extra: dict[str, Any]) -> dict[str, Any]:
    """A copy's metadata: ``extra`` and the link back to its source."""
    return {**extra, ReviewKey.COPIED_FROM: source.pk, ReviewKey.COPIED_FROM_SCOPE: source.scope}


def _carried_title(source: Segment) -> tuple[str, dict[str, Any]]:
    """The title a copy takes from its source, and what goes in its metadata for it.

    The source's title column; else a string metadata ``title`` (a row stored before
    titles had a column), in the column when it fits and kept in the metadata otherwise.
    """
    if source.title:
        return source.title, {}
    title = _meta(source).get("title")
    if not isinstance(title, str) or not title.strip():
        return "", {}
    return title_from_metadata({"title": title})


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

    Returns the new segment; it takes the source's title, its metadata links back, and the
    source is marked copied and links forward. A dismissed row must be put back to pending
    (undo) first.
    """
    require(actor, role=Role.ADMIN, action=MIGRATING)
    source = _lock_deprecated(segment)
    _refuse_unless_applicable(Action.COPY, source)
    title, extra = _carried_title(source)
    copy = segments.segment_create(
        actor=actor,
        scope=scope,
        ref=ref,
        title=title,
        content=source.content if content is None else content,
        metadata=_linked_back(source, extra),
        active=active,
    )
    _save_review(source, actor, _copied(source, copy.pk))
    return copy


@transaction.atomic
def deprecated_dismiss(*, actor: Actor, segment: Segment, reason: str) -> Segment:
    """Mark a deprecated segment as not worth keeping, saying why (it is kept)."""
    require(actor, role=Role.ADMIN, action=MIGRATING)
    reason = _clean_reason(reason)
    source = _lock_deprecated(segment)
    _refuse_unless_applicable(Action.DISMISS, source)
    if status_of(source) == Status.DISMISSED and review_reason(source) == reason:
        return source
    return _save_review(source, actor, _dismissed(source, reason))


@transaction.atomic
def deprecated_undo(*, actor: Actor, segment: Segment) -> Segment:
    """Put a copied or dismissed segment back to pending.

    Undoing a copy deactivates the copies (they stay, with their history, linked back as
    ``undone_copies``); nothing is deleted.
    """
    require(actor, role=Role.ADMIN, action=MIGRATING)
    source = _lock_deprecated(segment)
    _refuse_unless_applicable(Action.UNDO, source)
    for copy in Segment.objects.filter(pk__in=copy_ids(source), active=True):
        segments.segment_update(actor=actor, segment=copy, active=False)
    return _save_review(source, actor, _undone(source))


# Bulk actions


@dataclass(frozen=True)
class Skipped:
    """A row a bulk action left as it was, and why (``why`` follows "Segment #id")."""

    id: int
    why: str

    @property
    def reason(self) -> str:
        return f"Segment #{self.id} {self.why}."


@dataclass
class BulkResult:
    """What a bulk action did: ``done`` holds the new copies (copy) or the changed
    deprecated rows (dismiss, undo); ``skipped`` the rows the action does not apply to."""

    action: str
    done: list[Segment] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


@transaction.atomic
def deprecated_bulk(
    *,
    actor: Actor,
    action: str,
    ids: Iterable[int],
    reason: str = "",
    scope: str | None = None,
    ref: segments.Ref = None,
    active: bool = False,
) -> BulkResult:
    """Copy, dismiss or undo many deprecated segments, in batches of ``BULK_BATCH_SIZE``.

    A copy goes to ``scope``/``ref`` when given, else to each row's suggestion. Rows the
    action does not apply to (a copied row to dismiss, a pending row to undo, a row
    without a suggestion to copy to it...) are skipped and reported. Bad input (an
    unknown action or id, no reason to dismiss, a target its scope does not allow)
    refuses the whole action: nothing is written. One transaction; a fixed number of
    queries per batch, however many rows it holds.
    """
    require(actor, role=Role.ADMIN, action=MIGRATING)
    if action not in Action.values:
        raise ValidationError({"action": f"Use one of {', '.join(Action.values)}."})
    wanted = sorted(set(ids))
    if not wanted:
        raise ValidationError({"ids": "Choose at least one segment."})
    if action == Action.DISMISS:
        reason = _clean_reason(reason)
    if action == Action.COPY and scope is not None:
        _check_target(scope, ref)
    result = BulkResult(action)
    now = timezone.now()
    for start in range(0, len(wanted), BULK_BATCH_SIZE):
        batch = wanted[start : start + BULK_BATCH_SIZE]
        rows = list(
            Segment.objects.select_for_update()
            .filter(pk__in=batch, scope__in=DEPRECATED_SCOPES)
            .order_by("id")
        )
        missing = sorted(set(batch) - {row.pk for row in rows})
        if missing:
            raise ValidationError(
                {"ids": f"No deprecated segment with id {', '.join(map(str, missing))}."}
            )
        todo: list[Segment] = []
        for row in rows:
            status = status_of(row)
            why = NOT_APPLICABLE.get((action, status)) or ALREADY_DONE.get((action, status))
            if why is None:
                todo.append(row)
            else:
                result.skipped.append(Skipped(row.pk, why))
        if not todo:
            continue
        if action == Action.DISMISS:
            for row in todo:
                row.metadata = _dismissed(row, reason)
            result.done += _save_reviews(todo, actor, now)
        elif action == Action.UNDO:
            result.done += _undo_batch(todo, actor, now)
        else:
            targets = (
                {row.pk: (scope, ref) for row in todo}
                if scope is not None
                else _suggested_targets(todo)
            )
            result.done += _copy_batch(todo, targets, actor, now, active, result.skipped)
    result.skipped.sort(key=lambda skipped: skipped.id)
    return result


def _check_target(scope: str, ref: segments.Ref) -> None:
    """Refuse a bulk copy's target before any row is touched (as ``segment_create`` would)."""
    segments.check_scope(scope)
    segments.assign_ref(Segment(scope=scope), ref)


def _suggested_targets(rows: list[Segment]) -> dict[int, tuple[str, segments.Ref]]:
    """Each row's suggested scope and object (rows without a suggestion are left out)."""
    hints = suggestions(rows)
    slugs: dict[str, set[str]] = {}
    for hint in hints.values():
        slugs.setdefault(hint.kind, set()).add(hint.slug)
    objects = {
        kind: KINDS[kind].model._default_manager.in_bulk(list(wanted), field_name="slug")
        for kind, wanted in slugs.items()
    }
    return {
        pk: (hint.scope, objects[hint.kind][hint.slug])
        for pk, hint in hints.items()
        if hint.slug in objects[hint.kind]
    }


def _save_reviews(rows: list[Segment], actor: Actor, now: datetime) -> list[Segment]:
    """Save the review metadata of many rows as ``_save_review`` saves one: two queries."""
    _save_all(rows, actor, now, ["metadata"])
    return rows


def _save_all(rows: list[Segment], actor: Actor, now: datetime, fields: list[str]) -> None:
    """Save ``fields`` of ``rows`` with a new revision and a history record each."""
    if not rows:
        return
    user = user_or_none(actor)
    for row in rows:
        row.revision += 1
        row.updated_by = user
        row.updated_at = now  # bulk_update does not set it as save() does
        record_actor(row, actor)
    bulk_update_with_history(
        rows,
        Segment,
        [*fields, "revision", "updated_by", "updated_at"],
        default_date=now,
    )


def _undo_batch(rows: list[Segment], actor: Actor, now: datetime) -> list[Segment]:
    copies = list(
        Segment.objects.select_for_update().filter(
            pk__in=[pk for row in rows for pk in copy_ids(row)], active=True
        )
    )
    for copy in copies:
        copy.active = False
    _save_all(copies, actor, now, ["active"])
    if copies:
        content_changed()
    for row in rows:
        row.metadata = _undone(row)
    return _save_reviews(rows, actor, now)


def _copy_batch(
    rows: list[Segment],
    targets: dict[int, tuple[str, segments.Ref]],
    actor: Actor,
    now: datetime,
    active: bool,
    skipped: list[Skipped],
) -> list[Segment]:
    """Create the copies of a batch as ``deprecated_copy`` does, with inserts in bulk."""
    user = user_or_none(actor)
    sources: list[Segment] = []
    copies: list[Segment] = []
    for row in rows:
        if row.pk not in targets:
            skipped.append(Skipped(row.pk, NO_TARGET))
            continue
        scope, ref = targets[row.pk]
        title, extra = _carried_title(row)
        copy = Segment(
            scope=scope,
            title=title,
            content=row.content,
            metadata=_linked_back(row, extra),
            active=active,
            created_by=user,
            updated_by=user,
        )
        segments.assign_ref(copy, ref)
        try:
            # The objects were just read: checking that each still exists is a query a row.
            segments.validate_segment(copy, exclude=[*REF_FIELDS, "created_by", "updated_by"])
        except ValidationError as exc:
            # ``Skipped.reason`` ends the sentence: the messages' own last period goes.
            why = " ".join(exc.messages).rstrip(".")
            skipped.append(Skipped(row.pk, f"cannot be copied: {why}"))
            continue
        store_count(copy)
        record_actor(copy, actor)
        sources.append(row)
        copies.append(copy)
    if not copies:
        return []
    bulk_create_with_history(copies, Segment, default_date=now)
    for source, copy in zip(sources, copies, strict=True):
        source.metadata = _copied(source, copy.pk)
    _save_reviews(sources, actor, now)
    if active:
        content_changed()
    return copies
