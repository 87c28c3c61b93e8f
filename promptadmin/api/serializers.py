"""Explicit input and output serializers for every endpoint.

Input serializers refuse fields they do not know (a misspelt field is an error, not
silently ignored) and bound every number and string, so that bad input is a 400 naming
the field and never a database error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, get_args

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail, ValidationError

import assembler
from promptadmin.api import fields as f
from promptadmin.assembly import DEFAULT_NPC_BUDGET, DEFAULT_TOKEN_BUDGET, AssembleParams
from promptadmin.models import SEGMENT_SCOPES, Scope, slug_validator
from promptadmin.tokens import cached_count

MAX_BUDGET = 1_000_000
MAX_TIER = 32767  # the database column is a small integer
MAX_TEXT = 200_000
INT32 = 2**31 - 1


class StrictSerializer(serializers.Serializer):
    """Refuses unknown fields (the schema says ``additionalProperties: false``), read-only
    ones included: a client sends only what it may change."""

    def to_internal_value(self, data: Any) -> Any:
        errors: dict[str, Any] = {}
        if isinstance(data, Mapping) and data.keys() - self.fields.keys():
            allowed = ", ".join(self.fields)
            for name in sorted(data.keys() - self.fields.keys()):
                errors[name] = [
                    ErrorDetail(f"Unknown field; the fields are: {allowed}.", code="unknown_field")
                ]
        try:
            value = super().to_internal_value(data)
        except ValidationError as exc:
            if not isinstance(exc.detail, dict):
                raise
            errors.update(exc.detail)
        if errors:
            raise ValidationError(errors)
        return value


def no_nul_characters(value: Any) -> None:
    """PostgreSQL cannot store U+0000 in text or JSON: refuse it with a clear message."""
    if isinstance(value, str):
        if "\x00" in value:
            raise ValidationError("Text may not contain NUL (U+0000) characters.", code="null")
    elif isinstance(value, Mapping):
        for key, item in value.items():
            no_nul_characters(key)
            no_nul_characters(item)
    elif isinstance(value, list):
        for item in value:
            no_nul_characters(item)


def slug_field(**kwargs: Any) -> serializers.CharField:
    return f.Text(max_length=64, **kwargs)


# Assembly


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
        "npc": "Expected an NPC slug (a string of 1 to 64 characters).",
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
        if not isinstance(slug, str) or not 0 < len(slug) <= 64 or "\x00" in slug:
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
            return data
        if isinstance(data, dict):
            return data
        self.fail("invalid")

    def to_representation(self, value: Any) -> Any:
        return value


class StateSerializer(StrictSerializer):
    """The dynamic layers, supplied with each request; a missing layer is empty."""

    game_state = StateValueField()
    player = StateValueField()
    rng = StateValueField()
    input = StateValueField()


class FloorsSerializer(StrictSerializer):
    """Share of the token budget each dynamic layer keeps before anything is dropped."""

    game_state = f.Number(min_value=0, max_value=1, required=False)
    player = f.Number(min_value=0, max_value=1, required=False)
    rng = f.Number(min_value=0, max_value=1, required=False)
    input = f.Number(min_value=0, max_value=1, required=False)


class PolicySerializer(StrictSerializer):
    floors = FloorsSerializer(required=False, help_text="Default: 0.1 for each layer.")
    block_format = serializers.ChoiceField(
        choices=get_args(assembler.BlockFormat), default="delimited"
    )


class AssembleInputSerializer(StrictSerializer):
    entry = slug_field(help_text="Entry slug.")
    world = slug_field(
        required=False, allow_null=True, default=None, help_text="Must be the entry's world."
    )
    first_turn = f.Flag(default=False, help_text="Include the entry_start layer.")
    token_budget = f.Integer(min_value=0, max_value=MAX_BUDGET, default=DEFAULT_TOKEN_BUDGET)
    npc_budget = f.Integer(min_value=0, max_value=MAX_BUDGET, default=DEFAULT_NPC_BUDGET)
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

    def validate_npcs(self, value: list[tuple[str, int]]) -> list[tuple[str, int]]:
        slugs = [slug for slug, _tier in value]
        repeated = sorted({slug for slug in slugs if slugs.count(slug) > 1})
        if repeated:
            raise ValidationError(f"Each NPC may be listed once; repeated: {', '.join(repeated)}.")
        return value

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
        )


class PreviewInputSerializer(AssembleInputSerializer):
    include_inactive = f.Flag(
        default=False, help_text="Also list inactive segments (fate 'inactive')."
    )


class TruncationStepSerializer(serializers.Serializer):
    scope = f.Text()
    action = serializers.ChoiceField(choices=["trimmed", "dropped", "tier_lowered", "npc_dropped"])
    tokens_before = f.Integer()
    tokens_after = f.Integer()
    segment_id = f.Integer(allow_null=True)
    npc = f.Text(allow_null=True)
    reason = f.Text()


class LayerReportSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["included", "trimmed", "dropped", "empty", "skipped"])
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
    truncated = TruncationStepSerializer(many=True)
    layers = serializers.DictField(child=LayerReportSerializer())
    npcs = NpcReportSerializer(many=True)
    lints = LintSerializer(many=True)
    content_hash = f.Text()


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
    scope = f.Text(allow_null=True, help_text="API keys: read or write.")
    role = f.Text(allow_null=True, help_text="People: viewer, author or admin.")
    can_write = f.Flag()


# Content


class CatalogInputSerializer(StrictSerializer):
    slug = slug_field(validators=[slug_validator])
    name = f.Text(max_length=200)
    description = f.Text(allow_blank=True, default="")


class CatalogOutputSerializer(serializers.Serializer):
    slug = f.Text()
    name = f.Text()
    description = f.Text(allow_blank=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class EntryInputSerializer(CatalogInputSerializer):
    world = slug_field(help_text="World slug.")
    rulesets = serializers.ListField(
        child=slug_field(), default=list, max_length=50, help_text="Ruleset slugs, in order."
    )


class EntryOutputSerializer(CatalogOutputSerializer):
    world = f.Text(source="world.slug")
    rulesets = serializers.SerializerMethodField()

    def get_rulesets(self, entry: Any) -> list[str]:
        return [link.ruleset.slug for link in entry.ruleset_links.all()]


@extend_schema_field({"type": "string", "enum": list(SEGMENT_SCOPES)})
class ScopeField(f.Text):
    """Validated by the segment services, which name the allowed scopes (and say when a
    scope is deprecated)."""


class SegmentInputSerializer(StrictSerializer):
    scope = ScopeField(max_length=20, help_text="Fixed after creation.")
    ref = slug_field(
        allow_null=True,
        default=None,
        help_text="Slug of the world, ruleset, entry or NPC it belongs to; null for core.",
    )
    content = f.Text(max_length=MAX_TEXT, trim_whitespace=False)
    metadata = serializers.DictField(default=dict, validators=[no_nul_characters])
    version = f.Text(max_length=32, default="1.0.0")
    active = f.Flag(default=True)
    sort_order = f.Integer(min_value=-INT32 - 1, max_value=INT32, default=0)
    tier = f.Integer(min_value=0, max_value=MAX_TIER, default=0)


class SegmentOutputSerializer(serializers.Serializer):
    id = f.Integer()
    scope = serializers.ChoiceField(choices=Scope.choices)
    ref = f.Text(source="ref_slug", allow_null=True)
    content = f.Text(allow_blank=True)
    metadata = serializers.DictField()
    version = f.Text()
    active = f.Flag()
    sort_order = f.Integer()
    tier = f.Integer()
    token_count = serializers.SerializerMethodField(
        help_text="Tokens of the content in the configured encoding."
    )
    revision = f.Integer(help_text="Bumped by every saved change.")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    def get_token_count(self, segment: Any) -> int:
        count = cached_count(segment)
        # Counted with another encoding (before `manage.py recount_tokens`): count afresh.
        return count if count is not None else int(self.context["tokenizer"].count(segment.content))


class SegmentFilterSerializer(serializers.Serializer):
    scope = serializers.ChoiceField(choices=Scope.choices, required=False)
    world = slug_field(required=False, help_text="Segments of this world.")
    ruleset = slug_field(required=False, help_text="Segments of this ruleset.")
    entry = slug_field(required=False, help_text="Segments of this entry (entry, entry_start).")
    npc = slug_field(required=False, help_text="Segments of this NPC.")
    active = f.QueryFlag(required=False, allow_null=True, default=None)
    search = serializers.CharField(
        required=False, max_length=200, help_text="Text the content contains (any case)."
    )


class SegmentRestoreSerializer(StrictSerializer):
    revision = f.Integer(min_value=1, max_value=INT32)


class SegmentRevisionSerializer(serializers.Serializer):
    """One recorded state of a segment (django-simple-history), newest first."""

    revision = f.Integer()
    change = serializers.SerializerMethodField()
    changed_at = serializers.DateTimeField(source="history_date")
    changed_by = f.Text(source="history_user.username", allow_null=True)
    scope = f.Text()
    ref = serializers.SerializerMethodField()
    content = f.Text(allow_blank=True)
    metadata = serializers.DictField()
    version = f.Text()
    active = f.Flag()
    sort_order = f.Integer()
    tier = f.Integer()

    CHANGES: ClassVar[dict[str, str]] = {"+": "created", "~": "changed", "-": "deleted"}

    @extend_schema_field(serializers.ChoiceField(choices=["created", "changed", "deleted"]))
    def get_change(self, record: Any) -> str:
        return self.CHANGES[record.history_type]

    @extend_schema_field(f.Text(allow_null=True))
    def get_ref(self, record: Any) -> str | None:
        for name in ("world", "ruleset", "entry", "npc"):
            if getattr(record, f"{name}_id") is not None:
                ref = getattr(record, name)
                return ref.slug if ref is not None else None
        return None


class SegmentHistoryPageSerializer(serializers.Serializer):
    count = f.Integer()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = SegmentRevisionSerializer(many=True)
