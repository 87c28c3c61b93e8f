"""PostgreSQL refuses to change a prompt version, whatever the code path.

``PromptVersion.save()`` guards the ORM's instance saves; a queryset ``update()`` or raw
SQL would pass it, and a client pinned to a version number would then get other content
under the same number. The only update allowed is the one Django makes when the person
who wrote a version is deleted (``SET NULL`` on ``author``). Deleting stays possible:
the services refuse a labelled or newest version, ``PROTECT`` refuses a labelled one.
SQLite (development) relies on the ORM guard.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

TABLE = "prompts_promptversion"
BODY = """
    IF (NEW.id, NEW.prompt_id, NEW.number, NEW.syntax, NEW.system, NEW.user_templates,
        NEW.variables, NEW.task, NEW.config, NEW.commit_message, NEW.author_label,
        NEW.created_at, NEW.content_hash)
        IS DISTINCT FROM (OLD.id, OLD.prompt_id, OLD.number, OLD.syntax, OLD.system,
        OLD.user_templates, OLD.variables, OLD.task, OLD.config, OLD.commit_message,
        OLD.author_label, OLD.created_at, OLD.content_hash)
        OR (NEW.author_id IS NOT NULL AND NEW.author_id IS DISTINCT FROM OLD.author_id) THEN
        RAISE EXCEPTION 'a prompt version never changes once created (version %)', OLD.id;
    END IF;
    RETURN NEW;
"""


def create(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(
        f"CREATE FUNCTION {TABLE}_immutable() RETURNS trigger LANGUAGE plpgsql AS "
        f"$$ BEGIN {BODY} END; $$",
        None,  # no parameters: the '%' of RAISE is PL/pgSQL's, not a placeholder
    )
    schema_editor.execute(
        f"CREATE TRIGGER {TABLE}_immutable BEFORE UPDATE ON {TABLE} "
        f"FOR EACH ROW EXECUTE FUNCTION {TABLE}_immutable()"
    )


def drop(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(f"DROP TRIGGER IF EXISTS {TABLE}_immutable ON {TABLE}")
    schema_editor.execute(f"DROP FUNCTION IF EXISTS {TABLE}_immutable()")


class Migration(migrations.Migration):
    dependencies = [("prompts", "0002_prompt_version_counter")]

    operations = [migrations.RunPython(create, drop)]
