"""Each object's working stamp (``WorkingStamp``), kept by PostgreSQL on every write.

Reading the working copy used to sum up all 100,000 active segments (an md5 of every
field, in one query of 2-3 s) to learn which objects changed since it was last read. Now
the database notes it when writing: statement-level AFTER triggers on the segment and
lore tables, with transition tables, give every object a statement touched a new random
stamp and add the change to its count of active rows. A read then takes a small table
(one row per object with segments, one per world with lore) and reads the segments of
the objects whose stamp it has not seen.

Statement-level, so that a bulk insert of 100,000 rows stamps each object once; counts
are added (not recounted), so that two transactions writing one object's segments at
once leave the right count; rows are stamped in (kind, owner) order, so that two
statements lock them in one order. A TRUNCATE of a table forgets its stamps. An update
stamps the object a segment leaves and the one it joins. Only rows active before or
after count: editing an inactive segment changes no bundle.

One more row, ``catalog`` (owner 0), is stamped by every statement that writes a world,
ruleset, NPC, entry or entry's rulesets (a statement writing no row stamps nothing):
while it and the objects' stamps are unchanged, a process that read the working copy
before has it still. These are rare writes; they wait on each other's commit.

The scopes and the bundle kinds are written here as they are now, not imported: a
migration keeps meaning what it meant. SQLite (development) has no triggers: there the
working copy is read whole.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations, models

STAMPS = "releases_workingstamp"
SCOPES = "('core', 'ruleset', 'world', 'entry', 'entry_start', 'npc')"
# What each table's rows say about their object: its bundle kind and its id (0: none).
SOURCES = {
    "promptadmin_segment": (
        "CASE WHEN scope = 'entry_start' THEN 'entry' ELSE scope END",
        "COALESCE(ruleset_id, world_id, entry_id, npc_id, 0)",
        f"scope IN {SCOPES}",
        "kind IN ('core', 'ruleset', 'world', 'entry', 'npc')",
    ),
    "lore_loreentry": ("'lore'", "COALESCE(world_id, 0)", "TRUE", "kind = 'lore'"),
}


def _rows(table: str, relation: str, sign: int) -> str:
    kind, owner, where, _ = SOURCES[table]
    return (
        f"SELECT {kind} AS kind, {owner} AS owner, active, {sign} AS delta"
        f" FROM {relation} WHERE {where}"
    )


def _stamp(changed: str) -> str:
    """Stamp every object with an active row among ``changed``, adding its rows' deltas."""
    return (
        f"INSERT INTO {STAMPS} (kind, owner, stamp, count)"
        f" SELECT kind, owner, gen_random_uuid(), SUM(CASE WHEN active THEN delta ELSE 0 END)"
        f" FROM ({changed}) AS changed GROUP BY kind, owner HAVING bool_or(active)"
        f" ORDER BY kind, owner"
        f" ON CONFLICT (kind, owner) DO UPDATE"
        f" SET stamp = EXCLUDED.stamp, count = {STAMPS}.count + EXCLUDED.count;"
    )


def _function(table: str) -> str:
    inserted, deleted = _rows(table, "new_rows", 1), _rows(table, "old_rows", -1)
    return (
        f"CREATE FUNCTION {table}_stamp() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
        f" IF TG_OP = 'INSERT' THEN {_stamp(inserted)}"
        f" ELSIF TG_OP = 'DELETE' THEN {_stamp(deleted)}"
        f" ELSE {_stamp(f'{inserted} UNION ALL {deleted}')}"
        f" END IF; RETURN NULL; END; $$"
    )


# The tables of the catalog (the working copy's objects).
CATALOG = (
    "promptadmin_world",
    "promptadmin_ruleset",
    "promptadmin_npc",
    "promptadmin_entry",
    "promptadmin_entryruleset",
)
STAMP_CATALOG = (
    f"INSERT INTO {STAMPS} (kind, owner, stamp, count) VALUES ('catalog', 0, gen_random_uuid(), 0)"
    f" ON CONFLICT (kind, owner) DO UPDATE SET stamp = EXCLUDED.stamp"
)

# A trigger with transition tables fires on one event: three per table.
TRIGGERS = {
    "insert": "AFTER INSERT ON {table} REFERENCING NEW TABLE AS new_rows",
    "update": "AFTER UPDATE ON {table} REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows",
    "delete": "AFTER DELETE ON {table} REFERENCING OLD TABLE AS old_rows",
}


# The catalog's stamp is replaced by a statement that writes a row (or truncates).
CATALOG_TRIGGERS = {
    "insert": (TRIGGERS["insert"], "EXISTS (SELECT 1 FROM new_rows)"),
    "update": (TRIGGERS["update"], "EXISTS (SELECT 1 FROM new_rows)"),
    "delete": (TRIGGERS["delete"], "EXISTS (SELECT 1 FROM old_rows)"),
    "truncate": ("AFTER TRUNCATE ON {table}", "TRUE"),
}


def create(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for table, (kind, owner, where, mine) in SOURCES.items():
        schema_editor.execute(_function(table), None)
        for event, clause in TRIGGERS.items():
            schema_editor.execute(
                f"CREATE TRIGGER {table}_stamp_{event} {clause.format(table=table)}"
                f" FOR EACH STATEMENT EXECUTE FUNCTION {table}_stamp()"
            )
        schema_editor.execute(
            f"CREATE FUNCTION {table}_stamp_truncate() RETURNS trigger LANGUAGE plpgsql AS"
            f" $$ BEGIN DELETE FROM {STAMPS} WHERE {mine}; RETURN NULL; END; $$",
            None,
        )
        schema_editor.execute(
            f"CREATE TRIGGER {table}_stamp_truncate AFTER TRUNCATE ON {table}"
            f" FOR EACH STATEMENT EXECUTE FUNCTION {table}_stamp_truncate()"
        )
        # Writers wait from the trigger's creation (its lock) to the commit: none is missed.
        schema_editor.execute(
            f"INSERT INTO {STAMPS} (kind, owner, stamp, count)"
            f" SELECT {kind}, {owner}, gen_random_uuid(), COUNT(*) FROM {table}"
            f" WHERE active AND {where} GROUP BY 1, 2"
        )
    for table in CATALOG:
        for event, (clause, condition) in CATALOG_TRIGGERS.items():
            name = f"{table}_stamp_catalog_{event}"
            schema_editor.execute(
                f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                f" IF {condition} THEN {STAMP_CATALOG}; END IF; RETURN NULL; END; $$",
                None,
            )
            schema_editor.execute(
                f"CREATE TRIGGER {name} {clause.format(table=table)}"
                f" FOR EACH STATEMENT EXECUTE FUNCTION {name}()"
            )
    schema_editor.execute(STAMP_CATALOG)


def drop(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for table in CATALOG:
        for event in CATALOG_TRIGGERS:
            name = f"{table}_stamp_catalog_{event}"
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {name} ON {table}")
            schema_editor.execute(f"DROP FUNCTION IF EXISTS {name}()")
    for table in SOURCES:
        for event in (*TRIGGERS, "truncate"):
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_stamp_{event} ON {table}")
        schema_editor.execute(f"DROP FUNCTION IF EXISTS {table}_stamp()")
        schema_editor.execute(f"DROP FUNCTION IF EXISTS {table}_stamp_truncate()")


class Migration(migrations.Migration):
    dependencies = [
        ("releases", "0010_release_index"),
        ("promptadmin", "0013_npc_tier_from_imported_metadata"),
        ("lore", "0002_lore_search"),
    ]

    operations = [
        migrations.CreateModel(
            name="WorkingStamp",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("kind", models.CharField(max_length=16)),
                ("owner", models.BigIntegerField()),
                ("stamp", models.UUIDField()),
                (
                    "count",
                    models.IntegerField(help_text="Active segments (lore: active entries)."),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("kind", "owner"), name="workingstamp_kind_owner"
                    )
                ],
            },
        ),
        migrations.RunPython(create, drop),
    ]
