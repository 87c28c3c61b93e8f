"""Serializers of the assembly endpoints (/assemble, /preview) and of the caller (/me).

The input serializers describe the requests for the OpenAPI schema and nothing more:
requests are read by the one parser, :func:`assembler.request.parse_assemble_params`,
whose fields, limits and choices they are built from.
"""

from __future__ import annotations

from typing import Any, get_args

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

import assembler
from assembler.findings import LintLevel
from assembler.history import HistoryMode
from assembler.lore import DEFAULT_LORE_RECURSION, DEFAULT_LORE_SCAN_DEPTH
from assembler.request import (
    DEFAULT_BLOCK_FORMAT,
    DEFAULT_FLOOR,
    DEFAULT_LORE_SHARE,
    MAX_LORE_RECURSION,
    MAX_LORE_SCAN_DEPTH,
    MAX_NPCS,
    MAX_SLUG,
    MAX_TEXT,
    MAX_TIER,
    RELEASE_PATTERN,
)
from assembler.result import CHANGE_KINDS, OUTCOME_REASONS, Fate, LayerStatus, NpcStatus, StepAction
from promptadmin.api import fields as f
from promptadmin.api.serializers.common import StrictSerializer, slug_field
from promptadmin.api.serializers.lore import LoreReportSerializer
from promptadmin.conversations.models import KEY_MAX_LENGTH, key_validator


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string", "maxLength": MAX_SLUG, "description": "NPC slug, at tier 0"},
            {
                "type": "object",
                "properties": {
                    "npc": {"type": "string", "maxLength": MAX_SLUG, "description": "NPC slug"},
                    "tier": {"type": "integer", "minimum": 0, "maximum": MAX_TIER, "default": 0},
                },
                "required": ["npc"],
                "additionalProperties": False,
            },
        ]
    }
)
class NpcRequestField(serializers.Field):
    """An NPC slug (tier 0) or ``{"npc": slug, "tier": n}`` (schema only)."""


def npcs_field(**kwargs: Any) -> serializers.ListField:
    """A request's NPCs (at most ``MAX_NPCS``), as /assemble and scenarios take them."""
    return serializers.ListField(child=NpcRequestField(), max_length=MAX_NPCS, **kwargs)


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string", "maxLength": MAX_TEXT, "nullable": True},
            {"type": "object", "additionalProperties": True},
        ],
        "description": "Text, or a JSON object rendered as `key: value` lines, or null.",
    }
)
class StateValueField(serializers.Field):
    """A dynamic layer's value (schema only)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(allow_null=True, required=False, **kwargs)


class StateSerializer(StrictSerializer):
    """The dynamic layers, supplied with each request; a missing layer is empty."""

    def get_fields(self) -> dict[str, serializers.Field]:
        # One per dynamic layer of the assembler, in its order.
        return {scope: StateValueField() for scope in assembler.DYNAMIC_SCOPES}


class FloorsSerializer(StrictSerializer):
    """Share of the token budget each dynamic layer keeps before anything is dropped."""

    def get_fields(self) -> dict[str, serializers.Field]:
        return {
            scope: f.Number(min_value=0, max_value=1, required=False)
            for scope in assembler.DYNAMIC_SCOPES
        }


class PolicySerializer(StrictSerializer):
    floors = FloorsSerializer(
        required=False, help_text=f"Default: {DEFAULT_FLOOR:g} for each layer."
    )
    block_format = serializers.ChoiceField(
        choices=assembler.BLOCK_FORMATS, default=DEFAULT_BLOCK_FORMAT
    )


class LoreOptionsSerializer(StrictSerializer):
    """How lore enters the prompt: which text activation scans, and the lore block's room."""

    scan_depth = f.Integer(
        min_value=0,
        max_value=MAX_LORE_SCAN_DEPTH,
        default=DEFAULT_LORE_SCAN_DEPTH,
        help_text="The newest history messages scanned (besides input, game_state, player).",
    )
    budget = f.Integer(
        min_value=0,
        max_value=assembler.MAX_BUDGET,
        allow_null=True,
        default=None,
        help_text=f"Tokens of the lore block (default: {DEFAULT_LORE_SHARE:.0%} of the token "
        "budget).",
    )
    recursion = f.Integer(
        min_value=0,
        max_value=MAX_LORE_RECURSION,
        default=DEFAULT_LORE_RECURSION,
        help_text="Rounds in which activated entries' content may activate more.",
    )
    enabled = f.Flag(default=True, help_text="false: no lore in this prompt.")


class AssembleInputSerializer(StrictSerializer):
    entry = slug_field(help_text="Entry slug.")
    world = slug_field(
        required=False, allow_null=True, default=None, help_text="Must be the entry's world."
    )
    first_turn = f.Flag(default=False, help_text="Include the entry_start layer.")
    token_budget = f.Integer(
        min_value=0, max_value=assembler.MAX_BUDGET, default=assembler.DEFAULT_TOKEN_BUDGET
    )
    npc_budget = f.Integer(
        min_value=0, max_value=assembler.MAX_BUDGET, default=assembler.DEFAULT_NPC_BUDGET
    )
    npcs = npcs_field(default=list, help_text="NPCs in priority order, most important first.")
    state = StateSerializer(required=False)
    policy = PolicySerializer(required=False)
    strict = f.Flag(
        default=False,
        help_text="Answer 422 instead of an over-budget prompt when the protected layers "
        "alone exceed the budget.",
    )
    conversation = f.Text(
        required=False,
        allow_null=True,
        default=None,
        max_length=KEY_MAX_LENGTH,
        validators=[key_validator],
        help_text="A conversation's key: its summary and recent messages make the history "
        "layer (between npc and game_state).",
    )
    history_budget = f.Integer(
        required=False,
        allow_null=True,
        default=None,
        min_value=0,
        max_value=assembler.MAX_BUDGET,
        help_text="Tokens the history layer starts from (default: the conversation's).",
    )
    release = serializers.RegexField(
        rf"^{RELEASE_PATTERN}\Z",
        required=False,
        allow_null=True,
        default=None,
        help_text="A label (e.g. 'production'), a release name, or 'working' (the working "
        "copy). Default: the 'production' label's release when that label exists, else the "
        "working copy; meta.release says which was served.",
    )
    lore = LoreOptionsSerializer(required=False)


class PreviewInputSerializer(AssembleInputSerializer):
    include_inactive = f.Flag(
        default=False, help_text="Also list inactive segments (fate 'inactive')."
    )


class TruncationStepSerializer(serializers.Serializer):
    scope = f.Text()
    action = serializers.ChoiceField(choices=get_args(StepAction))
    tokens_before = f.Integer()
    tokens_after = f.Integer()
    segment_id = f.Integer(allow_null=True)
    npc = f.Text(allow_null=True)
    reason = f.Text()
    explanation = f.Text(help_text="The step in plain words, for authors.")


class OutcomeChangeSerializer(serializers.Serializer):
    """One thing the prompt lost in the end (``assembler.result.Change``)."""

    kind = serializers.ChoiceField(choices=CHANGE_KINDS)
    key = f.Text(help_text="segment:<id>, npc:<slug>, lore:<id> or layer:<scope>.")
    scope = f.Text()
    name = f.Text(help_text="As authors know it, e.g. \"World segment #44 'The long war'\".")
    tokens_before = f.Integer(help_text="Tokens asked for (an NPC: at the tier asked for).")
    tokens_after = f.Integer(help_text="Tokens the prompt holds of it (0 when left out).")
    segment_id = f.Integer(allow_null=True)
    npc = f.Text(allow_null=True)
    lore_id = f.Integer(allow_null=True)
    tier_before = f.Integer(allow_null=True, help_text="NPCs: the tier asked for.")
    tier_after = f.Integer(allow_null=True, help_text="NPCs lowered: the tier shown.")
    reason = serializers.ChoiceField(
        choices=OUTCOME_REASONS,
        help_text="Alone larger than a budget (the token, NPC or lore budget), or no room "
        "left in it.",
    )
    explanation = f.Text(help_text="All of it in plain words, for authors.")


class OutcomeSerializer(serializers.Serializer):
    """The net result of fitting the budgets, after put-backs (each list in prompt order)."""

    left_out = OutcomeChangeSerializer(many=True)
    shortened = OutcomeChangeSerializer(many=True)
    lowered = OutcomeChangeSerializer(many=True)


class LayerReportSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=get_args(LayerStatus))
    tokens = f.Integer(help_text="Tokens of the whole block, frame included.")
    segment_ids = serializers.ListField(child=f.Integer())


class NpcReportSerializer(serializers.Serializer):
    npc = f.Text()
    requested_tier = f.Integer()
    tier = f.Integer()
    status = serializers.ChoiceField(choices=get_args(NpcStatus))
    tokens = f.Integer()


class LintSerializer(serializers.Serializer):
    code = f.Text()
    level = serializers.ChoiceField(choices=get_args(LintLevel))
    message = f.Text()


class HistorySummarySerializer(serializers.Serializer):
    id = f.Integer(allow_null=True)
    covers_through = f.Integer()


class HistoryReportSerializer(serializers.Serializer):
    """How the history layer was made (present when the request names a conversation)."""

    conversation = f.Text()
    mode = serializers.ChoiceField(choices=get_args(HistoryMode))
    messages = serializers.ListField(child=f.Integer(), help_text="Positions shown.")
    summary = HistorySummarySerializer(allow_null=True)
    trimmed = f.Integer(allow_null=True, help_text="Position of a message cut short.")


class ServedReleaseSerializer(serializers.Serializer):
    name = f.Text(help_text="The release's name, or 'working' for the working copy.")
    label = f.Text(allow_null=True, help_text="The label it was reached through, if any.")


class MetaSerializer(serializers.Serializer):
    """The assembler's report (``assembler.Meta.to_dict()``)."""

    order = serializers.ListField(child=f.Text())
    segment_ids_by_scope = serializers.DictField(child=serializers.ListField(child=f.Integer()))
    tokens_estimated = f.Integer(help_text="Size of the untruncated assembly.")
    tokens = f.Integer(help_text="Exact token count of the prompt.")
    token_budget = f.Integer()
    npc_budget = f.Integer()
    encoding = f.Text()
    over_budget = f.Flag()
    truncated = TruncationStepSerializer(
        many=True, help_text="Every step of the budget policy in the order taken, put-backs too."
    )
    outcome = OutcomeSerializer(
        help_text="What is left out, shortened and lowered in the end, each with its reason."
    )
    layers = serializers.DictField(child=LayerReportSerializer())
    npcs = NpcReportSerializer(many=True)
    lints = LintSerializer(many=True)
    content_hash = f.Text()
    history = HistoryReportSerializer(required=False)
    lore = LoreReportSerializer(
        many=True,
        help_text="Every lore entry triggered, in the order the lore budget took them, and "
        "what became of it.",
    )
    release = ServedReleaseSerializer(help_text="The content served.")


class AssembleOutputSerializer(serializers.Serializer):
    prompt = f.Text()
    meta = MetaSerializer()


class SegmentFateSerializer(serializers.Serializer):
    id = f.Integer()
    scope = f.Text()
    npc = f.Text(allow_null=True)
    title = f.Text(allow_blank=True)
    tokens = f.Integer()
    fate = serializers.ChoiceField(choices=[*get_args(Fate), "inactive"])


class PreviewOutputSerializer(AssembleOutputSerializer):
    segments = SegmentFateSerializer(
        many=True, help_text="Every segment considered, in assembly order, with its fate."
    )


class CallerSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["api_key", "user"])
    name = f.Text(help_text="The key's name or the user's username.")
    scope = f.Text(allow_null=True, help_text="API keys: read, write or admin.")
    role = f.Text(allow_null=True, help_text="People: viewer, author or admin.")
    can_write = f.Flag()
