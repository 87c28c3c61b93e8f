"""Segment services: create, update, delete, restore."""

from __future__ import annotations

import enum
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from promptadmin.content.kinds import KINDS
from promptadmin.content.models import (
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
from promptadmin.core.actors import Actor, record_actor
from promptadmin.core.cache import content_changed
from promptadmin.core.revisions import locked_revision, save_first_revision, save_revision
from promptadmin.core.roles import Role, require
from promptadmin.core.text import normalize_newlines

Ref = World | Ruleset | Entry | NPC | None

EDITABLE_FIELDS = ("title", "content", "metadata", "version", "active", "sort_order", "tier")
#: What the permission error says an author's change is.
CHANGING_CONTENT = "Changing content"


def check_scope(scope: str) -> None:
    """Refuse a scope that new or copied segments may not have (deprecated, or unknown)."""
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


def check_not_deprecated(segment: Segment) -> None:
    """Refuse to change a deprecated-scope segment: it is kept, read-only, for review.

    Such rows change only through the deprecated-content review (copy, dismiss, undo),
    which never alters what the old row said.
    """
    if segment.scope in DEPRECATED_SCOPES:
        raise ValidationError(
            {
                "scope": ValidationError(
                    f"Segment #{segment.pk} has the deprecated scope '{segment.scope}' and is "
                    "read-only: copy its text to one of the allowed scopes "
                    f"({', '.join(SEGMENT_SCOPES)}) or dismiss it from the deprecated content "
                    "review.",
                    code="deprecated_read_only",
                )
            }
        )


def assign_ref(segment: Segment, ref: Ref) -> None:
    """Point ``segment`` at ``ref``, checking that the scope allows that kind of object."""
    wanted = SCOPE_REF_FIELD[segment.scope]
    if wanted is None:
        if ref is not None:
            raise ValidationError({"ref": f"A '{segment.scope}' segment belongs to no object."})
    else:
        model = KINDS[wanted].model
        if not isinstance(ref, model):
            got = f"a {type(ref).__name__}" if ref is not None else "nothing"
            raise ValidationError(
                {"ref": f"A '{segment.scope}' segment must belong to a {wanted}, not {got}."}
            )
    for name in REF_FIELDS:
        setattr(segment, name, ref if name == wanted else None)


def validate_segment(segment: Segment, exclude: list[str] | None = None) -> None:
    if segment.active and not segment.content.strip():
        # An active segment is assembled: an empty block would only cost tokens and hide
        # a mistake (a paste that failed, a cleared field).
        raise ValidationError(
            {"content": "An active segment needs text: write some, or make it inactive."}
        )
    segment.full_clean(exclude=exclude, validate_constraints=False)


@transaction.atomic
def segment_create(
    *,
    actor: Actor,
    scope: str,
    ref: Ref = None,
    content: str,
    title: str = "",
    metadata: dict[str, Any] | None = None,
    version: str = "1.0.0",
    active: bool = True,
    sort_order: int = 0,
    tier: int = 0,
    import_key: str = "",
) -> Segment:
    """Create a segment of one of the six assemblable scopes."""
    require(actor, role=Role.AUTHOR, action=CHANGING_CONTENT)
    check_scope(scope)
    segment = Segment(
        scope=scope,
        title=normalize_newlines(title),
        content=normalize_newlines(content),
        import_key=import_key,
        metadata={} if metadata is None else metadata,
        version=version,
        active=active,
        sort_order=sort_order,
        tier=tier,
    )
    assign_ref(segment, ref)
    validate_segment(segment)
    save_first_revision(segment, actor)
    content_changed()
    return segment


@transaction.atomic
def segment_import_legacy(
    *,
    actor: Actor,
    scope: str,
    content: str,
    metadata: dict[str, Any] | None = None,
    import_key: str = "",
) -> Segment:
    """Keep a deprecated-scope segment (from old content) as an inactive row: part of
    importing legacy content, so for admins (or scripts)."""
    require(actor, role=Role.ADMIN, action="Importing deprecated content")
    if scope not in DEPRECATED_SCOPES:
        raise ValidationError({"scope": f"'{scope}' is not a deprecated scope."})
    segment = Segment(
        scope=scope,
        content=normalize_newlines(content),
        metadata={} if metadata is None else metadata,
        import_key=import_key,
        active=False,
    )
    validate_segment(segment)
    save_first_revision(segment, actor)
    return segment


def _lock(segment: Segment, expected_revision: int | None) -> Segment:
    return locked_revision(segment, expected_revision, "The segment")


class _Unset(enum.Enum):
    """The type of ``UNSET``: "leave this field as it is"."""

    UNSET = enum.auto()


UNSET = _Unset.UNSET


@transaction.atomic
def segment_update(
    *,
    actor: Actor,
    segment: Segment,
    expected_revision: int | None = None,
    scope: str | None = None,
    ref: Ref | _Unset = UNSET,
    title: str | _Unset = UNSET,
    content: str | _Unset = UNSET,
    metadata: dict[str, Any] | _Unset = UNSET,
    version: str | _Unset = UNSET,
    active: bool | _Unset = UNSET,
    sort_order: int | _Unset = UNSET,
    tier: int | _Unset = UNSET,
) -> Segment:
    """Change some fields of a segment; saves only what changed and bumps the revision.

    Fields left ``UNSET`` keep their value. ``scope`` cannot change after creation (pass
    it only to confirm it). ``ref`` moves the segment to another object of the kind its
    scope allows. Returns the saved segment (unchanged, with no new revision, when
    nothing differs).
    """
    require(actor, role=Role.AUTHOR, action=CHANGING_CONTENT)
    changes = {
        name: value
        for name, value in (
            ("title", normalize_newlines(title)),
            ("content", normalize_newlines(content)),
            ("metadata", metadata),
            ("version", version),
            ("active", active),
            ("sort_order", sort_order),
            ("tier", tier),
        )
        if value is not UNSET
    }
    current = _lock(segment, expected_revision)
    if current.is_deprecated and changes.get("active") is True:
        raise ValidationError(
            {
                "active": f"Scope '{current.scope}' is deprecated: the segment cannot be "
                f"activated; allowed scopes: {', '.join(SEGMENT_SCOPES)}."
            }
        )
    check_not_deprecated(current)
    if scope is not None and scope != current.scope:
        raise ValidationError(
            {"scope": f"The scope of a segment is fixed after creation (it is '{current.scope}')."}
        )
    changed: list[str] = []
    for name, value in changes.items():
        if getattr(current, name) != value:
            setattr(current, name, value)
            changed.append(name)
    if ref is not UNSET:
        before = {name: getattr(current, f"{name}_id") for name in REF_FIELDS}
        assign_ref(current, ref)
        changed += [name for name in REF_FIELDS if getattr(current, f"{name}_id") != before[name]]
    if not changed:
        return current
    validate_segment(current)
    save_revision(current, actor, changed)
    content_changed()
    return current


@transaction.atomic
def segment_delete(*, actor: Actor, segment: Segment, expected_revision: int | None = None) -> None:
    """Delete a segment; its history (including the deletion) is kept."""
    require(actor, role=Role.AUTHOR, action=CHANGING_CONTENT)
    current = _lock(segment, expected_revision)
    check_not_deprecated(current)
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
    require(actor, role=Role.AUTHOR, action=CHANGING_CONTENT)
    check_not_deprecated(segment)
    record = segment.history.filter(revision=revision).order_by("-history_id").first()
    if record is None:
        raise ValidationError({"revision": f"Segment #{segment.pk} has no revision {revision}."})
    ref_field = SCOPE_REF_FIELD.get(record.scope)
    ref = None
    if ref_field is not None:
        ref_id = getattr(record, f"{ref_field}_id")
        ref = KINDS[ref_field].model._default_manager.filter(pk=ref_id).first()
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
