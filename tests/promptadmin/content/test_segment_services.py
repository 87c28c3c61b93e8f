"""Segment services: the one way segments change, with history and conflict detection."""

from __future__ import annotations

import inspect

import pytest
from django.core.exceptions import ValidationError

from promptadmin.content.models import Segment
from promptadmin.content.services import segments
from promptadmin.core.errors import StaleRevisionError
from promptadmin.core.tokens import tokenizer
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
    user = UserFactory(role="author")
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
    user = UserFactory(role="author")
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


def test_segment_update_takes_typed_keyword_only_fields() -> None:
    parameters = inspect.signature(segments.segment_update).parameters.values()
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters)
    assert all(p.annotation is not inspect.Parameter.empty for p in parameters)
    editable = {p.name for p in parameters} - {"actor", "segment", "expected_revision", "scope"}
    assert editable == {"ref", *segments.EDITABLE_FIELDS}


def test_segment_update_refuses_a_field_it_does_not_know() -> None:
    segment = make_segment(scope="core")
    with pytest.raises(TypeError, match="unexpected keyword argument 'revision'"):
        segments.segment_update(actor=None, segment=segment, revision=7)  # type: ignore[call-arg]


@pytest.mark.parametrize("scope", ["game_state", "player", "rng", "input"])
def test_deprecated_segments_are_read_only_for_every_service(scope: str) -> None:
    legacy = segments.segment_import_legacy(actor=None, scope=scope, content="Old.")
    for change in (
        lambda: segments.segment_update(actor=None, segment=legacy, content="New."),
        lambda: segments.segment_update(actor=None, segment=legacy, ref=None),
        lambda: segments.segment_restore(actor=None, segment=legacy, revision=1),
        lambda: segments.segment_delete(actor=None, segment=legacy),
    ):
        with pytest.raises(ValidationError) as exc:
            change()
        assert exc.value.error_dict["scope"][0].code == "deprecated_read_only"
    kept = Segment.objects.get(pk=legacy.pk)
    assert (kept.content, kept.revision) == ("Old.", 1)


@pytest.mark.parametrize("content", ["", "   ", "\n\t \n"])
def test_active_segments_need_text(content: str) -> None:
    # What was seen (7): whitespace-only content was accepted and assembled.
    with pytest.raises(ValidationError) as exc:
        segments.segment_create(actor=None, scope="core", content=content)
    assert exc.value.message_dict == {
        "content": ["An active segment needs text: write some, or make it inactive."]
    }
    segment = make_segment(content="Words.")
    with pytest.raises(ValidationError):
        segments.segment_update(actor=None, segment=segment, content=content)
    segment.refresh_from_db()
    assert (segment.content, segment.revision) == ("Words.", 1)


def test_an_inactive_segment_may_be_empty_while_it_is_drafted() -> None:
    segment = segments.segment_create(actor=None, scope="core", content=" ", active=False)
    with pytest.raises(ValidationError):
        segments.segment_update(actor=None, segment=segment, active=True)


def test_the_title_is_a_field_of_its_own_kept_in_history() -> None:
    segment = segments.segment_create(actor=None, scope="core", content="Text.", title="Old wars")
    segment = segments.segment_update(actor=None, segment=segment, title="Older wars")
    assert (segment.title, segment.metadata, segment.revision) == ("Older wars", {}, 2)
    restored = segments.segment_restore(actor=None, segment=segment, revision=1)
    assert restored.title == "Old wars"
