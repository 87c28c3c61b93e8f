"""Segment services: create, update, delete, restore."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import models, transaction

from promptadmin.content_cache import content_changed
from promptadmin.models import (
    DEPRECATED_SCOPES,
    NPC,
    REF_FIELDS,
    SCOPE_REF_FIELD,
    SEGMENT_SCOPES,
    Entry,
    Ruleset,
    Segment,
    World,
)
from promptadmin.services.common import Actor, record_actor, user_or_none
from promptadmin.services.errors import StaleRevisionError
from promptadmin.tokens import cached_count, tokenizer

Ref = World | Ruleset | Entry | NPC | None

REF_MODELS: dict[str, type[models.Model]] = {
    "ruleset": Ruleset,
    "world": World,
    "entry": Entry,
    "npc": NPC,
}
EDITABLE_FIELDS = ("content", "metadata", "version", "active", "sort_order", "tier")


def _check_scope(scope: str) -> None:
    if scope in DEPRECATED_SCOPES:
        raise ValidationError(
            {
                "scope": f"Scope '{scope}' is deprecated and cannot be used for new or active "
                f"segments; allowed scopes: {', '.join(SEGMENT_SCOPES)}."
            }
        )
    if scope not in SEGMENT_SCOPES:
        raise ValidationError(
            {"scope": f"Unknown scope '{scope}'; allowed scopes: {', '.join(SEGMENT_SCOPES)}."}
        )


def _assign_ref(segment: Segment, ref: Ref) -> None:
    """Point ``segment`` at ``ref``, checking that the scope allows that kind of object."""
    wanted = SCOPE_REF_FIELD[segment.scope]
    if wanted is None:
        if ref is not None:
            raise ValidationError({"ref": f"A '{segment.scope}' segment belongs to no object."})
    else:
        model = REF_MODELS[wanted]
        if not isinstance(ref, model):
            got = f"a {type(ref).__name__}" if ref is not None else "nothing"
            raise ValidationError(
                {"ref": f"A '{segment.scope}' segment must belong to a {wanted}, not {got}."}
            )
    for name in REF_FIELDS:
        setattr(segment, name, ref if name == wanted else None)


def _count(segment: Segment) -> None:
    tok = tokenizer()
    segment.token_count = tok.count(segment.content)
    segment.token_encoding = tok.name


def _validate(segment: Segment, exclude: list[str] | None = None) -> None:
    segment.full_clean(exclude=exclude, validate_constraints=False)


@transaction.atomic
def segment_create(
    *,
    actor: Actor,
    scope: str,
    ref: Ref = None,
    content: str,
    metadata: dict[str, Any] | None = None,
    version: str = "1.0.0",
    active: bool = True,
    sort_order: int = 0,
    tier: int = 0,
) -> Segment:
    """Create a segment of one of the six assemblable scopes."""
    _check_scope(scope)
    segment = Segment(
        scope=scope,
        content=content,
        metadata={} if metadata is None else metadata,
        version=version,
        active=active,
        sort_order=sort_order,
        tier=tier,
        created_by=user_or_none(actor),
        updated_by=user_or_none(actor),
    )
    _assign_ref(segment, ref)
    _validate(segment)
    _count(segment)
    record_actor(segment, actor)
    segment.save()
    content_changed()
    return segment


@transaction.atomic
def segment_import_legacy(
    *, actor: Actor, scope: str, content: str, metadata: dict[str, Any] | None = None
) -> Segment:
    """Keep a deprecated-scope segment (from old content) as an inactive row."""
    if scope not in DEPRECATED_SCOPES:
        raise ValidationError({"scope": f"'{scope}' is not a deprecated scope."})
    segment = Segment(
        scope=scope,
        content=content,
        metadata={} if metadata is None else metadata,
        active=False,
        created_by=user_or_none(actor),
        updated_by=user_or_none(actor),
    )
    _validate(segment)
    _count(segment)
    record_actor(segment, actor)
    segment.save()
    return segment


def _lock(segment: Segment, expected_revision: int | None) -> Segment:
    """Re-read the row under a lock and check the caller edited the current revision.

    The check happens inside the writing transaction so that two writers holding the same
    revision cannot both succeed.
    """
    current = Segment.objects.select_for_update().get(pk=segment.pk)
    if expected_revision is not None and current.revision != expected_revision:
        raise StaleRevisionError(expected=expected_revision, current=current.revision)
    return current


_UNSET: Any = object()


@transaction.atomic
def segment_update(
    *,
    actor: Actor,
    segment: Segment,
    expected_revision: int | None = None,
    scope: str | None = None,
    ref: Ref = _UNSET,
    **changes: Any,
) -> Segment:
    """Change some fields of a segment; saves only what changed and bumps the revision.

    ``scope`` cannot change after creation (pass it only to confirm it). ``ref`` moves the
    segment to another object of the kind its scope allows. Returns the saved segment
    (unchanged, with no new revision, when nothing differs).
    """
    unknown = set(changes) - set(EDITABLE_FIELDS)
    if unknown:
        raise TypeError(f"segment_update() got unexpected fields: {', '.join(sorted(unknown))}")
    current = _lock(segment, expected_revision)
    if scope is not None and scope != current.scope:
        raise ValidationError(
            {"scope": f"The scope of a segment is fixed after creation (it is '{current.scope}')."}
        )
    changed: list[str] = []
    for name, value in changes.items():
        if getattr(current, name) != value:
            setattr(current, name, value)
            changed.append(name)
    if ref is not _UNSET:
        before = {name: getattr(current, f"{name}_id") for name in REF_FIELDS}
        _assign_ref(current, ref)
        changed += [name for name in REF_FIELDS if getattr(current, f"{name}_id") != before[name]]
    if current.is_deprecated and current.active:
        raise ValidationError(
            {
                "active": f"Scope '{current.scope}' is deprecated: the segment cannot be "
                f"activated; allowed scopes: {', '.join(SEGMENT_SCOPES)}."
            }
        )
    if not changed:
        return current
    _validate(current)
    if "content" in changed or cached_count(current) is None:
        _count(current)
        changed += ["token_count", "token_encoding"]
    current.revision += 1
    current.updated_by = user_or_none(actor)
    record_actor(current, actor)
    current.save(update_fields=[*changed, "revision", "updated_by", "updated_at"])
    content_changed()
    return current


@transaction.atomic
def segment_delete(*, actor: Actor, segment: Segment, expected_revision: int | None = None) -> None:
    """Delete a segment; its history (including the deletion) is kept."""
    current = _lock(segment, expected_revision)
    record_actor(current, actor)
    current.delete()
    content_changed()


@transaction.atomic
def segment_restore(
    *, actor: Actor, segment: Segment, revision: int, expected_revision: int | None = None
) -> Segment:
    """Bring back the content and settings a segment had at ``revision``, as a new revision.

    History is never rewritten: the restore is itself a change, recorded like any other.
    """
    record = segment.history.filter(revision=revision).order_by("-history_id").first()
    if record is None:
        raise ValidationError({"revision": f"Segment #{segment.pk} has no revision {revision}."})
    ref_field = SCOPE_REF_FIELD.get(record.scope)
    ref = None
    if ref_field is not None:
        ref_id = getattr(record, f"{ref_field}_id")
        ref = REF_MODELS[ref_field]._default_manager.filter(pk=ref_id).first()
        if ref is None:
            raise ValidationError(
                {"revision": f"Revision {revision} belongs to a {ref_field} that no longer exists."}
            )
    return segment_update(
        actor=actor,
        segment=segment,
        expected_revision=expected_revision,
        ref=ref,
        **{name: getattr(record, name) for name in EDITABLE_FIELDS},
    )
