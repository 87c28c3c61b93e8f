"""The incremental impact report equals the full recomputation, whatever changed.

The report compares manifests and assembles only the scenarios whose bundles differ; the
full recomputation diffs every segment and assembles every scenario on both sides. For
random changes to a small game, both must say the same: the same segments and objects,
the same row for every scenario assembled, and every scenario left out unchanged indeed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import pytest
from django.core.cache import cache
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from promptadmin.content.models import NPC, Entry, Ruleset, Scope, Segment, World
from promptadmin.content.services import catalog, segments
from promptadmin.content.services.catalog import CastMember
from promptadmin.lore import services as lore
from promptadmin.lore.models import LoreEntry
from promptadmin.releases import impact, selectors, services, serving, snapshot, working
from promptadmin.releases.bundles import Version, content_version, release_version
from promptadmin.releases.models import Release
from promptadmin.releases.scenarios import ScenarioSpec
from promptadmin.releases.snapshot import working_content
from promptadmin.releases.working import working_version
from tests.factories import make_segment

pytestmark = pytest.mark.django_db

TEXTS = ("Grey water.", "The bell rings twice.", "Fog. " * 60, "Marta keeps the keys.", "")


@pytest.fixture
def game() -> None:
    """Two worlds, three rulesets, three entries with casts, three NPCs, saved scenarios."""
    cache.clear()
    serving.forget()
    worlds = [catalog.catalog_create(actor=None, model=World, slug=s, name=s) for s in ("w1", "w2")]
    rulesets = [
        catalog.catalog_create(actor=None, model=Ruleset, slug=s, name=s.upper())
        for s in ("r1", "r2", "r3")
    ]
    npcs = [
        catalog.catalog_create(actor=None, model=NPC, slug=s, name=s.title())
        for s in ("n1", "n2", "n3")
    ]
    for index, slug in enumerate(("e1", "e2", "e3")):
        catalog.entry_create(
            actor=None,
            slug=slug,
            name=slug,
            world=worlds[index % 2],
            rulesets=rulesets[index:] or rulesets[:1],
            cast=[CastMember(npcs[index], tier=1), CastMember(npcs[(index + 1) % 3])],
        )
    make_segment(scope="core", content="You narrate.")
    for world in worlds:
        make_segment(scope="world", ref=world, content=f"The {world.slug} is cold.")
    for ruleset in rulesets:
        make_segment(scope="ruleset", ref=ruleset, content=f"Rule {ruleset.slug}.")
    for entry in Entry.objects.all():
        make_segment(scope="entry", ref=entry, content=f"Scene {entry.slug}.")
        make_segment(scope="entry_start", ref=entry, content=f"Opening of {entry.slug}.")
    for npc in npcs:
        for tier in range(3):
            make_segment(scope="npc", ref=npc, tier=tier, content=f"{npc.name} at {tier}.")
    services.scenario_create(
        actor=None,
        name="tight",
        entry="e1",
        token_budget=120,
        npcs=[{"npc": "n2", "tier": 2}, {"npc": "n3", "tier": 1}],
        expectations=[{"kind": "fits"}, {"kind": "contains", "text": "bell"}],
        state={"input": "The bell, in the fog."},
    )
    services.scenario_create(actor=None, name="e3 wide", entry="e3", first_turn=True)
    services.scenario_create(
        actor=None, name="e2 no lore", entry="e2", state={"input": "fog"}, lore={"enabled": False}
    )
    lore.lore_entry_create(
        actor=None, world=worlds[0], content="The bell is cracked.", keys=["bell"]
    )
    lore.lore_entry_create(actor=None, world=None, content="Fog hides the coast.", keys=["fog"])


class NothingLeft(Exception):
    """A change picks a row of a kind the changes before it left none of: it is skipped."""


def segment_at(index: int) -> Segment:
    rows = list(Segment.objects.filter(active=True).order_by("id"))
    if not rows:
        raise NothingLeft
    return rows[index % len(rows)]


def owner(kind: str, index: int) -> Any:
    model = {"world": World, "ruleset": Ruleset, "entry": Entry, "npc": NPC}[kind]
    rows = list(model.objects.order_by("id"))
    return rows[index % len(rows)]


indexes = st.integers(0, 40)
texts = st.sampled_from(TEXTS)
Change = Callable[[], object]

changes: st.SearchStrategy[Change] = st.one_of(
    st.builds(
        lambda i, text: (
            lambda: segments.segment_update(actor=None, segment=segment_at(i), content=text or "x")
        ),
        indexes,
        texts,
    ),
    st.builds(
        lambda i: (
            lambda: segments.segment_update(
                actor=None, segment=segment_at(i), metadata={"note": "changed"}
            )
        ),
        indexes,
    ),
    st.builds(
        lambda i, order: (
            lambda: segments.segment_update(actor=None, segment=segment_at(i), sort_order=order)
        ),
        indexes,
        st.integers(-2, 2),
    ),
    st.builds(
        lambda i, active: (
            lambda: segments.segment_update(actor=None, segment=segment_at(i), active=active)
        ),
        indexes,
        st.booleans(),
    ),
    st.builds(
        lambda i: lambda: segments.segment_delete(actor=None, segment=segment_at(i)), indexes
    ),
    st.builds(
        lambda scope, i, text: (
            lambda: segments.segment_create(
                actor=None,
                scope=scope,
                ref=None if scope == Scope.CORE else owner(_kind(scope), i),
                content=text or "y",
                tier=i % 3 if scope == Scope.NPC else 0,
            )
        ),
        st.sampled_from(
            [Scope.CORE, Scope.WORLD, Scope.RULESET, Scope.ENTRY, Scope.ENTRY_START, Scope.NPC]
        ),
        indexes,
        texts,
    ),
    st.builds(
        lambda kind, i, name: (
            lambda: catalog.catalog_update(actor=None, obj=owner(kind, i), name=name)
        ),
        st.sampled_from(["world", "ruleset", "npc"]),
        indexes,
        st.sampled_from(["Renamed", "Other name"]),
    ),
    st.builds(
        lambda kind, i: (
            lambda: catalog.catalog_update(
                actor=None, obj=owner(kind, i), description="Described anew."
            )
        ),
        st.sampled_from(["world", "ruleset", "npc"]),
        indexes,
    ),
    st.builds(
        lambda i, picks: (
            lambda: catalog.entry_update(
                actor=None,
                entry=owner("entry", i),
                rulesets=list(dict.fromkeys(owner("ruleset", pick) for pick in picks)),
            )
        ),
        indexes,
        st.lists(st.integers(0, 2), max_size=3),
    ),
    st.builds(
        lambda i, w: (
            lambda: catalog.entry_update(
                actor=None, entry=owner("entry", i), world=owner("world", w)
            )
        ),
        indexes,
        indexes,
    ),
    st.builds(
        lambda i, w: (
            lambda: segments.segment_update(
                actor=None,
                segment=Segment.objects.filter(scope=Scope.WORLD).order_by("id")[0],
                ref=owner("world", w),
            )
        ),
        indexes,
        indexes,
    ),
)


# Writes that pass no service (bulk loads, imports, a migration's or a script's SQL): the
# database stamps what they touch all the same.
REF = {Scope.WORLD: "world", Scope.RULESET: "ruleset", Scope.ENTRY: "entry", Scope.NPC: "npc"}


def bulk_segments(scope: str, owners: list[int], text: str) -> None:
    Segment.objects.bulk_create(
        [
            Segment(scope=scope, content=text or "bulk", **{REF[scope]: owner(REF[scope], i)})
            for i in owners
        ]
    )


def move_segment(index: int, to: int) -> None:
    """A segment moved to another object of its kind, by a queryset update."""
    segment = segment_at(index)
    if segment.scope in REF:
        kind = REF[segment.scope]
        Segment.objects.filter(pk=segment.pk).update(**{kind: owner(kind, to)})


changes = st.one_of(
    changes,
    st.builds(
        lambda scope, owners, text: lambda: bulk_segments(scope, owners, text),
        st.sampled_from(list(REF)),
        st.lists(indexes, min_size=1, max_size=3),
        texts,
    ),
    st.builds(lambda i, to: lambda: move_segment(i, to), indexes, indexes),
    st.builds(
        lambda picks, active: (
            lambda: Segment.objects.filter(pk__in=[segment_at(i).pk for i in picks]).update(
                active=active
            )
        ),
        st.lists(indexes, min_size=1, max_size=3),
        st.booleans(),
    ),
)


def lore_at(index: int) -> LoreEntry:
    rows = list(LoreEntry.objects.order_by("id"))
    if not rows:
        raise NothingLeft
    return rows[index % len(rows)]


def apply(changes: list[Change]) -> None:
    for change in changes:
        with contextlib.suppress(NothingLeft):
            change()


LORE_WORLDS = (None, "w1", "w2")

lore_changes: st.SearchStrategy[Change] = st.one_of(
    st.builds(
        lambda w, key, constant: (
            lambda: lore.lore_entry_create(
                actor=None,
                world=World.objects.filter(slug=w).first(),
                content=f"Lore of {key}.",
                keys=[key],
                constant=constant,
            )
        ),
        st.sampled_from(LORE_WORLDS),
        st.sampled_from(["bell", "fog", "keys"]),
        st.booleans(),
    ),
    st.builds(
        lambda i, text: (
            lambda: lore.lore_entry_update(actor=None, entry=lore_at(i), content=text or "z")
        ),
        indexes,
        texts,
    ),
    st.builds(
        lambda i, active: (
            lambda: lore.lore_entry_update(actor=None, entry=lore_at(i), active=active)
        ),
        indexes,
        st.booleans(),
    ),
    st.builds(
        lambda i, w: (
            lambda: lore.lore_entry_update(
                actor=None, entry=lore_at(i), world=World.objects.filter(slug=w).first()
            )
        ),
        indexes,
        st.sampled_from(LORE_WORLDS),
    ),
    st.builds(lambda i: lambda: lore.lore_entry_delete(actor=None, entry=lore_at(i)), indexes),
    st.builds(
        lambda worlds, key: (
            lambda: LoreEntry.objects.bulk_create(
                [
                    LoreEntry(
                        world=World.objects.filter(slug=w).first(),
                        content=f"Bulk lore of {key}.",
                        keys=[key],
                    )
                    for w in worlds
                ]
            )
        ),
        st.lists(st.sampled_from(LORE_WORLDS), min_size=1, max_size=3),
        st.sampled_from(["bell", "fog"]),
    ),
    st.builds(
        lambda i, w: (
            lambda: LoreEntry.objects.filter(pk=lore_at(i).pk).update(
                world=World.objects.filter(slug=w).first()
            )
        ),
        indexes,
        st.sampled_from(LORE_WORLDS),
    ),
)
changes = st.one_of(changes, lore_changes)


def _kind(scope: str) -> str:
    return "entry" if scope == Scope.ENTRY_START else scope


def full_report(before: Version, after: Version) -> dict[str, Any]:
    """Everything compared and assembled: every segment, every scenario on both sides."""
    specs = selectors._scenarios(before, after)
    return {
        "segments": impact.segment_diff(before.content().segments, after.content().segments),
        "objects": impact.object_changes(before, after),
        "lore": impact.lore_diff(
            impact.lore_by_id(before.content().lore), impact.lore_by_id(after.content().lore)
        ),
        "scenarios": [
            impact.scenario_changes(
                spec, impact.evaluate(spec, before), impact.evaluate(spec, after)
            )
            for spec in specs
        ],
    }


def assert_same(before: Version, after: Version) -> int:
    """The incremental report is the full one; how many scenarios it assembled. So is the
    report made from what earlier reports kept (runs and rows, in the cache), and the one
    made again from the rows this one kept."""
    specs = selectors._scenarios(before, after)
    report = impact.compare(before, after, specs)
    assert impact.compare(before, after, specs, memo=cache) == report
    assert impact.compare(before, after, specs, memo=cache) == report
    full = full_report(before, after)
    assert report["segments"] == full["segments"]
    assert report["objects"] == full["objects"]
    assert report["lore"] == full["lore"]
    for row, expected in zip(report["scenarios"], full["scenarios"], strict=True):
        if row["assembled"]:
            assert row == expected
        else:
            # Left out as unchanged: assembling it shows the same prompt on both sides.
            assert not expected["changed"], expected
            assert expected["tokens_before"] == expected["tokens_after"]
            assert expected["error_before"] == expected["error_after"]
            assert row["scenario"] == expected["scenario"]
    return sum(row["assembled"] for row in report["scenarios"])


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(before=st.lists(changes, max_size=2), after=st.lists(changes, min_size=1, max_size=3))
def test_the_incremental_report_equals_the_full_recomputation(
    game: None, before: list[Change], after: list[Change]
) -> None:
    with transaction.atomic():
        apply(before)
        one = services.release_create(actor=None, name="r-one")
        apply(after)
        two = services.release_create(actor=None, name="r-two")

        # The working copy read in part (what changed since it was last read) is the
        # working copy read whole.
        whole, working = content_version(working_content()), working_version()
        assert (working.manifest, working.content_hash) == (whole.manifest, whole.content_hash)
        assert working.content().segments == whole.content().segments
        # A release against the working copy, and two releases (both read from the store).
        assert_same(release_version(one), working)
        assert_same(release_version(one), release_version(Release.objects.get(pk=two.pk)))
        assert_same(release_version(two), release_version(one))
        transaction.set_rollback(True)


def test_a_one_segment_change_assembles_the_scenarios_of_its_entries_only(game: None) -> None:
    one = services.release_create(actor=None, name="r-one")
    # w2 is e2's world alone: its two implicit scenarios and "e2 no lore" change, and
    # nothing else.
    world = Segment.objects.get(scope=Scope.WORLD, world__slug="w2")
    segments.segment_update(actor=None, segment=world, content="The w2 burns.")
    assembled = assert_same(release_version(one), content_version(working_content()))
    assert assembled == 3
    # An NPC's change: the scenarios naming it (saved, or by an entry's cast).
    two = services.release_create(actor=None, name="r-two")
    npc = Segment.objects.filter(scope=Scope.NPC, npc__slug="n3").first()
    assert npc is not None
    segments.segment_update(actor=None, segment=npc, content="N3 has left.")
    assembled = assert_same(release_version(two), content_version(working_content()))
    assert assembled == 1 + 2 + 2  # "tight", then e2's and e3's turns (n3 is in both casts)
    # A description is no part of a prompt: nothing to assemble, one object changed.
    three = services.release_create(actor=None, name="r-three")
    catalog.catalog_update(actor=None, obj=NPC.objects.get(slug="n1"), description="Tall.")
    assert assert_same(release_version(three), content_version(working_content())) == 0


def test_a_lore_change_assembles_the_scenarios_of_its_world_with_lore_on_only(game: None) -> None:
    one = services.release_create(actor=None, name="r-one")
    services.scenario_create(actor=None, name="bell", entry="e1", state={"input": "A bell."})
    # A new entry of w1 that "bell" (e1, in w1; its input names the bell) triggers.
    new = lore.lore_entry_create(
        actor=None, world=World.objects.get(slug="w1"), content="Bells drown.", keys=["bell"]
    )
    before, after = release_version(one), content_version(working_content())
    assembled = assert_same(before, after)
    report = impact.compare(before, after, selectors._scenarios(before, after))
    assert [row["id"] for row in report["lore"]["added"]] == [new.pk]
    assert report["lore"]["added"][0]["world"] == "w1"
    rows = {row["scenario"]: row for row in report["scenarios"]}
    assert rows["bell"]["changed"]
    assert rows["bell"]["tokens_after"] > rows["bell"]["tokens_before"]
    # e1 and e3 are in w1: "bell", "tight", "e3 wide" and their four implicit scenarios;
    # not e2's.
    assert assembled == 3 + 4
    assert not rows["e2 no lore"]["assembled"] and not rows["e2: later turn"]["assembled"]
    # Every world's lore reaches every scenario but the one with lore off.
    two = services.release_create(actor=None, name="r-two")
    lore.lore_entry_update(actor=None, entry=LoreEntry.objects.get(world=None), content="Mist.")
    report = impact.compare(
        release_version(two),
        content_version(working_content()),
        selectors._scenarios(release_version(two), content_version(working_content())),
    )
    assert [row["fields"] for row in report["lore"]["changed"]] == [["content", "token_count"]]
    assembled_now = {row["scenario"] for row in report["scenarios"] if row["assembled"]}
    assert "e2 no lore" not in assembled_now
    assert len(assembled_now) == 3 + 6


@pytest.mark.postgres
def test_the_working_copy_is_read_in_proportion_to_what_changed(
    game: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    services.release_create(actor=None, name="r-one")  # every bundle stored and remembered
    world = Segment.objects.get(scope=Scope.WORLD, world__slug="w2")
    segments.segment_update(actor=None, segment=world, content="The w2 burns.")
    read: list[str] = []
    segments_of = snapshot.segments_of

    def recording(catalog: Any, where: Any) -> Any:
        found = segments_of(catalog, where)
        read.extend(row.owner for row in found)
        return found

    monkeypatch.setattr(snapshot, "segments_of", recording)
    version = working_version()

    assert read == ["w2"]  # the segments of the one object that changed, alone
    assert version.manifest == content_version(working_content()).manifest
    # Its bundle was never released: the version holds it, and the cache keeps its text;
    # should the cache lose that, the object is read again, not served stale or missing.
    new = version.manifest["worlds"]["w2"]
    assert set(version.held) == {new}
    cache.delete(working._text_key(new))
    read.clear()
    again = working_version()
    assert read == ["w2"] and again.manifest == version.manifest
    assert again.parts([new])[new].rows[0].content == "The w2 burns."


def assembled(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """(scenario, content hash of the version) of every run assembled from here on."""
    runs: list[tuple[str, str]] = []
    evaluate = impact.evaluate

    def spy(spec: ScenarioSpec, version: Version) -> impact.ScenarioRun:
        runs.append((spec.name, version.content_hash))
        return evaluate(spec, version)

    monkeypatch.setattr(impact, "evaluate", spy)
    return runs


def test_a_report_that_follows_another_assembles_only_what_none_assembled(
    game: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What was seen (issue 22, item 4): every report assembled again, on both sides, every
    scenario whose bundles differ: at 100,000 segments a change to the core took 45 s, and
    so did the report after each further edit, and the next change's report."""
    services.release_create(actor=None, name="r-one", labels=["production"], confirm=True)
    core = Segment.objects.get(scope=Scope.CORE)
    segments.segment_update(actor=None, segment=core, content="You narrate, tersely.")
    runs = assembled(monkeypatch)
    names = [
        row["scenario"] for row in selectors.compare_report("production", "working")["scenarios"]
    ]
    assert len(runs) == 2 * len(names) == 18  # a change to the core: every scenario, both sides

    # Another edit, to w2 (e2's world): only e2's scenarios, on the new side alone.
    runs.clear()
    world = Segment.objects.get(scope=Scope.WORLD, world__slug="w2")
    segments.segment_update(actor=None, segment=world, content="The w2 burns.")
    report = selectors.compare_report("production", "working")
    working = report["after"]["content_hash"]
    assert sorted(runs) == [
        (name, working) for name in ("e2 no lore", "e2: first turn", "e2: later turn")
    ]

    # Publishing it checks the expectations of runs the report made: none is assembled.
    runs.clear()
    services.release_create(actor=None, name="r-two", labels=["production"], confirm=True)
    assert runs == []

    # The next change to the core: the release published is the "before" its reports made.
    core.refresh_from_db()
    segments.segment_update(actor=None, segment=core, content="You narrate, grimly.")
    report = selectors.compare_report("production", "working")
    now = report["after"]["content_hash"]
    assert sorted(runs) == sorted((name, now) for name in names)


def test_a_row_keeps_of_the_outcomes_only_the_cuts_that_appear_or_disappear(game: None) -> None:
    """What was seen (issue 22, item 4): a report of a change to the core at 100,000
    segments was 136 MB, mostly every scenario's whole outcome, twice (before and after),
    when the report shows the cuts that appear and disappear."""
    one = services.release_create(actor=None, name="r-one")
    scene = Segment.objects.get(scope=Scope.ENTRY, entry__slug="e1")
    segments.segment_update(actor=None, segment=scene, content="Scene e1, at length. " * 30)
    before, after = release_version(one), working_version()
    spec = next(spec for spec in selectors._scenarios(before, after) if spec.name == "tight")
    report = impact.compare(before, after, [spec])
    [row] = report["scenarios"]

    lost_before, lost_after = impact.evaluate(spec, before), impact.evaluate(spec, after)
    assert set(lost_before.cuts) & set(lost_after.cuts)  # cuts on both sides, in neither list
    assert row["cuts_added"] and len(row["cuts_added"]) < len(lost_after.cuts)
    said = {
        side: [change["explanation"] for kind in row[side] for change in row[side][kind]]
        for side in ("outcome_before", "outcome_after")
    }
    assert said == {"outcome_before": row["cuts_removed"], "outcome_after": row["cuts_added"]}

    # Read back, a run keeps the keys of its cuts alone: where cuts appear or disappear,
    # it is assembled again to say them, and the row is the one made from scratch.
    impact.compare(before, after, [spec], memo=cache)
    back = impact.compare(after, before, [spec], memo=cache)["scenarios"]
    assert back == impact.compare(after, before, [spec])["scenarios"]
    assert back[0]["cuts_removed"] == row["cuts_added"]


def test_the_scenarios_of_one_entry_and_of_one_world_are_assembled_together(
    game: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What was seen (issue 22, item 4): assembled in the report's order (saved scenarios
    first), a comparison at 100,000 segments priced the same content again once the
    bounded caches had let it go: 8,881 segment layers priced for 5,291 distinct ones,
    6,646 bundles read for 3,296."""
    one = services.release_create(actor=None, name="r-one")
    core = Segment.objects.get(scope=Scope.CORE)
    segments.segment_update(actor=None, segment=core, content="You narrate, tersely.")
    runs = assembled(monkeypatch)
    before, after = release_version(one), working_version()
    specs = {spec.name: spec for spec in selectors._scenarios(before, after)}
    impact.compare(before, after, list(specs.values()))

    order = [specs[name].entry for name, _version in runs[::2]]
    assert order == sorted(order, key=lambda entry: (after.entry_world(entry), entry))
    assert [after.entry_world(entry) for entry in dict.fromkeys(order)] == ["w1", "w1", "w2"]
