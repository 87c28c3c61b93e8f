"""Migration 0010 gives every release made before it the index game servers are served from:
the same index a release made now has, its shards stored once, byte-identical prompts."""

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
from promptadmin.content.models import Segment
from promptadmin.content.services import segments
from promptadmin.releases import services, serving
from promptadmin.releases.models import Release, ReleaseBundle

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

BEFORE = [("releases", "0009_scenario_lore")]
REQUESTS = [
    AssembleParams(entry="drowned-bell", first_turn=True, npcs=(("marta-vell", 2),)),
    AssembleParams(entry="salvage-war", npcs=(("kestrel", 1), ("old-cobb", 0))),
]


def migrate(targets: list[tuple[str, str]]) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


def latest() -> list[tuple[str, str]]:
    return list(MigrationExecutor(connection).loader.graph.leaf_nodes())


def served() -> dict[str, list[str]]:
    """What each release serves in a fresh process."""
    cache.clear()
    serving.forget()
    return {
        name: [
            assemble_prompt(params, load=serving.resolve(name).load).prompt for params in REQUESTS
        ]
        for name in Release.objects.order_by("pk").values_list("name", flat=True)
    }


@pytest.fixture
def releases_made_before() -> Iterator[dict[str, Any]]:
    """Two releases an edit apart; what they served and their indexes, then the database
    as it was before 0010 (no index, no shards)."""
    cache.clear()
    serving.forget()
    call_command("seed_demo")
    services.release_create(actor=None, name="r-one")
    tone = Segment.objects.get(import_key="w-iron-tone")
    segments.segment_update(actor=None, segment=tone, content="Fog.")
    services.release_create(actor=None, name="r-two")
    made = {
        "served": served(),
        "indexes": dict(Release.objects.values_list("name", "index")),
        "bundles": ReleaseBundle.objects.exclude(kind="index").count(),
    }
    migrate(BEFORE)
    # No shard was stored before 0010 (bundles are guarded: the guard is off for this alone).
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL session_replication_role = replica")
        cursor.execute("DELETE FROM releases_releasebundle WHERE kind = 'index'")
    yield made
    migrate(latest())
    serving.forget()


def test_releases_made_before_get_their_index_and_serve_byte_identical_prompts(
    releases_made_before: dict[str, Any],
) -> None:
    migrate(latest())

    assert dict(Release.objects.values_list("name", "index")) == releases_made_before["indexes"]
    indexes = releases_made_before["indexes"].values()
    shards = {sha for index in indexes for sha in (*index["entries"], *index["npcs"])}
    # Each shard stored once, shared by both releases but those the edit changed.
    assert set(ReleaseBundle.objects.filter(kind="index").values_list("sha256", flat=True)) == (
        shards
    )
    assert ReleaseBundle.objects.exclude(kind="index").count() == releases_made_before["bundles"]
    assert served() == releases_made_before["served"]
    with pytest.raises(DatabaseError), transaction.atomic():
        Release.objects.update(index={})  # guarded as the rest of a release is
