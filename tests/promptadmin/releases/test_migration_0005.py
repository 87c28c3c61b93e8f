"""Migrations 0005 and 0006 turn every release's segment rows into bundles and a manifest,
and back: a release made before serves byte-identical prompts after, either way.

Releases are made the way the code before 0005 made them (a row per active segment, texts
deduplicated), from the working copy as it was at each release, then migrated.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

from assembler.request import AssembleParams
from promptadmin.content.assembly import assemble_prompt
from promptadmin.content.models import NPC, Segment
from promptadmin.content.services import catalog, segments
from promptadmin.releases import serving
from promptadmin.releases.bundles import canonical, manifest_hashes, release_content, sha256
from promptadmin.releases.models import Release, ReleaseBundle
from promptadmin.releases.snapshot import CATALOG_KEYS, ContentSet, text_hash, working_content

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

BEFORE = [("releases", "0004_scenario_history_release_aliases")]


def after() -> list[tuple[str, str]]:
    """0005, 0006 and every migration since: serving reads what later ones made too (the
    index of 0010)."""
    return list(MigrationExecutor(connection).loader.graph.leaf_nodes())


REQUESTS = [
    AssembleParams(entry="drowned-bell", first_turn=True, npcs=(("marta-vell", 2),)),
    AssembleParams(entry="drowned-bell", npcs=(("old-cobb", 1), ("marta-vell", 0))),
    AssembleParams(entry="drowned-bell", token_budget=300),
]


def migrate(targets: list[tuple[str, str]]) -> Any:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return MigrationExecutor(connection).loader.project_state(targets).apps


def old_release(apps: Any, name: str, content: ContentSet) -> None:
    """A release as the code before 0005 wrote it."""
    Release = apps.get_model("releases", "Release")
    ReleaseText = apps.get_model("releases", "ReleaseText")
    ReleaseSegment = apps.get_model("releases", "ReleaseSegment")
    release = Release.objects.create(
        name=name,
        content_hash=old_content_hash(content),
        segment_count=len(content.segments),
        catalog=dict(content.catalog),
    )
    rows = list(content.segments.values())
    ReleaseText.objects.bulk_create(
        [ReleaseText(sha256=text_hash(row.content), content=row.content) for row in rows],
        ignore_conflicts=True,
    )
    ReleaseSegment.objects.bulk_create(
        [
            ReleaseSegment(
                release=release,
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
            for row in rows
        ]
    )


def old_content_hash(content: ContentSet) -> str:
    """The content hash releases were made with before 0005: every segment's fields."""
    fields = ("scope", "owner", "title", "content", "metadata", "version", "tier", "sort_order")
    body = [
        {plural: content.catalog.get(plural, []) for plural in CATALOG_KEYS.values()},
        [
            [pk, *(text_hash(row.content) if f == "content" else getattr(row, f) for f in fields)]
            for pk, row in sorted(content.segments.items())
        ],
    ]
    return sha256(canonical(body))


def segment_rows(apps: Any) -> set[tuple[Any, ...]]:
    ReleaseSegment = apps.get_model("releases", "ReleaseSegment")
    fields = [f.name for f in ReleaseSegment._meta.fields if f.name not in ("id", "release")]
    return {
        (row["release__name"], *(str(row[name]) for name in fields))
        for row in ReleaseSegment.objects.values("release__name", *fields)
    }


@pytest.fixture
def old_releases() -> Iterator[tuple[Any, dict[str, list[str]], dict[str, ContentSet]]]:
    """Three releases made before 0005, an edit apart each, and the prompts each served."""
    cache.clear()
    serving.forget()
    call_command("seed_demo")
    apps = migrate(BEFORE)
    tone = Segment.objects.get(import_key="w-iron-tone")
    cobb = Segment.objects.filter(scope="npc", npc__slug="old-cobb").first()
    assert cobb is not None
    changes = {
        "r-one": lambda: None,
        "r-two": lambda: segments.segment_update(actor=None, segment=tone, content="Fog."),
        "r-three": lambda: (
            segments.segment_delete(actor=None, segment=cobb),
            catalog.catalog_update(
                actor=None, obj=NPC.objects.get(slug="marta-vell"), name="Marta Vell-Orr"
            ),
            segments.segment_create(actor=None, scope="core", content="Speak plainly."),
        ),
    }
    served, held = {}, {}
    for name, change in changes.items():
        change()
        held[name] = working_content()
        old_release(apps, name, held[name])
        served[name] = [assemble_prompt(params).prompt for params in REQUESTS]
    yield apps, served, held
    migrate(after())
    serving.forget()


def assert_serves(served: dict[str, list[str]]) -> None:
    cache.clear()
    serving.forget()  # a fresh process
    for name, prompts in served.items():
        load = serving.resolve(name).load
        assert [assemble_prompt(params, load=load).prompt for params in REQUESTS] == prompts


def test_releases_made_before_serve_byte_identical_prompts_after(
    old_releases: tuple[Any, dict[str, list[str]], dict[str, ContentSet]],
) -> None:
    _apps, served, contents = old_releases
    assert served["r-one"] != served["r-two"] != served["r-three"]
    migrate(after())

    assert_serves(served)
    releases = {release.name: release for release in Release.objects.all()}
    for name, release in releases.items():
        held = release_content(release)
        assert held.segments == contents[name].segments
        assert held.catalog == contents[name].catalog
        assert release.content_hash == old_content_hash(contents[name])  # kept as made
    # Stored once: the second release added the one bundle its edit changed.
    one, two = (manifest_hashes(releases[name].manifest) for name in ("r-one", "r-two"))
    assert len(two - one) == 1
    assert ReleaseBundle.objects.exclude(kind="index").count() == len(
        one | two | manifest_hashes(releases["r-three"].manifest)
    )
    with pytest.raises(DatabaseError), transaction.atomic():
        ReleaseBundle.objects.update(content="rewritten")
    with pytest.raises(DatabaseError), transaction.atomic():
        Release.objects.update(manifest={})


def test_backward_writes_every_segment_row_again_then_forward_serves_alike(
    old_releases: tuple[Any, dict[str, list[str]], dict[str, ContentSet]],
) -> None:
    apps, served, _contents = old_releases
    rows = segment_rows(apps)
    migrate(after())

    apps = migrate(BEFORE)

    assert segment_rows(apps) == rows
    ReleaseSegment = apps.get_model("releases", "ReleaseSegment")
    with pytest.raises(DatabaseError), transaction.atomic():
        ReleaseSegment.objects.update(sort_order=9)  # guarded again, as 0002 made them
    migrate(after())
    assert_serves(served)
