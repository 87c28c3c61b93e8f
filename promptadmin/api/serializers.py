"""Explicit input and output serializers for every endpoint.

Input serializers refuse fields they do not know (a misspelt field is an error, not
silently ignored) and bound every number and string, so that bad input is a 400 naming
the field and never a database error.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, get_args

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail, ValidationError

import assembler
from promptadmin.api import fields as f
from promptadmin.assembly import DEFAULT_NPC_BUDGET, DEFAULT_TOKEN_BUDGET, AssembleParams
from promptadmin.models import SEGMENT_SCOPES, Scope, slug_validator
from promptadmin.tokens import token_count

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


def has_lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (U+D800 to U+DFFF).

    JSON can carry one (``"\\ud800"``), but it cannot be encoded as UTF-8: not stored, not
    counted by the tokenizer, not sent back.
    """
    if text.isascii():
        return False
    try:
        text.encode()
    except UnicodeEncodeError:
        return True
    return False


def _texts(value: Any) -> Iterator[str]:
    """Every string in a JSON value, object keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _texts(key)
            yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)


def utf8_text(value: Any) -> None:
    """Refuse lone surrogates anywhere in a JSON value, with a clear message."""
    if any(has_lone_surrogate(text) for text in _texts(value)):
        raise ValidationError(
            "Text may not contain lone surrogates (U+D800 to U+DFFF): they are not UTF-8.",
            code="surrogate_characters_not_allowed",
        )


def storable_json(value: Any) -> None:
    """PostgreSQL stores neither U+0000 nor lone surrogates: refuse them clearly."""
    utf8_text(value)
    if any("\x00" in text for text in _texts(value)):
        raise ValidationError("Text may not contain NUL (U+0000) characters.", code="null")


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
        elif not isinstance(data, dict):
            self.fail("invalid")
        utf8_text(data)
        return data

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
    # Boolean options a subclass adds, returned beside the parameters by _parse().
    FLAGS: ClassVar[tuple[str, ...]] = ()

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
        fast = _well_formed(data, cls.FLAGS)
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


# Spelt out rather than read off the serializer: a field added there falls back to full
# validation until the fast path learns it.
_ASSEMBLE_FIELDS = frozenset(
    {
        "entry",
        "world",
        "first_turn",
        "token_budget",
        "npc_budget",
        "npcs",
        "state",
        "policy",
        "strict",
    }
)
_STATE_FIELDS = frozenset(assembler.DYNAMIC_SCOPES)
_BLOCK_FORMATS = frozenset(get_args(assembler.BlockFormat))


def _slug(value: Any) -> bool:
    """What ``slug_field()`` accepts and returns unchanged."""
    return (
        type(value) is str
        and 0 < len(value) <= 64
        and value.isascii()  # so no lone surrogate, which the serializer refuses
        and value == value.strip()
        and "\x00" not in value
    )


def _integer(value: Any, high: int) -> bool:
    return type(value) is int and 0 <= value <= high


def _well_formed(
    data: Any, flags: tuple[str, ...]
) -> tuple[AssembleParams, dict[str, bool]] | None:
    """The parameters of an assembly request that plainly passes validation, else None.

    Conservative: anything unusual (a missing entry, a string with surrounding spaces, a
    null where a default would apply, a value of a near type) is left to the serializer.
    """
    if type(data) is not dict or not data.keys() <= _ASSEMBLE_FIELDS.union(flags):
        return None
    entry = data.get("entry")
    world = data.get("world")
    if not _slug(entry) or not (world is None or _slug(world)):
        return None
    options = {name: data.get(name, False) for name in ("first_turn", "strict", *flags)}
    if any(type(value) is not bool for value in options.values()):
        return None
    token_budget = data.get("token_budget", DEFAULT_TOKEN_BUDGET)
    npc_budget = data.get("npc_budget", DEFAULT_NPC_BUDGET)
    if not _integer(token_budget, MAX_BUDGET) or not _integer(npc_budget, MAX_BUDGET):
        return None

    npcs: list[tuple[str, int]] = []
    requested = data.get("npcs", [])
    if type(requested) is not list or len(requested) > 50:
        return None
    for item in requested:
        if type(item) is dict:
            if not item.keys() <= {"npc", "tier"}:
                return None
            slug, tier = item.get("npc"), item.get("tier", 0)
        else:
            slug, tier = item, 0
        if type(slug) is not str or not 0 < len(slug) <= 64 or "\x00" in slug:
            return None
        if has_lone_surrogate(slug) or not _integer(tier, MAX_TIER):
            return None
        npcs.append((slug, tier))
    if len({slug for slug, _tier in npcs}) != len(npcs):
        return None

    state = data.get("state", {})
    if type(state) is not dict or not state.keys() <= _STATE_FIELDS:
        return None
    for value in state.values():
        if type(value) is str:
            if len(value) > MAX_TEXT or has_lone_surrogate(value):
                return None
        elif type(value) is dict:
            if any(has_lone_surrogate(text) for text in _texts(value)):
                return None
        elif value is not None:
            return None

    policy = data.get("policy", {})
    if type(policy) is not dict or not policy.keys() <= {"floors", "block_format"}:
        return None
    block_format = policy.get("block_format", "delimited")
    if type(block_format) is not str or block_format not in _BLOCK_FORMATS:
        return None
    floors = policy.get("floors", {})
    if type(floors) is not dict or not floors.keys() <= _STATE_FIELDS:
        return None
    for fraction in floors.values():
        if type(fraction) not in (int, float) or not 0 <= fraction <= 1:
            return None

    params = AssembleParams(
        entry=entry,
        world=world,
        first_turn=options["first_turn"],
        token_budget=token_budget,
        npc_budget=npc_budget,
        npcs=tuple(npcs),
        state=dict(state),
        floors={scope: float(fraction) for scope, fraction in floors.items()} or None,
        block_format=block_format,
        strict=options["strict"],
    )
    return params, {name: options[name] for name in flags}


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
    metadata = serializers.DictField(default=dict, validators=[storable_json])
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
        # Counted with another encoding (before `manage.py recount_tokens`): count afresh.
        return token_count(segment)


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
    changed_by = f.Text(
        source="history_user.username", allow_null=True, help_text="The person who made it."
    )
    changed_via = f.Text(
        source="history_change_reason",
        allow_null=True,
        help_text="The API key a service made it with: \"API key 'name' (prefix)\".",
    )
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
