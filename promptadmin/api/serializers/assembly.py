"""Serializers of the assembly endpoints (/assemble, /preview) and of the caller (/me)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, get_args

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

import assembler
from assembler.request import DEFAULT_FLOOR
from assembler.result import CHANGE_KINDS, OUTCOME_REASONS, LayerStatus, StepAction
from promptadmin.api import fields as f
from promptadmin.api.fastpath import well_formed
from promptadmin.api.serializers.common import (
    MAX_TEXT,
    RELEASE_PATTERN,
    StrictSerializer,
    slug_field,
    storable_json,
    utf8_text,
)
from promptadmin.api.serializers.lore import LoreReportSerializer
from promptadmin.content.assembly import AssembleParams
from promptadmin.content.models import MAX_TIER
from promptadmin.conversations.models import KEY_MAX_LENGTH, key_validator
from promptadmin.core.storedjson import has_lone_surrogate


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string", "maxLength": 64, "description": "NPC slug, at tier 0"},
            {
                "type": "object",
                "properties": {
                    "npc": {"type": "string", "maxLength": 64, "description": "NPC slug"},
                    "tier": {"type": "integer", "minimum": 0, "maximum": MAX_TIER, "default": 0},
                },
                "required": ["npc"],
                "additionalProperties": False,
            },
        ]
    }
)
class NpcRequestField(serializers.Field):
    """An NPC slug (tier 0) or ``{"npc": slug, "tier": n}``.

    Checked by hand rather than with a nested serializer per item: this runs on every
    assembly, and a serializer instance per NPC costs more than the rest of the parsing.
    """

    default_error_messages = {
        "invalid": 'Expected an NPC slug or {{"npc": slug, "tier": n}}.',
        "npc": "Expected an NPC slug: 1 to 64 characters, without NUL or lone surrogates.",
        "tier": f"Expected an integer tier from 0 to {MAX_TIER}.",
        "unknown": "Unknown field; the fields are: npc, tier.",
    }

    def to_internal_value(self, data: Any) -> tuple[str, int]:
        if isinstance(data, str):
            data = {"npc": data}
        if not isinstance(data, Mapping):
            self.fail("invalid")
        errors = {name: [self.error_messages["unknown"]] for name in data.keys() - {"npc", "tier"}}
        slug, tier = data.get("npc"), data.get("tier", 0)
        if (
            not isinstance(slug, str)
            or not 0 < len(slug) <= 64
            or "\x00" in slug
            or has_lone_surrogate(slug)
        ):
            errors["npc"] = [self.error_messages["npc"]]
        if isinstance(tier, bool) or not isinstance(tier, int) or not 0 <= tier <= MAX_TIER:
            errors["tier"] = [self.error_messages["tier"]]
        if errors:
            raise ValidationError(errors)
        return slug, tier

    def to_representation(self, value: tuple[str, int]) -> dict[str, Any]:
        return {"npc": value[0], "tier": value[1]}


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
    default_error_messages = {"invalid": "Expected text, a JSON object or null."}

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(allow_null=True, required=False, **kwargs)

    def to_internal_value(self, data: Any) -> str | dict[str, Any]:
        if isinstance(data, str):
            if len(data) > MAX_TEXT:
                raise ValidationError(f"At most {MAX_TEXT} characters.", code="max_length")
            utf8_text(data)
        elif isinstance(data, dict):
            storable_json(data)
        else:
            self.fail("invalid")
        return data

    def to_representation(self, value: Any) -> Any:
        return value


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
    block_format = serializers.ChoiceField(choices=assembler.BLOCK_FORMATS, default="delimited")


class AssembleInputSerializer(StrictSerializer):
    # Boolean options a subclass adds, returned beside the parameters by _parse().
    FLAGS: ClassVar[tuple[str, ...]] = ()

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
    npcs = serializers.ListField(
        child=NpcRequestField(),
        default=list,
        max_length=50,
        help_text="NPCs in priority order, most important first.",
    )
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
        error_messages={
            "invalid": "Expected a label, a release name or 'working': up to 64 lowercase "
            "letters, digits, '_', '.' or '-'."
        },
        help_text="A label (e.g. 'production'), a release name, or 'working' (the working "
        "copy). Default: the 'production' label's release when that label exists, else the "
        "working copy; meta.release says which was served.",
    )

    def validate_npcs(self, value: list[tuple[str, int]]) -> list[tuple[str, int]]:
        slugs = [slug for slug, _tier in value]
        repeated = sorted({slug for slug in slugs if slugs.count(slug) > 1})
        if repeated:
            raise ValidationError(f"Each NPC may be listed once; repeated: {', '.join(repeated)}.")
        return value

    @classmethod
    def parse(cls, data: Any) -> AssembleParams:
        """The request's parameters, or a ValidationError naming every bad field."""
        return cls._parse(data)[0]

    @classmethod
    def _parse(cls, data: Any) -> tuple[AssembleParams, dict[str, bool]]:
        # Assembly runs on every turn of every game, and full validation through DRF's
        # fields costs more than assembling the prompt. A well-formed request takes a fast
        # path that accepts only what full validation accepts, with the same result (a
        # property test holds it to that); anything else, every error included, goes
        # through the serializer, the one place that words errors.
        fast = well_formed(data, cls.FLAGS)
        if fast is not None:
            return fast
        serializer = cls(data=data)
        serializer.is_valid(raise_exception=True)
        flags = {name: serializer.validated_data[name] for name in cls.FLAGS}
        return serializer.params(), flags

    def params(self) -> AssembleParams:
        data = self.validated_data
        policy = data.get("policy", {})
        return AssembleParams(
            entry=data["entry"],
            world=data["world"],
            first_turn=data["first_turn"],
            token_budget=data["token_budget"],
            npc_budget=data["npc_budget"],
            npcs=tuple(data["npcs"]),
            state=dict(data.get("state", {})),
            floors=dict(policy["floors"]) if policy.get("floors") else None,
            block_format=policy.get("block_format", "delimited"),
            strict=data["strict"],
            conversation=data["conversation"],
            history_budget=data["history_budget"],
            release=data["release"],
        )


class PreviewInputSerializer(AssembleInputSerializer):
    include_inactive = f.Flag(
        default=False, help_text="Also list inactive segments (fate 'inactive')."
    )

    FLAGS = ("include_inactive",)

    @classmethod
    def parse_preview(cls, data: Any) -> tuple[AssembleParams, bool]:
        """The request's parameters and ``include_inactive``, or a ValidationError."""
        params, flags = cls._parse(data)
        return params, flags["include_inactive"]


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
    status = serializers.ChoiceField(choices=["included", "lowered", "dropped"])
    tokens = f.Integer()


class LintSerializer(serializers.Serializer):
    code = f.Text()
    level = serializers.ChoiceField(choices=["error", "warning"])
    message = f.Text()


class HistorySummarySerializer(serializers.Serializer):
    id = f.Integer(allow_null=True)
    covers_through = f.Integer()


class HistoryReportSerializer(serializers.Serializer):
    """How the history layer was made (present when the request names a conversation)."""

    conversation = f.Text()
    mode = serializers.ChoiceField(choices=["full", "summary_and_recent", "recent_only"])
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
    fate = serializers.ChoiceField(choices=["included", "dropped", "skipped", "inactive"])


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
