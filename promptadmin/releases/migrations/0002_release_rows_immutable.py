"""PostgreSQL refuses to change or delete what a release holds, whatever the code path.

``Immutable.save()`` guards the ORM's instance saves; a queryset ``update()``/``delete()``
or raw SQL would pass it, so the database has the last word. The only update allowed is
the one Django makes when the user who made a release or moved a label is deleted
(``SET NULL`` on ``created_by``/``by``). SQLite (development) relies on the ORM guard.
"""

from __future__ import annotations

from django.db import migrations

FUNCTIONS = {
    "releases_release": """
        IF TG_OP = 'DELETE' OR (NEW.name, NEW.notes, NEW.created_at, NEW.created_via,
            NEW.content_hash, NEW.segment_count, NEW.catalog::text)
            IS DISTINCT FROM (OLD.name, OLD.notes, OLD.created_at, OLD.created_via,
            OLD.content_hash, OLD.segment_count, OLD.catalog::text) THEN
            RAISE EXCEPTION 'a release never changes once made (release %)', OLD.name;
        END IF;
        RETURN NEW;
    """,
    "releases_releasesegment": """
        RAISE EXCEPTION 'a release never changes once made (segment row %)', OLD.id;
    """,
    "releases_releaselabelmove": """
        IF TG_OP = 'DELETE' OR (NEW.label, NEW.from_release_id, NEW.to_release_id, NEW.at,
            NEW.via, NEW.note, NEW.confirmed_failures::text)
            IS DISTINCT FROM (OLD.label, OLD.from_release_id, OLD.to_release_id, OLD.at,
            OLD.via, OLD.note, OLD.confirmed_failures::text) THEN
            RAISE EXCEPTION 'a label move is never rewritten (move %)', OLD.id;
        END IF;
        RETURN NEW;
    """,
    "releases_releasetext": """
        IF TG_OP = 'DELETE' OR NEW.content IS DISTINCT FROM OLD.content
            OR NEW.sha256 IS DISTINCT FROM OLD.sha256 THEN
            RAISE EXCEPTION 'a release text never changes (text %)', OLD.sha256;
        END IF;
        RETURN NEW;
    """,
}


def create(apps: object, schema_editor: object) -> None:
    if schema_editor.connection.vendor != "postgresql":  # type: ignore[attr-defined]
        return
    for table, body in FUNCTIONS.items():
        schema_editor.execute(  # type: ignore[attr-defined]
            f"CREATE FUNCTION {table}_immutable() RETURNS trigger LANGUAGE plpgsql AS "
            f"$$ BEGIN {body} END; $$",
            None,  # no parameters: the '%' of RAISE are PL/pgSQL's, not placeholders
        )
        schema_editor.execute(  # type: ignore[attr-defined]
            f"CREATE TRIGGER {table}_immutable BEFORE UPDATE OR DELETE ON {table} "
            f"FOR EACH ROW EXECUTE FUNCTION {table}_immutable()"
        )


def drop(apps: object, schema_editor: object) -> None:
    if schema_editor.connection.vendor != "postgresql":  # type: ignore[attr-defined]
        return
    for table in FUNCTIONS:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_immutable ON {table}")  # type: ignore[attr-defined]
        schema_editor.execute(f"DROP FUNCTION IF EXISTS {table}_immutable()")  # type: ignore[attr-defined]


class Migration(migrations.Migration):
    dependencies = [("releases", "0001_releases_labels_scenarios")]

    operations = [migrations.RunPython(create, drop)]
