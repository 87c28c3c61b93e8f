from __future__ import annotations

import pytest
from django.core.management import call_command

from promptadmin.content.models import NPC, Entry, EntryRuleset, Ruleset, Segment, World

pytestmark = pytest.mark.django_db

MODELS = (World, Ruleset, NPC, Entry, EntryRuleset, Segment)


def counts() -> dict[str, int]:
    return {m.__name__: m.objects.count() for m in MODELS} | {"history": Segment.history.count()}


def test_seed_demo_creates_a_small_realistic_game() -> None:
    call_command("seed_demo")
    assert (World.objects.count(), Ruleset.objects.count(), Entry.objects.count()) == (2, 3, 3)
    assert NPC.objects.count() == 6
    assert Segment.objects.filter(active=True).count() >= 35
    assert set(Segment.objects.values_list("scope", flat=True)) >= {
        "core",
        "ruleset",
        "world",
        "entry",
        "entry_start",
        "npc",
        "game_state",
        "player",
    }
    assert not Segment.objects.filter(
        scope__in=["game_state", "player", "rng", "input"], active=True
    )
    assert Segment.objects.filter(scope="npc", tier__gt=0).exists()
    assert all(s.token_count for s in Segment.objects.all())


def test_seed_demo_twice_changes_nothing() -> None:
    call_command("seed_demo")
    first = counts()
    call_command("seed_demo")
    assert counts() == first


def test_the_demo_keeps_its_internal_keys_out_of_the_metadata_authors_see() -> None:
    # What was seen (7): a demo_key (and the title) sat in the metadata shown to authors.
    call_command("seed_demo")
    seeded = list(Segment.objects.all())
    assert [(s.import_key, s.metadata) for s in seeded if s.metadata] == []
    assert all(s.import_key for s in seeded)  # the demo's key has a column of its own
    assert all(s.title for s in seeded if s.active)  # so has the title
