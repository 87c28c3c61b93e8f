"""Loading stored content for assembly: slugs resolved, constant queries, cache invalidation."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.core.management import call_command

from assembler.request import AssembleParams
from promptadmin.content.assembly import (
    AssemblyInputError,
    assemble_prompt,
    build_request,
    preview_prompt,
)
from promptadmin.content.models import Entry, Segment
from promptadmin.content.services import segments
from tests.factories import EntryFactory, NPCFactory, make_segment

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def demo() -> None:
    cache.clear()
    call_command("seed_demo")


NPCS = (("marta-vell", 2), ("old-cobb", 1), ("sister-anwe", 0))


def test_assembly_uses_the_entrys_content_in_order() -> None:
    result = assemble_prompt(AssembleParams(entry="drowned-bell", first_turn=True, npcs=NPCS))
    prompt = result.prompt
    assert prompt.index("narrator of an interactive story") < prompt.index("Alternate tension")
    # Rulesets in the entry's order: narrative-core before mystery.
    assert prompt.index("Alternate tension") < prompt.index("Every conclusion the player")
    assert "Open on the pier at dusk" in prompt
    # Other entries' and worlds' content stays out.
    assert "A foundry surfaced" not in prompt
    assert "Verdant Reach" not in prompt
    emitted = result.meta.segment_ids_by_scope
    world_ids = set(Segment.objects.filter(world__slug="iron-coast").values_list("id", flat=True))
    assert set(emitted["world"]) == world_ids


def test_unknown_slugs_are_named() -> None:
    with pytest.raises(AssemblyInputError) as exc:
        assemble_prompt(AssembleParams(entry="nowhere", npcs=(("ghost", 0),)))
    assert set(exc.value.errors) == {"entry", "npcs"}
    assert "ghost" in exc.value.errors["npcs"]


def test_a_world_that_is_not_the_entrys_is_refused() -> None:
    with pytest.raises(AssemblyInputError) as exc:
        assemble_prompt(AssembleParams(entry="drowned-bell", world="verdant-reach"))
    assert "iron-coast" in exc.value.errors["world"]


def test_queries_do_not_grow_with_content(django_assert_max_num_queries) -> None:  # type: ignore[no-untyped-def]
    entry = Entry.objects.get(slug="drowned-bell")
    extra_npcs = [NPCFactory() for _ in range(5)]
    for npc in extra_npcs:
        for tier in range(3):
            make_segment(scope="npc", ref=npc, tier=tier)
    for i in range(20):
        make_segment(scope="entry", ref=entry, content=f"Extra entry text {i}.")
    cache.clear()
    npcs = [*NPCS, *((npc.slug, 2) for npc in extra_npcs)]
    with django_assert_max_num_queries(4):
        assemble_prompt(AssembleParams(entry="drowned-bell", npcs=npcs))


def test_a_cached_assembly_needs_no_query(django_assert_num_queries) -> None:  # type: ignore[no-untyped-def]
    params = AssembleParams(entry="drowned-bell", npcs=NPCS)
    first = assemble_prompt(params)
    with django_assert_num_queries(0):
        again = assemble_prompt(params)
    assert again.prompt == first.prompt


def test_a_content_change_is_seen_by_the_next_assembly(django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    params = AssembleParams(entry="drowned-bell", npcs=NPCS)
    assemble_prompt(params)
    segment = Segment.objects.get(import_key="w-iron-tone")
    with django_capture_on_commit_callbacks(execute=True):
        segments.segment_update(actor=None, segment=segment, content="Fog, always fog.")
    assert "Fog, always fog." in assemble_prompt(params).prompt


def test_preview_lists_inactive_segments_without_assembling_them() -> None:
    segment = Segment.objects.get(import_key="w-iron-magic")
    segments.segment_update(actor=None, segment=segment, active=False)
    params = AssembleParams(entry="drowned-bell", npcs=NPCS)
    preview = preview_prompt(params, include_inactive=True)
    fates = {row["id"]: row["fate"] for row in preview.segments}
    assert fates[segment.pk] == "inactive"
    assert "Tide-iron" not in preview.result.prompt
    assert assemble_prompt(params).prompt == preview.result.prompt


def test_an_unknown_entry_does_not_make_known_npcs_unknown() -> None:
    with pytest.raises(AssemblyInputError) as exc:
        assemble_prompt(AssembleParams(entry="nowhere", npcs=(("marta-vell", 0), ("ghost", 0))))
    assert set(exc.value.errors) == {"entry", "npcs"}
    assert "marta-vell" not in exc.value.errors["npcs"]


def test_a_cache_that_lost_its_generation_never_serves_remembered_bundles() -> None:
    params = AssembleParams(entry="drowned-bell", npcs=NPCS)
    assemble_prompt(params)  # remembered in process memory too
    segment = Segment.objects.get(import_key="w-iron-tone")
    # A change made while the shared cache is unreachable cannot invalidate anything...
    segments.segment_update(actor=None, segment=segment, content="Salt on every sill.")
    # ...but a cache that comes back empty (a Redis restart) starts a new generation.
    cache.clear()
    assert "Salt on every sill." in assemble_prompt(params).prompt


def test_a_value_only_the_assembler_checks_is_named_by_its_field() -> None:
    entry = EntryFactory(slug="bell")
    make_segment(scope="entry", ref=entry)
    with pytest.raises(AssemblyInputError) as raised:
        build_request(AssembleParams(entry="bell", token_budget=-1))
    assert raised.value.errors == {"token_budget": "token_budget must be >= 0, got -1"}
    with pytest.raises(AssemblyInputError) as raised:
        build_request(AssembleParams(entry="bell", floors={"input": float("nan")}))
    assert list(raised.value.errors) == ["policy.floors.input"]
