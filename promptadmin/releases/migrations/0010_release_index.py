"""Releases get the index game servers are served from (``releases.bundles.index_of``).

Every release made before gets its index, made from its manifest, and the index shards no
release stored yet (most are shared with the release before); then the release trigger
guards the index as it guards the rest of a release. Backwards, the trigger guards what it
guarded before and the column goes; the shards stay (bundles are never deleted, and an
unnamed one serves nothing).
"""

from __future__ import annotations

from typing import Any

from django.db import migrations, models

# The release trigger of 0006, and the one covering the index too.
RELEASE_BEFORE = """
    IF TG_OP = 'DELETE' OR (NEW.name, NEW.notes, NEW.created_at, NEW.created_via,
        NEW.content_hash, NEW.segment_count, NEW.catalog::text, NEW.manifest::text)
        IS DISTINCT FROM (OLD.name, OLD.notes, OLD.created_at, OLD.created_via,
        OLD.content_hash, OLD.segment_count, OLD.catalog::text, OLD.manifest::text) THEN
        RAISE EXCEPTION 'a release never changes once made (release %)', OLD.name;
    END IF;
    RETURN NEW;
"""
RELEASE_AFTER = """
    IF TG_OP = 'DELETE' OR (NEW.name, NEW.notes, NEW.created_at, NEW.created_via,
        NEW.content_hash, NEW.segment_count, NEW.catalog::text, NEW.manifest::text,
        NEW.index::text)
        IS DISTINCT FROM (OLD.name, OLD.notes, OLD.created_at, OLD.created_via,
        OLD.content_hash, OLD.segment_count, OLD.catalog::text, OLD.manifest::text,
        OLD.index::text) THEN
        RAISE EXCEPTION 'a release never changes once made (release %)', OLD.name;
    END IF;
    RETURN NEW;
"""


def index_releases(apps: Any, schema_editor: Any) -> None:
    from promptadmin.releases.bundles import WRITE_BATCH, index_of

    Release = apps.get_model("releases", "Release")
    ReleaseBundle = apps.get_model("releases", "ReleaseBundle")
    for pk in Release.objects.order_by("pk").values_list("pk", flat=True):
        manifest = Release.objects.values_list("manifest", flat=True).get(pk=pk)
        index, shards = index_of(manifest)
        known = set(
            ReleaseBundle.objects.filter(sha256__in=list(shards)).values_list("sha256", flat=True)
        )
        ReleaseBundle.objects.bulk_create(
            [
                ReleaseBundle(sha256=sha, kind=shard.kind, content=shard.text)
                for sha, shard in shards.items()
                if sha not in known
            ],
            batch_size=WRITE_BATCH,
            ignore_conflicts=True,
        )
        Release.objects.filter(pk=pk).update(index=index)


def _guard(schema_editor: Any, body: str) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(
        "CREATE OR REPLACE FUNCTION releases_release_immutable() RETURNS trigger "
        f"LANGUAGE plpgsql AS $$ BEGIN {body} END; $$",
        None,  # no parameters: the '%' of RAISE is PL/pgSQL's, not a placeholder
    )


def guard_index(apps: Any, schema_editor: Any) -> None:
    _guard(schema_editor, RELEASE_AFTER)


def unguard_index(apps: Any, schema_editor: Any) -> None:
    _guard(schema_editor, RELEASE_BEFORE)


class Migration(migrations.Migration):
    dependencies = [("releases", "0009_scenario_lore")]

    operations = [
        migrations.AddField(
            model_name="release", name="index", field=models.JSONField(default=dict)
        ),
        migrations.RunPython(index_releases, migrations.RunPython.noop),
        migrations.RunPython(guard_index, unguard_index),
    ]
