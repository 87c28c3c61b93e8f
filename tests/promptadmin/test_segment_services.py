"""Segment services: the one way segments change, with history and conflict detection."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from promptadmin.models import Segment
from promptadmin.services import segments
from promptadmin.services.errors import StaleRevisionError
from promptadmin.tokens import tokenizer
from tests.factories import NPCFactory, RulesetFactory, UserFactory, WorldFactory, make_segment

pytestmark = pytest.mark.django_db


def test_create_counts_tokens_with_the_configured_encoding() -> None:
    segment = make_segment(content="The sea takes what it is owed.")
    assert segment.token_count == tokenizer().count("The sea takes what it is owed.")
    assert segment.token_encoding == tokenizer().name


def test_create_refuses_a_deprecated_scope_and_lists_the_allowed_ones() -> None:
    with pytest.raises(ValidationError) as exc:
        make_segment(scope="player")
    message = exc.value.message_dict["scope"][0]
    assert "deprecated" in message
    assert "core, ruleset, world, entry, entry_start, npc" in message


def test_create_refuses_an_object_of_the_wrong_kind() -> None:
    with pytest.raises(ValidationError) as exc:
        make_segment(scope="world", ref=RulesetFactory())
    assert "must belong to a world, not a Ruleset" in exc.value.message_dict["ref"][0]


def test_create_refuses_a_tier_outside_npc_scope() -> None:
    with pytest.raises(ValidationError) as exc:
        make_segment(scope="world", ref=WorldFactory(), tier=1)
    assert "tier" in exc.value.message_dict


def test_create_records_who_created_the_segment() -> None:
    user = UserFactory()
    segment = make_segment(actor=user)
    record = segment.history.get()
    assert (record.history_type, record.history_user) == ("+", user)
    assert segment.created_by == user


def test_update_saves_only_changes_and_bumps_the_revision() -> None:
    segment = make_segment(content="One.")
    updated = segments.segment_update(actor=None, segment=segment, content="One. Two.")
    assert updated.revision == 2
    assert updated.token_count == tokenizer().count("One. Two.")
    assert [r.content for r in updated.history.order_by("history_id")] == ["One.", "One. Two."]


def test_an_update_that_changes_nothing_adds_no_revision() -> None:
    segment = make_segment(content="Same.")
    again = segments.segment_update(actor=None, segment=segment, content="Same.", active=True)
    assert again.revision == 1
    assert segment.history.count() == 1


def test_a_stale_update_is_refused_and_changes_nothing() -> None:
    segment = make_segment(content="First.")
    segments.segment_update(actor=None, segment=segment, content="Second.", expected_revision=1)
    with pytest.raises(StaleRevisionError) as exc:
        segments.segment_update(actor=None, segment=segment, content="Third.", expected_revision=1)
    assert (exc.value.expected, exc.value.current) == (1, 2)
    assert Segment.objects.get(pk=segment.pk).content == "Second."


def test_scope_is_fixed_after_creation() -> None:
    segment = make_segment(scope="world", ref=WorldFactory())
    with pytest.raises(ValidationError) as exc:
        segments.segment_update(actor=None, segment=segment, scope="core", ref=None)
    assert "scope" in exc.value.message_dict


def test_a_deprecated_segment_cannot_be_activated() -> None:
    legacy = segments.segment_import_legacy(actor=None, scope="rng", content="Rolls: {rolls}")
    with pytest.raises(ValidationError) as exc:
        segments.segment_update(actor=None, segment=legacy, active=True)
    assert "deprecated" in exc.value.message_dict["active"][0]
    assert not Segment.objects.get(pk=legacy.pk).active


def test_moving_a_segment_to_another_object_of_its_kind() -> None:
    first, second = NPCFactory(), NPCFactory()
    segment = make_segment(scope="npc", ref=first, tier=1)
    moved = segments.segment_update(actor=None, segment=segment, ref=second)
    assert (moved.npc, moved.revision) == (second, 2)


def test_restore_brings_back_an_old_revision_as_a_new_one() -> None:
    user = UserFactory()
    segment = make_segment(content="Original.", version="1.0.0")
    segments.segment_update(actor=None, segment=segment, content="Rewritten.", version="1.1.0")
    restored = segments.segment_restore(actor=user, segment=segment, revision=1)
    assert (restored.content, restored.version, restored.revision) == ("Original.", "1.0.0", 3)
    history = list(restored.history.order_by("history_id").values_list("revision", "content"))
    assert history == [(1, "Original."), (2, "Rewritten."), (3, "Original.")]
    assert restored.history.latest("history_id").history_user == user


def test_restore_of_an_unknown_revision_names_the_revision() -> None:
    segment = make_segment()
    with pytest.raises(ValidationError) as exc:
        segments.segment_restore(actor=None, segment=segment, revision=9)
    assert "revision" in exc.value.message_dict


def test_delete_keeps_the_history() -> None:
    segment = make_segment(content="Gone soon.")
    pk = segment.pk
    segments.segment_delete(actor=None, segment=segment)
    assert not Segment.objects.filter(pk=pk).exists()
    assert Segment.history.filter(id=pk).latest("history_id").history_type == "-"
