"""The working copy is read in proportion to what changed: PostgreSQL stamps each object
whose segments (a world whose lore) a statement writes, whatever the path, and a read
takes the stamps and the segments of the objects stamped since it last read them.

The randomized equivalence with the whole read is in test_impact_incremental.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from io import StringIO
from typing import Any

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.test.utils import CaptureQueriesContext

from promptadmin.content.models import NPC, Entry, Scope, Segment, World
from promptadmin.content.services import catalog, segments
from promptadmin.lore import services as lore
from promptadmin.lore.models import LoreEntry
from promptadmin.releases import services, serving, working
from promptadmin.releases.bundles import content_version, manifest_hashes, release_content
from promptadmin.releases.models import ReleaseBundle, WorkingStamp
from promptadmin.releases.snapshot import working_content
from promptadmin.releases.working import working_version
from tests.factories import NPCFactory, RulesetFactory, WorldFactory, make_segment

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

SEGMENTS = '"promptadmin_segment"'
LORE = '"lore_loreentry"'


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    cache.clear()
    serving.forget()
    working._last.clear()
    yield
    working._last.clear()


def game(npcs: int) -> Entry:
    """The core, a world, a ruleset, an entry casting the first NPC, and ``npcs`` NPCs,
    each with two segments."""
    world, ruleset = WorldFactory(slug="harbour"), RulesetFactory(slug="d6")
    cast = [NPCFactory() for _ in range(npcs)]
    entry = catalog.entry_create(
        actor=None,
        slug="docks",
        name="Docks",
        world=world,
        rulesets=[ruleset],
        cast=[catalog.CastMember(cast[0], tier=1)],
    )
    make_segment(scope="core", content="You narrate.")
    make_segment(scope="world", ref=world, content="Fog on the harbour.")
    make_segment(scope="ruleset", ref=ruleset, content="Roll a d6.")
    make_segment(scope="entry", ref=entry, content="The docks at night.")
    for npc in cast:
        make_segment(scope="npc", ref=npc, content=f"{npc.name} watches.")
        make_segment(scope="npc", ref=npc, tier=1, content=f"{npc.name} whispers.")
    return entry


def more_npcs(count: int) -> None:
    for _ in range(count):
        npc = NPCFactory()
        make_segment(scope="npc", ref=npc, content=f"{npc.name} waits.")


def reading(table: str, captured: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in captured.captured_queries if f"FROM {table}" in q["sql"]]


def the_whole_read_agrees() -> None:
    whole, part = content_version(working_content()), working_version()
    assert (part.manifest, part.content_hash) == (whole.manifest, whole.content_hash)
    assert part.segment_count == whole.segment_count
    assert part.content().segments == whole.content().segments
    assert part.content().lore == whole.content().lore


def test_an_unchanged_working_copy_reads_no_segment_and_no_lore() -> None:
    game(npcs=3)
    services.release_create(actor=None, name="r-one")
    with CaptureQueriesContext(connection) as captured:
        working_version()
    assert reading(SEGMENTS, captured) == [] and reading(LORE, captured) == []


def test_a_one_segment_change_reads_that_objects_segments_alone_at_any_size() -> None:
    game(npcs=3)
    counts = []
    for grown in (0, 40):
        more_npcs(grown)
        services.release_create(actor=None, name=f"r-{grown}")
        npc = NPC.objects.order_by("id").last()
        assert npc is not None
        segment = Segment.objects.filter(npc=npc).first()
        assert segment is not None
        segments.segment_update(actor=None, segment=segment, content=f"Changed at {grown}.")
        with CaptureQueriesContext(connection) as captured:
            version = working_version()
        # One query reads segments: those of the NPC changed, by its id.
        [read] = reading(SEGMENTS, captured)
        assert re.search(rf'"npc_id" IN \({npc.pk}\)', read), read
        assert reading(LORE, captured) == []
        counts.append(len(captured.captured_queries))
        assert version.manifest == content_version(working_content()).manifest
    assert counts[0] == counts[1]  # 40 more NPCs, not one more query


def test_a_lore_change_reads_that_worlds_lore_alone() -> None:
    entry = game(npcs=1)
    other = WorldFactory(slug="moors")
    lore.lore_entry_create(actor=None, world=entry.world, content="Bells.", keys=["bell"])
    lore.lore_entry_create(actor=None, world=other, content="Peat.", keys=["peat"])
    lore.lore_entry_create(actor=None, world=None, content="Salt.", keys=["salt"])
    services.release_create(actor=None, name="r-one")
    changed = LoreEntry.objects.get(world=other)
    lore.lore_entry_update(actor=None, entry=changed, content="Peat burns.")
    with CaptureQueriesContext(connection) as captured:
        working_version()
    [read] = reading(LORE, captured)
    assert re.search(rf'"world_id" IN \({other.pk}\)', read), read
    assert "IS NULL" not in read  # not every world's lore, which did not change
    assert reading(SEGMENTS, captured) == []
    the_whole_read_agrees()


# The stamps, written by the database whatever the path.


def stamps() -> dict[tuple[str, int], tuple[str, int]]:
    return {
        (row.kind, row.owner): (str(row.stamp), row.count) for row in WorkingStamp.objects.all()
    }


def counted() -> dict[tuple[str, int], int]:
    """Every object's active segments (and world's active lore entries), counted now."""
    found: dict[tuple[str, int], int] = {}
    for row in Segment.objects.filter(active=True, scope__in=list(Scope.values)[:6]):
        kind = "entry" if row.scope == Scope.ENTRY_START else row.scope
        owner = row.ruleset_id or row.world_id or row.entry_id or row.npc_id or 0
        found[(kind, owner)] = found.get((kind, owner), 0) + 1
    for entry in LoreEntry.objects.filter(active=True):
        key = ("lore", entry.world_id or 0)
        found[key] = found.get(key, 0) + 1
    return found


def restamped(write: Any) -> set[tuple[str, int]]:
    """Which stamps ``write()`` replaced; and every count is right after it."""
    before = stamps()
    write()
    after = stamps()
    others = (*working.OTHER_STAMPS, working.CATALOG)
    assert {key: n for key, (_s, n) in after.items() if n and key[0] not in others} == counted()
    return {key for key, value in after.items() if before.get(key, (None,))[0] != value[0]}


def test_segment_writes_stamp_their_objects_and_keep_counts() -> None:
    entry = game(npcs=2)
    npc, other = NPC.objects.order_by("id")[:2]
    world = entry.world
    one = Segment.objects.filter(npc=npc).first()
    assert one is not None
    assert restamped(lambda: make_segment(scope="npc", ref=npc, content="New.")) == {
        ("npc", npc.pk)
    }
    assert restamped(
        lambda: segments.segment_update(actor=None, segment=one, content="Edited.")
    ) == {("npc", npc.pk)}
    # Moved to another NPC: both are stamped, one loses a segment, the other gains it.
    assert restamped(lambda: segments.segment_update(actor=None, segment=one, ref=other)) == {
        ("npc", npc.pk),
        ("npc", other.pk),
    }
    one.refresh_from_db()
    assert restamped(lambda: segments.segment_update(actor=None, segment=one, active=False)) == {
        ("npc", other.pk)
    }
    one.refresh_from_db()
    # An inactive segment is in no bundle: editing it stamps nothing.
    assert (
        restamped(lambda: segments.segment_update(actor=None, segment=one, content="Idle."))
        == set()
    )
    core = Segment.objects.get(scope=Scope.CORE)
    assert restamped(lambda: segments.segment_delete(actor=None, segment=core)) == {("core", 0)}
    start = Segment(scope=Scope.ENTRY_START, entry=entry, content="Start.", token_count=1)
    assert restamped(lambda: start.save()) == {("entry", entry.pk)}
    # Bulk paths: one statement, each object stamped once.
    rows = [Segment(scope=Scope.NPC, npc=npc, content=f"Bulk {n}.") for n in range(3)]
    rows.append(Segment(scope=Scope.WORLD, world=world, content="Bulk world."))
    assert restamped(lambda: Segment.objects.bulk_create(rows)) == {
        ("npc", npc.pk),
        ("world", world.pk),
    }
    assert restamped(lambda: Segment.objects.filter(npc=npc).update(world=None, npc=other)) == {
        ("npc", npc.pk),
        ("npc", other.pk),
    }
    assert restamped(lambda: Segment.objects.filter(scope=Scope.NPC).update(active=False)) == {
        ("npc", other.pk)  # the first has none left
    }
    # Inactive rows are in no bundle: deleting them changes none.
    assert restamped(lambda: Segment.objects.filter(scope=Scope.NPC).delete()) == set()
    assert restamped(lambda: Segment.objects.filter(pk=-1).update(content="none")) == set()
    the_whole_read_agrees()


def test_lore_writes_stamp_their_worlds() -> None:
    entry = game(npcs=1)
    world, other = entry.world, WorldFactory()
    created: list[LoreEntry] = []

    def create() -> None:
        created.append(
            lore.lore_entry_create(actor=None, world=world, content="Bells.", keys=["bell"])
        )

    assert restamped(create) == {("lore", world.pk)}
    entry_ = created[0]
    assert restamped(
        lambda: lore.lore_entry_update(actor=None, entry=entry_, content="Bells ring.")
    ) == {("lore", world.pk)}
    assert restamped(lambda: lore.lore_entry_update(actor=None, entry=entry_, world=None)) == {
        ("lore", world.pk),
        ("lore", 0),
    }
    entry_.refresh_from_db()
    assert restamped(lambda: lore.lore_entry_update(actor=None, entry=entry_, active=False)) == {
        ("lore", 0)
    }
    bulk = [LoreEntry(world=other, content=f"Bulk {n}.", keys=["b"]) for n in range(2)]
    assert restamped(lambda: LoreEntry.objects.bulk_create(bulk)) == {("lore", other.pk)}
    assert restamped(lambda: LoreEntry.objects.filter(world=other).delete()) == {("lore", other.pk)}
    the_whole_read_agrees()


@pytest.mark.django_db(transaction=True)
def test_a_truncate_forgets_the_stamps_of_its_table_alone() -> None:
    entry = game(npcs=1)
    lore.lore_entry_create(actor=None, world=entry.world, content="Bells.", keys=["bell"])
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE promptadmin_segment")
    kinds = {kind for kind, _owner in stamps()}
    assert kinds == {"lore", "catalog", "scenarios", "casts"}


def test_the_catalog_casts_and_scenarios_are_stamped_by_what_changes_them() -> None:
    entry = game(npcs=2)
    npc, other = NPC.objects.order_by("id")[:2]
    assert restamped(lambda: catalog.catalog_update(actor=None, obj=npc, name="Renamed")) == {
        ("catalog", 0)
    }
    npc.refresh_from_db()
    # A cast names its NPCs by slug.
    assert restamped(lambda: catalog.catalog_update(actor=None, obj=npc, slug="renamed")) == {
        ("catalog", 0),
        ("casts", 0),
    }
    entry.refresh_from_db()
    # The entry's row is saved too (its revision).
    assert restamped(
        lambda: catalog.entry_update(actor=None, entry=entry, cast=[catalog.CastMember(other)])
    ) == {("casts", 0), ("catalog", 0)}
    assert restamped(lambda: services.scenario_create(actor=None, name="night", entry="docks")) == {
        ("scenarios", 0)
    }
    assert restamped(lambda: World.objects.filter(pk=-1).update(name="none")) == set()


# What a process keeps between reads: read committed rows only.


@pytest.mark.django_db(transaction=True)
def test_a_process_reads_an_unchanged_working_copy_in_two_queries() -> None:
    game(npcs=2)
    first = working_version()
    with CaptureQueriesContext(connection) as captured:
        again = working_version()
    assert len(captured.captured_queries) == 2  # the bundle store, the stamps
    assert again.manifest == first.manifest and again.content_hash == first.content_hash
    npc = NPC.objects.order_by("id").first()
    assert npc is not None
    catalog.catalog_update(actor=None, obj=npc, name="Marta")  # no segment changes
    renamed = working_version()
    assert renamed.content_hash != first.content_hash
    assert renamed.manifest["npcs"][npc.slug] != first.manifest["npcs"][npc.slug]
    segment = Segment.objects.filter(npc=npc).first()
    assert segment is not None
    segments.segment_update(actor=None, segment=segment, content="Marta hums.")
    with CaptureQueriesContext(connection) as captured:
        edited = working_version()
    # The objects are the same: their catalog is not read again.
    assert reading('"promptadmin_npc"', captured) == []
    assert edited.manifest == content_version(working_content()).manifest


@pytest.mark.django_db(transaction=True)
def test_a_process_takes_the_working_copy_another_one_read_from_the_shared_cache() -> None:
    game(npcs=2)
    services.release_create(actor=None, name="r-one")
    segment = Segment.objects.filter(scope=Scope.NPC).first()
    assert segment is not None
    segments.segment_update(actor=None, segment=segment, content="Changed since r-one.")
    read = working_version()
    [changed] = read.held
    working._last.clear()  # another process
    with CaptureQueriesContext(connection) as captured:
        taken = working_version()
    assert len(captured.captured_queries) == 2  # the bundle store, the stamps
    assert (taken.manifest, taken.content_hash) == (read.manifest, read.content_hash)
    assert taken.segment_count == read.segment_count
    assert taken.parts([changed])[changed].rows == read.parts([changed])[changed].rows
    # The cache lost the changed bundle's text: it is read again, not served without it.
    cache.delete(working._text_key(changed))
    working._last.clear()
    again = working_version()
    assert again.manifest == read.manifest and set(again.held) == {changed}
    assert release_content(services.release_create(actor=None, name="r-two")).segments == (
        working_content().segments
    )


@pytest.mark.django_db(transaction=True)
def test_bundles_stored_by_a_transaction_rolled_back_are_held_again() -> None:
    game(npcs=1)
    with transaction.atomic():
        services.release_create(actor=None, name="r-gone")
        working_version()  # sees the bundles stored, not yet committed
        transaction.set_rollback(True)
    assert not ReleaseBundle.objects.exists()
    version = working_version()
    assert version.held  # made again: nothing is stored
    release = services.release_create(actor=None, name="r-kept")
    assert release_content(release).segments == working_content().segments


@pytest.mark.django_db(transaction=True)
def test_another_bundle_store_is_never_taken_for_this_one() -> None:
    game(npcs=1)
    services.release_create(actor=None, name="r-one")
    before = working._store()
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE releases_releasebundle")  # as the test suite's flush does
    assert working._store() != before
    version = working_version()
    assert set(version.held) == manifest_hashes(version.manifest)  # none stored any more
    release = services.release_create(actor=None, name="r-two")
    assert release_content(release).segments == working_content().segments


# The migrations, forward and back.


def migrate(targets: list[tuple[str, str]]) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


def triggers() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT tgname FROM pg_trigger WHERE tgname LIKE '%%_stamp%%'")
        return {name for (name,) in cursor.fetchall()}


@pytest.mark.django_db(transaction=True)
def test_the_stamp_migrations_go_forward_and_back() -> None:
    entry = game(npcs=2)
    lore.lore_entry_create(actor=None, world=entry.world, content="Bells.", keys=["bell"])
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    # 0011: four on each of the segment, lore and five catalog tables; 0012: four on each
    # of the scenario and cast tables, one on each slug.
    assert len(triggers()) == 7 * 4 + 2 * 4 + 2
    try:
        migrate([("releases", "0011_working_stamps")])
        assert len(triggers()) == 7 * 4
        migrate([("releases", "0010_release_index")])
        assert triggers() == set()
        # Written while nothing stamps: the migration forward counts what is there.
        npc = NPC.objects.order_by("id").first()
        Segment.objects.create(scope=Scope.NPC, npc=npc, content="Unstamped.", token_count=2)
        Segment.objects.filter(scope=Scope.CORE).update(active=False)
    finally:
        migrate(latest)
    assert len(triggers()) == 7 * 4 + 2 * 4 + 2
    assert {key: n for key, (_s, n) in stamps().items() if n} == counted()
    assert {kind for kind, owner in stamps() if owner == 0} >= {"catalog", "scenarios", "casts"}
    the_whole_read_agrees()


def test_a_load_that_skipped_the_triggers_is_seen_after_rebuild_stamps() -> None:
    entry = game(npcs=2)
    lore.lore_entry_create(actor=None, world=entry.world, content="Bells.", keys=["bell"])
    services.release_create(actor=None, name="before-the-load")
    working_version()  # read, and remembered by this process and the cache
    call_command("rebuild_stamps", "--check", stdout=StringIO())
    npc = NPC.objects.order_by("id").first()
    assert npc is not None
    # A restore with triggers off (pg_restore --disable-triggers does this).
    with connection.cursor() as cursor:
        cursor.execute("SET session_replication_role = replica")
        try:
            Segment.objects.filter(npc=npc).update(content="Loaded behind the stamps' back.")
            Segment.objects.bulk_create([Segment(scope=Scope.NPC, npc=npc, content="Loaded.")])
            LoreEntry.objects.filter(world=entry.world).update(active=False)
        finally:
            cursor.execute("SET session_replication_role = DEFAULT")
    stale = working_version()
    assert stale.manifest != content_version(working_content()).manifest  # what the load did
    with pytest.raises(CommandError, match=r"1 with a wrong count, 0 missing, 1 of objects"):
        call_command("rebuild_stamps", "--check", stdout=StringIO())
    out = StringIO()
    call_command("rebuild_stamps", stdout=out)
    assert "stamps written (before: 1 with a wrong count" in out.getvalue()
    call_command("rebuild_stamps", "--check", stdout=StringIO())
    the_whole_read_agrees()
    # The catalog, the scenarios and the casts have stamps again, and writes keep them.
    assert set(WorkingStamp.objects.filter(owner=0).values_list("kind", flat=True)) >= {
        "catalog",
        "scenarios",
        "casts",
        "core",
    }
    assert restamped(lambda: make_segment(scope="npc", ref=npc, content="After.")) == {
        ("npc", npc.pk)
    }
    the_whole_read_agrees()
