"""Releases as manifests of content-addressed bundles: stored once, loaded on demand, shared
by every release in the database and in each process's memory."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from assembler.request import AssembleParams
from promptadmin.content.assembly import AssemblyInputError, assemble_prompt
from promptadmin.content.models import NPC, Segment
from promptadmin.content.services import catalog, segments
from promptadmin.releases import bundles, services, serving
from promptadmin.releases.bundles import Part, content_version, manifest_hashes, release_content
from promptadmin.releases.models import Release, ReleaseBundle
from promptadmin.releases.snapshot import working_content
from promptadmin.releases.working import working_version

pytestmark = pytest.mark.django_db

NPCS = (("marta-vell", 2),)


def on_postgres() -> bool:
    return connection.vendor == "postgresql"


PARAMS = AssembleParams(entry="drowned-bell", first_turn=True, npcs=NPCS)


@pytest.fixture(autouse=True)
def demo() -> None:
    cache.clear()
    serving.forget()
    call_command("seed_demo")


def edit(import_key: str, content: str) -> None:
    segment = Segment.objects.get(import_key=import_key)
    segments.segment_update(actor=None, segment=segment, content=content)


def writes(captured: CaptureQueriesContext) -> list[str]:
    """The statements that wrote, each as its table (``INSERT INTO "t" ...`` -> ``t``)."""
    found = []
    for query in captured.captured_queries:
        sql = query["sql"].lstrip()
        if sql.split(" ", 1)[0].upper() in {"INSERT", "UPDATE", "DELETE", "COPY"}:
            found.append(sql.split('"')[1] if '"' in sql else sql)
    return found


def shards(release: Release) -> set[str]:
    """The index shards ``release`` is served from."""
    return {*release.index["entries"], *release.index["npcs"]}


def shard(release: Release, section: str, slug: str) -> str:
    """The index shard of ``release`` listing ``slug`` (of ``section``)."""
    listed = release.index[section]
    return listed[bundles.shard_of(slug, len(listed))]  # type: ignore[no-any-return]


@pytest.mark.postgres
def test_two_releases_around_a_one_segment_change_share_every_other_bundle() -> None:
    one = services.release_create(actor=None, name="r-one")
    stored = ReleaseBundle.objects.count()
    assert stored == len(manifest_hashes(one.manifest) | shards(one)) > 10
    edit("w-iron-tone", "Fog, always fog.")

    with CaptureQueriesContext(connection) as captured:
        two = services.release_create(actor=None, name="r-two")

    # One release row, and the bundles that changed: the world's whose segment changed,
    # and the index shards of the entries of that world (they name its new bundle).
    assert writes(captured) == ["releases_release", "releases_releasebundle"]
    gone = manifest_hashes(one.manifest) - manifest_hashes(two.manifest)
    new = manifest_hashes(two.manifest) - manifest_hashes(one.manifest)
    assert len(gone) == len(new) == 1
    assert two.manifest["worlds"]["iron-coast"] in new
    assert ReleaseBundle.objects.get(sha256=next(iter(new))).kind == "world"
    coast = [row["slug"] for row in two.catalog["entries"] if row["world"] == "iron-coast"]
    assert shards(two) - shards(one) == {shard(two, "entries", slug) for slug in coast}
    assert ReleaseBundle.objects.count() == stored + 1 + len(shards(two) - shards(one))
    # Every entry names its world's bundle: those of that world, the new one.
    for row in two.catalog["entries"]:
        assert two.manifest["entries"][row["slug"]][1] == two.manifest["worlds"][row["world"]]


@pytest.mark.postgres
def test_a_release_of_unchanged_content_writes_its_row_alone() -> None:
    one = services.release_create(actor=None, name="r-one")
    with CaptureQueriesContext(connection) as captured:
        two = services.release_create(actor=None, name="r-two")
    assert writes(captured) == ["releases_release"]
    assert two.index == one.index


def test_a_release_holds_exactly_what_the_working_copy_held() -> None:
    content = working_content()
    release = services.release_create(actor=None, name="r-one")
    serving.forget()
    held = release_content(Release.objects.get(pk=release.pk))
    assert held.segments == content.segments
    assert release.content_hash == working_version().content_hash
    assert release.content_hash == content_version(held).content_hash


def test_a_release_is_indexed_by_shards_of_its_manifest() -> None:
    release = services.release_create(actor=None, name="r-one")
    index = release.index
    assert (index["core"], index["lore"]) == (release.manifest["core"], {})
    for section in ("entries", "npcs"):
        listed = index[section]
        assert len(listed) == bundles.shard_count(len(release.manifest[section]))
        parts = bundles.stored_parts(listed, keep=False)
        items = [part.items for part in parts.values()]
        # Every object in exactly one shard, the one its slug falls in, as the manifest says.
        assert sum(len(found) for found in items) == len(release.manifest[section])
        for slug, named in release.manifest[section].items():
            assert parts[shard(release, section, slug)].items[slug] == named


def test_a_release_made_without_an_index_is_served_from_its_manifest() -> None:
    # As code older than the index, still running while a deploy rolls out, makes them.
    made = services.release_create(actor=None, name="r-one")
    fields = ("catalog", "manifest", "content_hash", "segment_count")
    Release.objects.create(name="r-old", **{name: getattr(made, name) for name in fields})
    serving.forget()
    prompts = [
        assemble_prompt(PARAMS, load=serving.resolve(name).load).prompt
        for name in ("r-one", "r-old")
    ]
    assert prompts[0] == prompts[1] == assemble_prompt(PARAMS).prompt


def test_a_release_served_in_a_fresh_process_loads_only_the_bundles_it_needs(
    django_assert_num_queries: Any,
) -> None:
    working = assemble_prompt(PARAMS).prompt
    release = services.release_create(actor=None, name="r-one")
    serving.forget()  # a fresh process
    serving.labels()  # the label map, from the shared cache (as every request reads it)

    # The release's index, the shards naming the entry's and the NPC's bundles, then
    # those bundles; never the manifest, whatever the size of the game.
    with django_assert_num_queries(3) as captured:
        served = serving.resolve("r-one")
        prompt = assemble_prompt(PARAMS, load=served.load).prompt
    assert not any("manifest" in query["sql"] for query in captured.captured_queries)

    assert prompt == working
    needed = {
        release.manifest["core"],
        *release.manifest["entries"]["drowned-bell"],
        release.manifest["npcs"]["marta-vell"],
        shard(release, "entries", "drowned-bell"),
        shard(release, "npcs", "marta-vell"),
    }
    assert len(bundles.memory) == len(needed) < len(manifest_hashes(release.manifest))
    assert all(sha in bundles.memory for sha in needed)
    with django_assert_num_queries(0):  # then everything is in memory
        assemble_prompt(PARAMS, load=serving.resolve("r-one").load)


def test_a_new_release_reuses_every_bundle_already_loaded(
    django_assert_num_queries: Any,
) -> None:
    one = services.release_create(actor=None, name="r-one")
    serving.forget()
    serving.labels()
    assemble_prompt(PARAMS, load=serving.resolve("r-one").load)
    loaded = len(bundles.memory)

    # An NPC this request does not name (nor its shard) changes: the new release reads its
    # index, and no shard or bundle.
    other = next(
        npc
        for npc in NPC.objects.order_by("slug")
        if shard(one, "npcs", npc.slug) != shard(one, "npcs", "marta-vell")
    )
    segment = Segment.objects.filter(scope="npc", npc=other).first()
    assert segment is not None
    segments.segment_update(actor=None, segment=segment, content="Sleeps.")
    services.release_create(actor=None, name="r-two")
    with django_assert_num_queries(1):
        assemble_prompt(PARAMS, load=serving.resolve("r-two").load)
    assert len(bundles.memory) == loaded

    # The entry's world changes: the next release reads that bundle, and the shard of
    # the entry (which names it).
    edit("w-iron-tone", "Fog, always fog.")
    services.release_create(actor=None, name="r-three")
    with django_assert_num_queries(3):  # the index, the entry's shard, the world's bundle
        prompt = assemble_prompt(PARAMS, load=serving.resolve("r-three").load).prompt
    assert "Fog, always fog." in prompt
    assert len(bundles.memory) == loaded + 2
    assert (
        "Fog, always fog." not in assemble_prompt(PARAMS, load=serving.resolve("r-two").load).prompt
    )


def test_an_npc_renamed_is_a_new_bundle_and_shows_in_the_new_release_only() -> None:
    services.release_create(actor=None, name="r-one")
    marta = NPC.objects.get(slug="marta-vell")
    catalog.catalog_update(actor=None, obj=marta, name="Marta Vell-Orr")
    two = services.release_create(actor=None, name="r-two")
    serving.forget()
    assert "Marta Vell-Orr" in assemble_prompt(PARAMS, load=serving.resolve("r-two").load).prompt
    assert (
        "Marta Vell-Orr" not in assemble_prompt(PARAMS, load=serving.resolve("r-one").load).prompt
    )
    assert (
        two.manifest["npcs"]["marta-vell"]
        != Release.objects.get(name="r-one").manifest["npcs"]["marta-vell"]
    )


def test_the_bundle_memory_keeps_the_most_recently_used_within_its_budget(
    settings: Any,
) -> None:
    settings.RELEASE_BUNDLE_MEMORY_MB = 1
    memory = bundles.BundleMemory()
    megabyte = 1024 * 1024

    def part(name: str, size: int) -> Part:
        return Part(sha256=name, kind="world", slug=name, rows=(), size=size)

    for name in ("a", "b", "c"):
        memory.put(part(name, megabyte // 3))
    memory.get_many(["a"])  # used: "b" is now the least recently used
    memory.put(part("d", megabyte // 3))
    assert [name in memory for name in "abcd"] == [True, False, True, True]
    assert memory.size <= megabyte
    memory.put(part("huge", 2 * megabyte))  # more than the whole budget: never kept
    assert "huge" not in memory and len(memory) == 3


def test_a_bundle_is_named_by_the_hash_of_its_canonical_text() -> None:
    release = services.release_create(actor=None, name="r-one")
    for stored in ReleaseBundle.objects.all():
        assert bundles.sha256(stored.content) == stored.sha256
        part = bundles.decode(stored.sha256, stored.content)
        head: dict[str, Any] = {"name": part.name} if stored.kind in ("ruleset", "npc") else {}
        if stored.kind == "entry":
            head = {"id": part.entry_id, "world": part.world, "rulesets": list(part.rulesets)}
        if stored.kind == "index":
            head = {"items": dict(part.items)}
        assert bundles.encode(stored.kind, part.slug, head, part.rows) == stored.content
    assert release.manifest["format"] == bundles.MANIFEST_FORMAT


def test_a_release_asked_for_what_it_lacks_says_so_and_remembers_nothing_of_it() -> None:
    services.release_create(actor=None, name="r-one")
    serving.forget()
    load = serving.resolve("r-one").load
    for attempt in range(3):
        bad = AssembleParams(entry=f"no-such-{attempt}", npcs=(("nobody", 0), ("marta-vell", 1)))
        with pytest.raises(AssemblyInputError) as caught:
            assemble_prompt(bad, load=load)
        assert caught.value.errors == {
            "entry": f"No entry with slug 'no-such-{attempt}'.",
            "npcs": "Unknown NPC slugs: nobody.",
        }
    # Made-up names fill no memory: it holds the one NPC's bundle and shards of the
    # release's index (no more than it has), nothing else.
    release = Release.objects.get(name="r-one")
    kept = [*shards(release), release.manifest["npcs"]["marta-vell"]]
    assert len(bundles.memory) == sum(sha in bundles.memory for sha in kept)
