"""Repair stored JSON holding numbers beyond 64 bits, reversibly.

Before ``core.storedjson`` refused them, a float such as ``1e20`` was accepted into any
JSON field; PostgreSQL keeps it as the integer ``100000000000000000000``, which no JSON
encoder of the app can write, so every read including the row failed. Each such number
is kept as its decimal text under the same key, and the change is recorded: a
``StoredJsonRepair`` row per value (what it was and where), and for segments and
scenarios, which have a history, a new history record (earlier records are left as they
were: history is never rewritten). Their revision is bumped, as for any change.

Prompt versions never change (a trigger refuses any update); one that holds such a
number cannot be served at all, so it is repaired in place all the same, with the trigger
set aside for that statement only. Its content hash is left as it was made: it names what
was written then, and the reverse restores exactly that.

The reverse puts every recorded number back where its text still stands.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.db import migrations
from django.utils import timezone

MIN_INT = -(2**63)
MAX_INT = 2**64 - 1
# (app label, model, JSON fields); the order is the order of the repair.
FIELDS = (
    ("promptadmin", "Segment", ("metadata",)),
    ("releases", "Scenario", ("npcs", "state", "expectations")),
    ("conversations", "Conversation", ("metadata",)),
    ("prompts", "PromptVersion", ("config", "user_templates", "variables")),
)
# The models that keep a history: a repair is a new record of it.
HISTORIES = {"segment": "HistoricalSegment", "scenario": "HistoricalScenario"}
REPAIRED = "Repaired: numbers beyond 64 bits kept as text"
UNDONE = "Repair undone: numbers beyond 64 bits put back"
VERSION_TRIGGER = "prompts_promptversion_immutable"
BEYOND = (
    'strict $.** ? (@.type() == "number" && '
    f"(@ > {MAX_INT} || @ < {MIN_INT}))"
)


def beyond_64_bits(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], int]]:
    """Each integer in ``value`` outside what the encoders write, with its path."""
    if isinstance(value, dict):
        for key, child in value.items():
            yield from beyond_64_bits(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from beyond_64_bits(child, (*path, index))
    elif isinstance(value, int) and not isinstance(value, bool):
        if not MIN_INT <= value <= MAX_INT:
            yield path, value


def replaced(value: Any, path: tuple[Any, ...] | list[Any], new: Any) -> Any:
    """``value`` with what is at ``path`` set to ``new`` (the top itself for an empty path)."""
    if not path:
        return new
    holder = value
    for step in path[:-1]:
        holder = holder[step]
    holder[path[-1]] = new
    return value


def at(value: Any, path: list[Any]) -> Any:
    for step in path:
        try:
            value = value[step]
        except (KeyError, IndexError, TypeError):
            return None
    return value


def candidates(model: Any, fields: tuple[str, ...], connection: Any) -> list[Any]:
    """The rows that may hold such a number (all of them, where SQL cannot tell).

    A list, not a cursor left open: a prompt version's table is altered while repairing.
    """
    rows = model._default_manager.all()
    if connection.vendor == "postgresql":
        table = connection.ops.quote_name(model._meta.db_table)
        where = " OR ".join(
            f"jsonb_path_exists({connection.ops.quote_name(field)}, %s)" for field in fields
        )
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT id FROM {table} WHERE {where}", [BEYOND] * len(fields))
            ids = [pk for (pk,) in cursor.fetchall()]
        rows = rows.filter(pk__in=ids)
    return list(rows.order_by("pk"))


def save(apps: Any, schema_editor: Any, label: str, row: Any, fields: list[str], why: str) -> None:
    """Write the changed ``fields`` of ``row`` as a change is written to its model."""
    connection = schema_editor.connection
    now = timezone.now()
    name = row._meta.model_name
    if name in ("segment", "scenario"):
        row.revision += 1
        fields = [*fields, "revision"]
    if name in ("segment", "scenario", "conversation"):
        row.updated_at = now
        fields = [*fields, "updated_at"]
    update = type(row)._default_manager.filter(pk=row.pk).update
    if name != "promptversion":
        update(**{field: getattr(row, field) for field in fields})
    else:
        table = connection.ops.quote_name(row._meta.db_table)
        postgresql = connection.vendor == "postgresql"
        if postgresql:
            schema_editor.execute(f"ALTER TABLE {table} DISABLE TRIGGER {VERSION_TRIGGER}")
        update(**{field: getattr(row, field) for field in fields})
        if postgresql:
            schema_editor.execute(f"ALTER TABLE {table} ENABLE TRIGGER {VERSION_TRIGGER}")
    if name in HISTORIES:
        history = apps.get_model(label, HISTORIES[name])
        values = {
            f.attname: getattr(row, f.attname)
            for f in history._meta.concrete_fields
            if not f.attname.startswith("history_")
        }
        history.objects.create(
            **values,
            history_date=now,
            history_type="~",
            history_change_reason=why[:100],
            history_user_id=None,
        )


def repair(apps: Any, schema_editor: Any) -> None:
    repairs = apps.get_model("promptadmin_core", "StoredJsonRepair")
    for label, model_name, fields in FIELDS:
        model = apps.get_model(label, model_name)
        for row in candidates(model, fields, schema_editor.connection):
            changed: list[str] = []
            for field in fields:
                value = getattr(row, field)
                found = list(beyond_64_bits(value))
                for path, number in found:
                    value = replaced(value, path, str(number))
                    repairs.objects.create(
                        model=f"{label}.{model_name}",
                        row_id=row.pk,
                        field=field,
                        path=list(path),
                        original=str(number),
                    )
                if found:
                    setattr(row, field, value)
                    changed.append(field)
            if changed:
                save(apps, schema_editor, label, row, changed, REPAIRED)


def undo(apps: Any, schema_editor: Any) -> None:
    repairs = apps.get_model("promptadmin_core", "StoredJsonRepair")
    for label, model_name, _ in FIELDS:
        model = apps.get_model(label, model_name)
        done = repairs.objects.filter(model=f"{label}.{model_name}").order_by("row_id", "id")
        by_row: dict[int, list[Any]] = {}
        for record in done:
            by_row.setdefault(record.row_id, []).append(record)
        for row in model._default_manager.filter(pk__in=by_row).order_by("pk"):
            changed: set[str] = set()
            for record in by_row[row.pk]:
                value = getattr(row, record.field)
                # Only where the text still stands: a later edit is left as it is.
                if at(value, record.path) == record.original:
                    setattr(
                        row, record.field, replaced(value, record.path, int(record.original))
                    )
                    changed.add(record.field)
            if changed:
                save(apps, schema_editor, label, row, sorted(changed), UNDONE)
        done.delete()


class Migration(migrations.Migration):
    dependencies = [
        ("promptadmin_core", "0001_stored_json_repair"),
        ("promptadmin", "0009_api_key_scope_label"),
        ("releases", "0004_scenario_history_release_aliases"),
        ("conversations", "0002_summary_cuts_prompt_resent_at_and_nothing_to_summarize"),
        ("prompts", "0003_prompt_versions_immutable"),
    ]

    operations = [migrations.RunPython(repair, undo)]
