"""Serializers of the content endpoints: worlds, rulesets, NPCs, entries, segments."""

from __future__ import annotations

from typing import Any, ClassVar

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from assembler.request import INT32, MAX_TEXT, MAX_TIER
from promptadmin.api import fields as f
from promptadmin.api.serializers.common import StrictSerializer, slug_field, storable_json
from promptadmin.content.kinds import KINDS, Kind
from promptadmin.content.models import SEGMENT_SCOPES, Scope, slug_validator
from promptadmin.content.services.catalog import MAX_CAST
from promptadmin.core.tokens import token_count


class CatalogInputSerializer(StrictSerializer):
    slug = slug_field(validators=[slug_validator])
    name = f.Text(max_length=200)
    description = f.Text(allow_blank=True, default="")


class CatalogOutputSerializer(serializers.Serializer):
    slug = f.Text()
    name = f.Text()
    description = f.Text(allow_blank=True)
    revision = f.Integer(help_text="Bumped by every saved change; the ETag names it.")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class CastMemberSerializer(StrictSerializer):
    npc = slug_field(help_text="NPC slug.")
    tier = f.Integer(min_value=0, max_value=MAX_TIER, default=0, help_text="Its usual tier.")


class EntryInputSerializer(CatalogInputSerializer):
    world = slug_field(help_text="World slug.")
    rulesets = serializers.ListField(
        child=slug_field(), default=list, max_length=50, help_text="Ruleset slugs, in order."
    )
    cast = serializers.ListField(
        child=CastMemberSerializer(),
        default=list,
        max_length=MAX_CAST,
        help_text="The NPCs that usually appear, most important first, each with a usual tier.",
    )


class CastMemberOutputSerializer(serializers.Serializer):
    npc = f.Text(source="npc.slug")
    tier = f.Integer()


class EntryOutputSerializer(CatalogOutputSerializer):
    world = f.Text(source="world.slug")
    rulesets = serializers.SerializerMethodField()
    cast = CastMemberOutputSerializer(source="cast_links", many=True)

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
    title = f.Text(max_length=200, allow_blank=True, default="")
    content = f.Text(max_length=MAX_TEXT, trim_whitespace=False)
    metadata = serializers.DictField(default=dict, validators=[storable_json])
    version = f.Text(max_length=32, default="1.0.0")
    active = f.Flag(default=True)
    sort_order = f.Integer(min_value=-INT32 - 1, max_value=INT32, default=0)
    tier = f.Integer(min_value=0, max_value=MAX_TIER, default=0)


class SegmentFieldsSerializer(serializers.Serializer):
    """The fields a segment and each of its recorded revisions share.

    ``ORDER`` lists a subclass's fields in the order its JSON has them (clients and the
    schema see them in that order).
    """

    ORDER: ClassVar[tuple[str, ...]]

    title = f.Text(allow_blank=True)
    content = f.Text(allow_blank=True)
    metadata = serializers.DictField()
    version = f.Text()
    active = f.Flag()
    sort_order = f.Integer()
    tier = f.Integer()

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        return {name: fields[name] for name in self.ORDER}


SEGMENT_FIELDS = ("title", "content", "metadata", "version", "active", "sort_order", "tier")


class SegmentOutputSerializer(SegmentFieldsSerializer):
    ORDER = (
        "id",
        "scope",
        "ref",
        *SEGMENT_FIELDS,
        "token_count",
        "revision",
        "created_at",
        "updated_at",
    )

    id = f.Integer()
    scope = serializers.ChoiceField(choices=Scope.choices)
    ref = f.Text(source="ref_slug", allow_null=True)
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
    """The segment list's filters: a scope, an object of each kind (by slug), the active
    flag, text."""

    scope = serializers.ChoiceField(choices=Scope.choices, required=False)
    active = f.QueryFlag(required=False, allow_null=True, default=None)
    search = serializers.CharField(
        required=False,
        max_length=200,
        help_text=(
            "Words to find (any case): each must begin a word of the title or the content,"
            " or be part of the owner's name. Looked up in a full-text index; the order"
            " stays the list's."
        ),
    )

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        by_kind = {key: _kind_filter(kind) for key, kind in KINDS.items()}
        return {"scope": fields.pop("scope"), **by_kind, **fields}


def _kind_filter(kind: Kind) -> serializers.Field:
    scopes = f" ({', '.join(kind.scopes)})" if len(kind.scopes) > 1 else ""
    return slug_field(required=False, help_text=f"Segments of this {kind.label}{scopes}.")


class SegmentRestoreSerializer(StrictSerializer):
    revision = f.Integer(min_value=1, max_value=INT32)


class SegmentRevisionSerializer(SegmentFieldsSerializer):
    """One recorded state of a segment (django-simple-history), newest first."""

    ORDER = (
        "revision",
        "change",
        "changed_at",
        "changed_by",
        "changed_via",
        "scope",
        "ref",
        *SEGMENT_FIELDS,
    )

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

    CHANGES: ClassVar[dict[str, str]] = {"+": "created", "~": "changed", "-": "deleted"}

    @extend_schema_field(serializers.ChoiceField(choices=["created", "changed", "deleted"]))
    def get_change(self, record: Any) -> str:
        return self.CHANGES[record.history_type]

    @extend_schema_field(f.Text(allow_null=True))
    def get_ref(self, record: Any) -> str | None:
        for name in KINDS:
            if getattr(record, f"{name}_id") is not None:
                ref = getattr(record, name)
                return ref.slug if ref is not None else None
        return None


class SegmentHistoryPageSerializer(serializers.Serializer):
    count = f.Integer()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = SegmentRevisionSerializer(many=True)
