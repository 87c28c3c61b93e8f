"""Worlds, rulesets, NPCs and entries change through services too."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from promptadmin.content.models import EntryRuleset, World
from promptadmin.content.services import catalog
from promptadmin.core.errors import InUseError, StaleRevisionError
from tests.factories import EntryFactory, NPCFactory, RulesetFactory, WorldFactory, make_segment

pytestmark = pytest.mark.django_db


def test_create_validates_the_slug() -> None:
    with pytest.raises(ValidationError) as exc:
        catalog.catalog_create(actor=None, model=World, slug="Bad Slug", name="Bad")
    assert "slug" in exc.value.message_dict


def test_a_duplicate_slug_is_a_validation_error_naming_the_slug() -> None:
    WorldFactory(slug="iron-coast")
    with pytest.raises(ValidationError) as exc:
        catalog.catalog_create(actor=None, model=World, slug="iron-coast", name="Again")
    assert "slug" in exc.value.message_dict


def test_deleting_a_world_in_use_says_what_uses_it() -> None:
    world = WorldFactory(slug="iron-coast")
    make_segment(scope="world", ref=world)
    EntryFactory(world=world)
    with pytest.raises(InUseError, match="'iron-coast' is still used by 1 entries, 1 segments"):
        catalog.catalog_delete(actor=None, obj=world)
    assert World.objects.filter(pk=world.pk).exists()


def test_entry_rulesets_keep_their_order() -> None:
    a, b, c = RulesetFactory(), RulesetFactory(), RulesetFactory()
    entry = catalog.entry_create(
        actor=None, slug="e", name="E", world=WorldFactory(), rulesets=[c, a, b]
    )
    assert entry.ordered_rulesets() == [c, a, b]
    entry = catalog.entry_update(actor=None, entry=entry, rulesets=[b, c])
    assert entry.ordered_rulesets() == [b, c]


def test_a_ruleset_listed_twice_is_refused() -> None:
    a = RulesetFactory(slug="combat")
    with pytest.raises(ValidationError) as exc:
        catalog.entry_create(actor=None, slug="e", name="E", world=WorldFactory(), rulesets=[a, a])
    assert "combat" in exc.value.message_dict["rulesets"][0]


def test_deleting_an_entry_removes_its_ruleset_links() -> None:
    entry = catalog.entry_create(
        actor=None, slug="e", name="E", world=WorldFactory(), rulesets=[RulesetFactory()]
    )
    pk = entry.pk
    catalog.catalog_delete(actor=None, obj=entry)
    assert not EntryRuleset.objects.filter(entry_id=pk).exists()
    assert EntryRuleset.history.filter(entry_id=pk, history_type="-").count() == 1


# Revisions: every saved change is a new revision; a stale one is refused


def test_every_saved_change_bumps_the_revision_and_no_change_does_not() -> None:
    world = WorldFactory(slug="ash", name="Ash")
    assert world.revision == 1
    world = catalog.catalog_update(actor=None, obj=world, expected_revision=1, name="Cinder")
    assert world.revision == 2
    world = catalog.catalog_update(actor=None, obj=world, expected_revision=2, name="Cinder")
    assert world.revision == 2


def test_a_save_from_an_older_revision_is_refused_and_changes_nothing() -> None:
    world = WorldFactory(slug="ash", name="Ash")
    catalog.catalog_update(actor=None, obj=world, expected_revision=1, name="One")
    with pytest.raises(StaleRevisionError) as exc:
        catalog.catalog_update(actor=None, obj=world, expected_revision=1, name="Two")
    assert str(exc.value).startswith("World 'ash' was changed by someone else")
    with pytest.raises(StaleRevisionError):
        catalog.catalog_delete(actor=None, obj=world, expected_revision=1)
    world.refresh_from_db()
    assert (world.name, world.revision) == ("One", 2)


def test_an_entry_revision_covers_its_rulesets_and_cast() -> None:
    entry = EntryFactory()
    first, second = RulesetFactory(), RulesetFactory()
    npc = NPCFactory()
    entry = catalog.entry_update(actor=None, entry=entry, expected_revision=1, rulesets=[first])
    assert entry.revision == 2
    entry = catalog.entry_update(
        actor=None, entry=entry, expected_revision=2, cast=[catalog.CastMember(npc=npc, tier=2)]
    )
    assert entry.revision == 3
    assert [(link.npc, link.tier) for link in entry.ordered_cast()] == [(npc, 2)]
    # Reordering from an older copy is refused like any other stale change.
    with pytest.raises(StaleRevisionError):
        catalog.entry_update(actor=None, entry=entry, expected_revision=2, rulesets=[second])
    assert entry.ordered_rulesets() == [first]


def test_a_cast_names_each_npc_once() -> None:
    entry = EntryFactory()
    npc = NPCFactory(slug="marta")
    with pytest.raises(ValidationError) as exc:
        catalog.entry_update(
            actor=None,
            entry=entry,
            cast=[catalog.CastMember(npc=npc), catalog.CastMember(npc=npc, tier=1)],
        )
    assert exc.value.message_dict == {
        "cast": ["An NPC can appear once in a cast; repeated: marta."]
    }


@pytest.mark.parametrize("service", [catalog.catalog_update, catalog.entry_update])
def test_updates_take_typed_keyword_only_fields(service: Any) -> None:
    parameters = inspect.signature(service).parameters.values()
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters)
    assert all(p.annotation is not inspect.Parameter.empty for p in parameters)
    assert set(catalog.CATALOG_FIELDS) <= {p.name for p in parameters}


def test_updates_refuse_a_field_they_do_not_know() -> None:
    entry = EntryFactory()
    with pytest.raises(TypeError, match="unexpected keyword argument 'revision'"):
        catalog.catalog_update(actor=None, obj=entry.world, revision=7)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'revision'"):
        catalog.entry_update(actor=None, entry=entry, revision=7)  # type: ignore[call-arg]
    entry.refresh_from_db()
    assert entry.revision == 1 and entry.world.revision == 1
