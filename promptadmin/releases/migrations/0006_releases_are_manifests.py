"""Releases become manifests of content-addressed bundles (``releases.bundles``), 2 of 2.

The database refuses to change a bundle or a manifest, as it refuses to change the rest
of a release (0002): the release trigger now covers the manifest, and bundles get a
trigger of their own. The segment and text tables go, with their triggers; backwards
they come back, guarded again, for 0005 to fill.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations, models

# The release trigger of 0002, and the one covering the manifest too.
RELEASE_BEFORE = """
    IF TG_OP = 'DELETE' OR (NEW.name, NEW.notes, NEW.created_at, NEW.created_via,
        NEW.content_hash, NEW.segment_count, NEW.catalog::text)
        IS DISTINCT FROM (OLD.name, OLD.notes, OLD.created_at, OLD.created_via,
        OLD.content_hash, OLD.segment_count, OLD.catalog::text) THEN
        RAISE EXCEPTION 'a release never changes once made (release %)', OLD.name;
    END IF;
    RETURN NEW;
"""
RELEASE_AFTER = """
    IF TG_OP = 'DELETE' OR (NEW.name, NEW.notes, NEW.created_at, NEW.created_via,
        NEW.content_hash, NEW.segment_count, NEW.catalog::text, NEW.manifest::text)
        IS DISTINCT FROM (OLD.name, OLD.notes, OLD.created_at, OLD.created_via,
        OLD.content_hash, OLD.segment_count, OLD.catalog::text, OLD.manifest::text) THEN
        RAISE EXCEPTION 'a release never changes once made (release %)', OLD.name;
    END IF;
    RETURN NEW;
"""
# The tables that go, and their triggers (0002), brought back with them.
GONE = {
    "releases_releasesegment": """
        RAISE EXCEPTION 'a release never changes once made (segment row %)', OLD.id;
    """,
    "releases_releasetext": """
        IF TG_OP = 'DELETE' OR NEW.content IS DISTINCT FROM OLD.content
            OR NEW.sha256 IS DISTINCT FROM OLD.sha256 THEN
            RAISE EXCEPTION 'a release text never changes (text %)', OLD.sha256;
        END IF;
        RETURN NEW;
    """,
}
BUNDLE = """
    RAISE EXCEPTION 'a release bundle never changes (bundle %)', OLD.sha256;
"""


def _function(schema_editor: Any, table: str, body: str) -> None:
    schema_editor.execute(
        f"CREATE OR REPLACE FUNCTION {table}_immutable() RETURNS trigger LANGUAGE plpgsql AS "
        f"$$ BEGIN {body} END; $$",
        None,  # no parameters: the '%' of RAISE are PL/pgSQL's, not placeholders
    )


def _trigger(schema_editor: Any, table: str) -> None:
    schema_editor.execute(
        f"CREATE TRIGGER {table}_immutable BEFORE UPDATE OR DELETE ON {table} "
        f"FOR EACH ROW EXECUTE FUNCTION {table}_immutable()"
    )


def _drop(schema_editor: Any, table: str) -> None:
    schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_immutable ON {table}")
    schema_editor.execute(f"DROP FUNCTION IF EXISTS {table}_immutable()")


def guard_bundles(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    _function(schema_editor, "releases_release", RELEASE_AFTER)
    _function(schema_editor, "releases_releasebundle", BUNDLE)
    _trigger(schema_editor, "releases_releasebundle")
    for table in GONE:
        _drop(schema_editor, table)


def guard_segments(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    _function(schema_editor, "releases_release", RELEASE_BEFORE)
    _drop(schema_editor, "releases_releasebundle")
    for table, body in GONE.items():
        _function(schema_editor, table, body)
        _trigger(schema_editor, table)



class Migration(migrations.Migration):
    dependencies = [("releases", "0005_release_bundles_and_manifests")]

    operations = [
        migrations.AlterField(model_name="release", name="manifest", field=models.JSONField()),
        migrations.RunPython(guard_bundles, guard_segments),
        migrations.DeleteModel(name="ReleaseSegment"),
        migrations.DeleteModel(name="ReleaseText"),
    ]
