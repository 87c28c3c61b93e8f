"""Worlds, rulesets, NPCs and entries change through services too."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from promptadmin.models import EntryRuleset, World
from promptadmin.services import catalog
from promptadmin.services.errors import InUseError
from tests.factories import EntryFactory, RulesetFactory, WorldFactory, make_segment

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
