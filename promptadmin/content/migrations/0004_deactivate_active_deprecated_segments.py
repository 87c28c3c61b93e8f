"""Deactivate every active deprecated-scope segment BEFORE the scope constraint is checked.

Old databases hold active rows of the scopes ``game_state``, ``player``, ``rng`` and
``input`` and lack the ``segment_scope_allowed`` constraint (the original system added
the constraint first and failed on real data). This migration drops the constraint if it
exists, deactivates those rows recording why in their metadata (a historical record is
written for each, so the change shows in the segment's history), then adds the
constraint: it can never fail on existing data.

Reversible without losing data: the rows this migration deactivated are active again and
their metadata is as before. Those rows cannot satisfy the constraint, so on the way back
it is restored only where no such row exists (PostgreSQL: ``NOT VALID`` otherwise, which
keeps checking new rows and leaves the old ones alone, as the old database did).
"""

from __future__ import annotations

from typing import Any

from django.db import migrations, models
from django.utils import timezone

DEPRECATED_SCOPES = ("game_state", "player", "rng", "input")
SEGMENT_SCOPES = ("core", "ruleset", "world", "entry", "entry_start", "npc")
CONSTRAINT = "segment_scope_allowed"
NOTE = (
    "Deactivated by migration 0004: scope '{scope}' is no longer assembled (the caller "
    "supplies it at run time). Review it on the deprecated content page."
)
# Keys this migration adds to metadata; the reverse removes exactly these.
ADDED_KEYS = ("deprecated_scope", "deprecated_at", "original_id", "original_ref", "migration_note")
MARKER = "deactivated_by_migration"


def scope_constraint() -> models.CheckConstraint:
    return models.CheckConstraint(
        condition=models.Q(scope__in=SEGMENT_SCOPES)
        | models.Q(scope__in=DEPRECATED_SCOPES, active=False),
        name=CONSTRAINT,
        violation_error_message="Scope must be one of core, ruleset, world, entry, "
        "entry_start, npc; deprecated scopes are allowed only on inactive segments.",
    )


def _has_constraint(schema_editor: Any, table: str) -> bool:
    with schema_editor.connection.cursor() as cursor:
        names = schema_editor.connection.introspection.get_constraints(cursor, table)
    return CONSTRAINT in names


def drop_constraint_if_present(apps: Any, schema_editor: Any) -> None:
    Segment = apps.get_model("promptadmin", "Segment")
    if _has_constraint(schema_editor, Segment._meta.db_table):
        schema_editor.remove_constraint(Segment, scope_constraint())


def restore_constraint(apps: Any, schema_editor: Any) -> None:
    Segment = apps.get_model("promptadmin", "Segment")
    table = Segment._meta.db_table
    if _has_constraint(schema_editor, table):
        return
    clashing = Segment.objects.filter(scope__in=DEPRECATED_SCOPES, active=True).exists()
    if not clashing:
        schema_editor.add_constraint(Segment, scope_constraint())
    elif schema_editor.connection.vendor == "postgresql":
        sql = scope_constraint().constraint_sql(Segment, schema_editor)
        # ``sql`` is "CONSTRAINT name CHECK (...)".
        schema_editor.execute(f"ALTER TABLE {schema_editor.quote_name(table)} ADD {sql} NOT VALID")


def _ref_slug(segment: Any) -> str | None:
    for name in ("world", "ruleset", "entry", "npc"):
        if getattr(segment, f"{name}_id") is not None:
            return f"{name}:{getattr(segment, name).slug}"
    return None


def deactivate(apps: Any, schema_editor: Any) -> None:
    Segment = apps.get_model("promptadmin", "Segment")
    HistoricalSegment = apps.get_model("promptadmin", "HistoricalSegment")
    now = timezone.now()
    rows = Segment.objects.filter(scope__in=DEPRECATED_SCOPES, active=True).select_related(
        "world", "ruleset", "entry", "npc"
    )
    for segment in rows.iterator(chunk_size=1000):
        metadata = dict(segment.metadata) if isinstance(segment.metadata, dict) else {}
        before = {key: metadata[key] for key in ADDED_KEYS if key in metadata}
        metadata.update(
            deprecated_scope=segment.scope,
            deprecated_at=now.isoformat(),
            original_id=str(segment.pk),
            original_ref=_ref_slug(segment),
            migration_note=NOTE.format(scope=segment.scope),
        )
        metadata[MARKER] = {"overwritten": before}
        segment.active = False
        segment.metadata = metadata
        segment.revision += 1
        segment.updated_at = now
        segment.save(update_fields=["active", "metadata", "revision", "updated_at"])
        _record(HistoricalSegment, segment, now, "Deactivated: deprecated scope (migration 0004)")


def reactivate(apps: Any, schema_editor: Any) -> None:
    Segment = apps.get_model("promptadmin", "Segment")
    HistoricalSegment = apps.get_model("promptadmin", "HistoricalSegment")
    now = timezone.now()
    rows = Segment.objects.filter(scope__in=DEPRECATED_SCOPES, metadata__has_key=MARKER)
    for segment in rows.iterator(chunk_size=1000):
        metadata = dict(segment.metadata)
        overwritten = metadata.pop(MARKER).get("overwritten", {})
        for key in ADDED_KEYS:
            metadata.pop(key, None)
        metadata.update(overwritten)
        segment.active = True
        segment.metadata = metadata
        segment.revision += 1
        segment.updated_at = now
        segment.save(update_fields=["active", "metadata", "revision", "updated_at"])
        _record(HistoricalSegment, segment, now, "Reactivated: migration 0004 reversed")


def _record(HistoricalSegment: Any, segment: Any, when: Any, reason: str) -> None:
    """A history row like django-simple-history's own, so the change shows in the history."""
    values = {
        field.attname: getattr(segment, field.attname)
        for field in segment._meta.concrete_fields
        if field.attname != "updated_at"
        and field.attname in {f.attname for f in HistoricalSegment._meta.concrete_fields}
    }
    HistoricalSegment.objects.create(
        **values,
        history_date=when,
        history_type="~",
        history_change_reason=reason,
    )


class Migration(migrations.Migration):
    dependencies = [("promptadmin", "0003_api_key")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.RemoveConstraint("segment", CONSTRAINT)],
            database_operations=[
                migrations.RunPython(drop_constraint_if_present, restore_constraint)
            ],
        ),
        migrations.RunPython(deactivate, reactivate),
        migrations.AddConstraint("segment", scope_constraint()),
    ]
