"""Releases become manifests of content-addressed bundles (``releases.bundles``), 1 of 2.

Every release made before keeps what it holds: its segment rows are read, grouped into
the bundles of its objects (stored once: most are shared with the release before), and
its manifest names them. Backwards, each release's segment rows and texts are written
again from its bundles. Either way a release serves byte-identical prompts. 0006 then
guards the bundles and drops the segment and text tables (in a transaction of its own:
PostgreSQL alters no table with row events of this one pending).
"""

from __future__ import annotations

from typing import Any

from django.db import migrations, models

BATCH = 2000


def bundle_releases(apps: Any, schema_editor: Any) -> None:
    from promptadmin.releases.bundles import WRITE_BATCH, built
    from promptadmin.releases.snapshot import ContentSet, SnapSegment

    Release = apps.get_model("releases", "Release")
    ReleaseSegment = apps.get_model("releases", "ReleaseSegment")
    ReleaseBundle = apps.get_model("releases", "ReleaseBundle")
    fields = (
        "segment_id",
        "scope",
        "owner",
        "title",
        "text__content",
        "metadata",
        "version",
        "tier",
        "sort_order",
        "token_count",
        "token_encoding",
    )
    for release in Release.objects.order_by("pk").iterator(chunk_size=1):
        rows = ReleaseSegment.objects.filter(release_id=release.pk).values_list(*fields)
        segments = {row[0]: SnapSegment(row[0], *row[1:]) for row in rows.iterator(BATCH)}
        manifest, held = built(ContentSet(catalog=release.catalog, segments=segments))
        kept = sum(len(bundle.rows) for bundle in held.values())
        if kept != len(segments):
            raise RuntimeError(
                f"Release {release.name}: {len(segments) - kept} segments belong to no object "
                "of its catalog; it cannot be made into bundles."
            )
        hashes = list(held)
        known: set[str] = set()
        for start in range(0, len(hashes), BATCH):
            chunk = hashes[start : start + BATCH]
            known.update(
                ReleaseBundle.objects.filter(sha256__in=chunk).values_list("sha256", flat=True)
            )
        ReleaseBundle.objects.bulk_create(
            [
                ReleaseBundle(sha256=sha, kind=bundle.kind, content=bundle.text)
                for sha, bundle in held.items()
                if sha not in known
            ],
            batch_size=WRITE_BATCH,
        )
        Release.objects.filter(pk=release.pk).update(manifest=manifest)


def unbundle_releases(apps: Any, schema_editor: Any) -> None:
    from promptadmin.releases.bundles import decode, manifest_hashes
    from promptadmin.releases.snapshot import text_hash

    Release = apps.get_model("releases", "Release")
    ReleaseSegment = apps.get_model("releases", "ReleaseSegment")
    ReleaseText = apps.get_model("releases", "ReleaseText")
    ReleaseBundle = apps.get_model("releases", "ReleaseBundle")
    for release in Release.objects.order_by("pk").iterator(chunk_size=1):
        hashes = list(manifest_hashes(release.manifest))
        segments = []
        for start in range(0, len(hashes), BATCH):
            stored = ReleaseBundle.objects.filter(sha256__in=hashes[start : start + BATCH])
            for sha, text in stored.values_list("sha256", "content"):
                segments.extend(decode(sha, text).rows)
        texts = {text_hash(row.content): row.content for row in segments}
        ReleaseText.objects.bulk_create(
            [ReleaseText(sha256=sha, content=content) for sha, content in texts.items()],
            batch_size=BATCH,
            ignore_conflicts=True,  # kept by an earlier release
        )
        ReleaseSegment.objects.bulk_create(
            [
                ReleaseSegment(
                    release_id=release.pk,
                    segment_id=row.id,
                    scope=row.scope,
                    owner=row.owner,
                    title=row.title,
                    text_id=text_hash(row.content),
                    metadata=row.metadata,
                    version=row.version,
                    tier=row.tier,
                    sort_order=row.sort_order,
                    token_count=row.token_count,
                    token_encoding=row.token_encoding,
                )
                for row in segments
            ],
            batch_size=BATCH,
        )



class Migration(migrations.Migration):
    dependencies = [("releases", "0004_scenario_history_release_aliases")]

    operations = [
        migrations.CreateModel(
            name="ReleaseBundle",
            fields=[
                ("sha256", models.CharField(max_length=64, primary_key=True, serialize=False)),
                ("kind", models.CharField(max_length=16)),
                ("content", models.TextField()),
            ],
            options={"abstract": False},
        ),
        migrations.AddField(
            model_name="release", name="manifest", field=models.JSONField(null=True)
        ),
        migrations.RunPython(bundle_releases, unbundle_releases),
    ]
