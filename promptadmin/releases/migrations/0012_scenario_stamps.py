"""Stamps for what a comparison's scenarios follow from (``WorkingStamp`` rows of owner 0,
each replaced by PostgreSQL on every statement that writes what it stands for):
``scenarios``, the saved scenarios; ``casts``, the entries' casts and the slugs of
entries and NPCs (a cast names them by slug).

An impact report is kept under a key made of the two versions' content hashes (which name
the entries, so their implicit scenarios) and the scenarios judged. Working the latter
out meant reading every saved scenario and cast and hashing 2,200 scenarios at 1,000
entries on every view of the publish page: these two stamps stand for all of it.

Statement-level triggers with transition tables: a statement that writes no row (or, for
a slug, changes none) stamps nothing. One row each, so writers of one kind wait on each
other's commit: these are rare writes. SQLite (development) has no triggers: there the
scenarios are read and hashed.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

STAMPS = "releases_workingstamp"
# Each table, the stamp its writes replace, and the column whose change alone counts
# (None: any row written).
MARKED = [
    ("releases_scenario", "scenarios", None),
    ("promptadmin_entrynpc", "casts", None),
    ("promptadmin_entry", "casts", "slug"),
    ("promptadmin_npc", "casts", "slug"),
]
KINDS = tuple(dict.fromkeys(kind for _table, kind, _column in MARKED))
EVENTS = {
    "insert": ("AFTER INSERT ON {table} REFERENCING NEW TABLE AS new_rows", "new_rows"),
    "update": (
        "AFTER UPDATE ON {table} REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows",
        "new_rows",
    ),
    "delete": ("AFTER DELETE ON {table} REFERENCING OLD TABLE AS old_rows", "old_rows"),
}


def _stamp(kind: str) -> str:
    return (
        f"INSERT INTO {STAMPS} (kind, owner, stamp, count)"
        f" VALUES ('{kind}', 0, gen_random_uuid(), 0)"
        f" ON CONFLICT (kind, owner) DO UPDATE SET stamp = EXCLUDED.stamp;"
    )


def _triggers(table: str, kind: str, column: str | None) -> list[tuple[str, str, str]]:
    """Each trigger's name, its clause and when it stamps."""
    name = f"{table}_stamp_{kind}"
    if column is not None:  # only an update changes a column of a row that exists
        changed = (
            f"EXISTS (SELECT 1 FROM old_rows JOIN new_rows USING (id)"
            f" WHERE old_rows.{column} IS DISTINCT FROM new_rows.{column})"
        )
        return [(f"{name}_{column}", EVENTS["update"][0], changed)]
    return [
        (f"{name}_{event}", clause, f"EXISTS (SELECT 1 FROM {rows})")
        for event, (clause, rows) in EVENTS.items()
    ] + [(f"{name}_truncate", "AFTER TRUNCATE ON {table}", "TRUE")]


def create(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for table, kind, column in MARKED:
        for name, clause, condition in _triggers(table, kind, column):
            schema_editor.execute(
                f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                f" IF {condition} THEN {_stamp(kind)} END IF; RETURN NULL; END; $$",
                None,
            )
            schema_editor.execute(
                f"CREATE TRIGGER {name} {clause.format(table=table)}"
                f" FOR EACH STATEMENT EXECUTE FUNCTION {name}()"
            )
    for kind in KINDS:
        schema_editor.execute(_stamp(kind))


def drop(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for table, kind, column in MARKED:
        for name, _clause, _condition in _triggers(table, kind, column):
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {name} ON {table}")
            schema_editor.execute(f"DROP FUNCTION IF EXISTS {name}()")
    kinds = ", ".join(f"'{kind}'" for kind in KINDS)
    schema_editor.execute(f"DELETE FROM {STAMPS} WHERE kind IN ({kinds})")


class Migration(migrations.Migration):
    dependencies = [("releases", "0011_working_stamps")]

    operations = [migrations.RunPython(create, drop)]
