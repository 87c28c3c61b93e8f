"""The database itself refuses content that could not be assembled."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import ProtectedError

from promptadmin.content.models import EntryRuleset, Segment
from tests.factories import EntryFactory, NPCFactory, RulesetFactory, WorldFactory, make_segment

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def insert(**fields: object) -> Segment:
    """Write a row straight to the database, bypassing every Python-side check."""
    fields.setdefault("content", "x")
    with transaction.atomic():
        return Segment.objects.create(**fields)


def test_an_active_segment_of_a_deprecated_scope_is_refused() -> None:
    with pytest.raises(IntegrityError, match="segment_scope_allowed"):
        insert(scope="player", active=True)


def test_an_inactive_segment_of_a_deprecated_scope_is_kept() -> None:
    assert insert(scope="player", active=False).pk


def test_an_unknown_scope_is_refused() -> None:
    # It breaks two rules at once; PostgreSQL names whichever it checks first.
    with pytest.raises(IntegrityError, match=r"segment_(scope_allowed|ref_matches_scope)"):
        insert(scope="lore", active=False)


def test_a_world_segment_pointing_at_a_ruleset_is_refused() -> None:
    with pytest.raises(IntegrityError, match="segment_ref_matches_scope"):
        insert(scope="world", ruleset=RulesetFactory())


def test_a_world_segment_pointing_at_a_world_and_a_ruleset_is_refused() -> None:
    with pytest.raises(IntegrityError, match="segment_ref_matches_scope"):
        insert(scope="world", world=WorldFactory(), ruleset=RulesetFactory())


def test_a_core_segment_with_an_object_is_refused() -> None:
    with pytest.raises(IntegrityError, match="segment_ref_matches_scope"):
        insert(scope="core", world=WorldFactory())


@pytest.mark.parametrize("scope", ["ruleset", "world", "entry", "entry_start", "npc"])
def test_a_scoped_segment_without_its_object_is_refused(scope: str) -> None:
    with pytest.raises(IntegrityError, match="segment_ref_matches_scope"):
        insert(scope=scope)


def test_entry_start_segments_point_at_an_entry() -> None:
    assert insert(scope="entry_start", entry=EntryFactory()).pk


def test_a_negative_tier_is_refused() -> None:
    with pytest.raises(IntegrityError):
        insert(scope="npc", npc=NPCFactory(), tier=-1)


def test_a_tier_on_a_non_npc_segment_is_refused() -> None:
    with pytest.raises(IntegrityError, match="segment_tier_npc_only"):
        insert(scope="world", world=WorldFactory(), tier=2)


def test_a_duplicate_ruleset_position_is_refused() -> None:
    entry = EntryFactory()
    EntryRuleset.objects.create(entry=entry, ruleset=RulesetFactory(), position=1)
    with pytest.raises(IntegrityError, match="entryruleset_unique_position"), transaction.atomic():
        EntryRuleset.objects.create(entry=entry, ruleset=RulesetFactory(), position=1)


def test_a_ruleset_appears_at_most_once_per_entry() -> None:
    entry, ruleset = EntryFactory(), RulesetFactory()
    EntryRuleset.objects.create(entry=entry, ruleset=ruleset, position=1)
    with pytest.raises(IntegrityError, match="entryruleset_unique_ruleset"), transaction.atomic():
        EntryRuleset.objects.create(entry=entry, ruleset=ruleset, position=2)


def test_deleting_a_world_that_segments_point_at_is_refused() -> None:
    world = WorldFactory()
    make_segment(scope="world", ref=world)
    with pytest.raises(ProtectedError):
        world.delete()


def test_deleting_a_world_with_entries_is_refused() -> None:
    entry = EntryFactory()
    with pytest.raises(ProtectedError):
        entry.world.delete()


def test_an_uppercase_slug_is_refused_by_the_database() -> None:
    with pytest.raises(IntegrityError, match="world_slug_lowercase"), transaction.atomic():
        WorldFactory(slug="Iron-Coast")


def test_slugs_are_unique() -> None:
    WorldFactory(slug="iron-coast")
    with pytest.raises(IntegrityError), transaction.atomic():
        WorldFactory(slug="iron-coast")


def test_validation_names_the_field_for_a_bad_slug() -> None:
    world = WorldFactory.build(slug="Iron Coast!")
    with pytest.raises(ValidationError) as exc:
        world.full_clean()
    assert "slug" in exc.value.message_dict


def test_validation_names_the_ref_field_for_a_world_segment_without_a_world() -> None:
    segment = Segment(scope="world", content="x", ruleset=RulesetFactory())
    with pytest.raises(ValidationError) as exc:
        segment.full_clean()
    assert set(exc.value.message_dict) >= {"world", "ruleset"}


def test_validation_names_active_for_a_deprecated_scope() -> None:
    with pytest.raises(ValidationError) as exc:
        Segment(scope="rng", content="x", active=True).full_clean()
    assert "active" in exc.value.message_dict


def test_active_segments_of_a_scope_for_an_object_use_an_index() -> None:
    from django.db import connection

    # Several worlds' segments, analyzed, so that the planner weighs the indexes as in a
    # game (on a near-empty table any index will do).
    worlds = [WorldFactory() for _ in range(12)]
    for each in worlds:
        for _ in range(15):
            make_segment(scope="world", ref=each)
    world = worlds[0]
    query = Segment.objects.filter(active=True, world=world, scope="world").order_by(
        "sort_order", "id"
    )
    # Without a table scan or a sort to fall back on (a few rows are cheap to sort), the
    # index that holds one world's rows in assembly order answers, not the scope's.
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE promptadmin_segment")
        cursor.execute("SET enable_seqscan = off")
        cursor.execute("SET enable_sort = off")
        plan = query.explain()
        cursor.execute("RESET enable_seqscan")
        cursor.execute("RESET enable_sort")
    assert "segment_active_world" in plan


def test_the_models_scopes_are_the_assemblers() -> None:
    import assembler
    from promptadmin.content.models import DEPRECATED_SCOPES, SEGMENT_SCOPES

    assert tuple(SEGMENT_SCOPES) == assembler.SEGMENT_SCOPES
    assert tuple(DEPRECATED_SCOPES) == assembler.DYNAMIC_SCOPES
