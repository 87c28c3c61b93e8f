"""What stored text with revisions (segments, lore entries) answers: its current state's
counts and stamps, and each recorded revision's who, when and how."""

from __future__ import annotations

from typing import Any, ClassVar

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from promptadmin.api import fields as f
from promptadmin.api.serializers.common import OrderedSerializer
from promptadmin.core.tokens import token_count


class CurrentRevisionSerializer(OrderedSerializer):
    """What stored text with revisions (a segment, a lore entry) answers beside its fields."""

    token_count = serializers.SerializerMethodField(
        help_text="Tokens of the content in the configured encoding."
    )
    revision = f.Integer(help_text="Bumped by every saved change; the ETag names it.")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    def get_token_count(self, obj: Any) -> int:
        # Counted with another encoding (before `manage.py recount_tokens`): count afresh.
        return token_count(obj)


class RevisionRecordSerializer(OrderedSerializer):
    """What a recorded revision (django-simple-history) answers beside the recorded fields:
    which revision, what happened, when, by whom and through which API key."""

    HISTORY_FIELDS = ("revision", "change", "changed_at", "changed_by", "changed_via")
    CHANGES: ClassVar[dict[str, str]] = {"+": "created", "~": "changed", "-": "deleted"}

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

    @extend_schema_field(serializers.ChoiceField(choices=["created", "changed", "deleted"]))
    def get_change(self, record: Any) -> str:
        return self.CHANGES[record.history_type]
