"""Serializers of the lore endpoints: entries, their history, the test, import and export.

The limits are the assembler's (``assembler.lore.MAX_LORE_*``); the services check each
entry again by building the assembler's own entry, so the API and the studio refuse the
same input with the same words.
"""

from __future__ import annotations

from typing import Any, get_args

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from assembler.lore import (
    LORE_SOURCES,
    MAX_LORE_CONTENT_LENGTH,
    MAX_LORE_GROUP_LENGTH,
    MAX_LORE_KEY_LENGTH,
    MAX_LORE_KEYS,
    MAX_LORE_PRIORITY,
    MAX_LORE_TEST_TEXT,
    MAX_LORE_TITLE_LENGTH,
    MIN_LORE_PRIORITY,
    ActivationStatus,
)
from assembler.request import INT32
from assembler.result import LoreStatus
from promptadmin.api import fields as f
from promptadmin.api.pagination import page_of
from promptadmin.api.serializers import revisions
from promptadmin.api.serializers.common import (
    OrderedSerializer,
    StrictSerializer,
    slug_field,
    storable_json,
)
from promptadmin.lore.worldinfo import MAX_FILE_BYTES


def _text(**kwargs: Any) -> serializers.CharField:
    # DRF refuses NUL and lone surrogates in every CharField (one error each, on the field).
    return f.Text(trim_whitespace=False, **kwargs)


class LoreMatchSerializer(StrictSerializer):
    whole_words = f.Flag(
        default=True,
        help_text="A key that starts or ends with a letter or digit matches only as a "
        "whole word ('bell' in \"bell's\", not in 'bells').",
    )
    case_sensitive = f.Flag(default=False, help_text="Match the keys' case exactly.")


class LoreInputSerializer(StrictSerializer):
    world = slug_field(
        allow_null=True, default=None, help_text="World slug; null: lore of every world."
    )
    title = _text(max_length=MAX_LORE_TITLE_LENGTH, allow_blank=True, default="")
    content = _text(max_length=MAX_LORE_CONTENT_LENGTH, allow_blank=True)
    keys = serializers.ListField(
        child=_text(max_length=MAX_LORE_KEY_LENGTH),
        max_length=MAX_LORE_KEYS,
        default=list,
        help_text=f"1 to {MAX_LORE_KEYS} words or phrases, each up to {MAX_LORE_KEY_LENGTH} "
        "characters, that bring the entry in (none needed for a constant entry).",
    )
    match = LoreMatchSerializer(required=False)
    priority = f.Integer(
        min_value=MIN_LORE_PRIORITY,
        max_value=MAX_LORE_PRIORITY,
        default=0,
        help_text="Higher goes first into the lore budget, and is left out last.",
    )
    group = _text(
        max_length=MAX_LORE_GROUP_LENGTH,
        allow_blank=True,
        allow_null=True,
        default=None,
        help_text="Of the entries of one group triggered on a turn, only the one with the "
        "highest priority enters (ties: the lowest id). Null: no group.",
    )
    constant = f.Flag(default=False, help_text="Always in the lore layer, no key needed.")
    recursive = f.Flag(default=True, help_text="Its content may trigger other entries.")
    active = f.Flag(default=True, help_text="Inactive entries never enter a prompt.")
    metadata = serializers.DictField(default=dict, validators=[storable_json])

    def service_fields(self) -> dict[str, Any]:
        """The validated data as the lore services take it (``world`` still a slug)."""
        data = dict(self.validated_data)
        match = data.pop("match", None)
        if match is not None:
            data.update(match)
        if "group" in data and data["group"] is None:
            data["group"] = ""
        return data


class LoreMatchOutputSerializer(serializers.Serializer):
    whole_words = f.Flag()
    case_sensitive = f.Flag()


class LoreFieldsSerializer(OrderedSerializer):
    """The fields an entry and each of its recorded revisions share, in ``ORDER``."""

    world = serializers.SerializerMethodField()
    title = f.Text(allow_blank=True)
    content = f.Text(allow_blank=True)
    keys = serializers.ListField(child=f.Text())
    match = serializers.SerializerMethodField()
    priority = f.Integer()
    group = serializers.SerializerMethodField()
    constant = f.Flag()
    recursive = f.Flag()
    active = f.Flag()
    metadata = serializers.DictField()

    @extend_schema_field(f.Text(allow_null=True, help_text="World slug; null: every world."))
    def get_world(self, entry: Any) -> str | None:
        if entry.world_id is None:
            return None
        world = entry.world
        return world.slug if world is not None else None

    @extend_schema_field(LoreMatchOutputSerializer)
    def get_match(self, entry: Any) -> dict[str, bool]:
        return {"whole_words": entry.whole_words, "case_sensitive": entry.case_sensitive}

    @extend_schema_field(f.Text(allow_null=True))
    def get_group(self, entry: Any) -> str | None:
        return entry.group or None


LORE_FIELDS = (
    "world",
    "title",
    "content",
    "keys",
    "match",
    "priority",
    "group",
    "constant",
    "recursive",
    "active",
    "metadata",
)


class LoreOutputSerializer(LoreFieldsSerializer, revisions.CurrentRevisionSerializer):
    ORDER = ("id", *LORE_FIELDS, "token_count", "revision", "created_at", "updated_at")

    id = f.Integer()


class LoreFilterSerializer(serializers.Serializer):
    """The lore list's filters."""

    world = slug_field(required=False, help_text="A world's own entries (by slug).")
    every_world = f.QueryFlag(
        required=False,
        allow_null=True,
        default=None,
        help_text="true: only the entries of every world (world null).",
    )
    group = serializers.CharField(required=False, max_length=MAX_LORE_GROUP_LENGTH)
    active = f.QueryFlag(required=False, allow_null=True, default=None)
    search = serializers.CharField(
        required=False,
        max_length=200,
        help_text="Words, each the start of a word of the title, a key or the content (any "
        "case; every word must match).",
    )


class LoreRestoreSerializer(StrictSerializer):
    revision = f.Integer(min_value=1, max_value=INT32)


class LoreRevisionSerializer(LoreFieldsSerializer, revisions.RevisionRecordSerializer):
    """One recorded state of a lore entry, newest first."""

    ORDER = (*revisions.RevisionRecordSerializer.HISTORY_FIELDS, *LORE_FIELDS)


LoreHistoryPageSerializer = page_of("LoreHistoryPageSerializer", LoreRevisionSerializer)


class LoreTestInputSerializer(StrictSerializer):
    world = slug_field(
        allow_null=True,
        default=None,
        help_text="World slug: its lore and the lore of every world (null: the latter only).",
    )
    text = _text(
        max_length=MAX_LORE_TEST_TEXT,
        allow_blank=True,
        help_text="The text to scan, as a turn's text would be (then the entries' content).",
    )


class LoreTriggerSerializer(serializers.Serializer):
    key = f.Text(allow_null=True, help_text="The key matched (null: a constant entry).")
    source = serializers.ChoiceField(choices=list(LORE_SOURCES))
    message = f.Integer(allow_null=True, help_text="The history message's position.")
    start = f.Integer(allow_null=True, help_text="Where the key starts, in code points.")
    end = f.Integer(allow_null=True, help_text="Where it ends (exclusive).")


class LoreMatchSpanSerializer(serializers.Serializer):
    key = f.Text()
    start = f.Integer()
    end = f.Integer()


class LoreActivationSerializer(serializers.Serializer):
    """An entry a text triggers (``assembler.lore.LoreActivation.to_dict()``)."""

    id = f.Integer()
    title = f.Text(allow_blank=True)
    status = serializers.ChoiceField(choices=list(get_args(ActivationStatus)))
    trigger = LoreTriggerSerializer()
    by = f.Integer(allow_null=True, help_text="The entry whose content triggered this one.")
    tokens = f.Integer(allow_null=True)
    reason = f.Text()
    matches = LoreMatchSpanSerializer(
        many=True, help_text="Its matches in the text that triggered it, for highlighting."
    )


class LoreTestOutputSerializer(serializers.Serializer):
    world = f.Text(allow_null=True)
    entries = LoreActivationSerializer(
        many=True,
        help_text="Every entry triggered, in the order the lore budget takes them.",
    )


class LoreReportSerializer(serializers.Serializer):
    """What became of one lore entry triggered on a turn (an item of ``meta.lore``)."""

    id = f.Integer()
    title = f.Text(allow_blank=True)
    status = serializers.ChoiceField(choices=list(get_args(LoreStatus)))
    trigger = LoreTriggerSerializer()
    by = f.Integer(allow_null=True, help_text="The entry whose content triggered this one.")
    tokens = f.Integer()
    reason = f.Text()


class LoreImportInputSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="A SillyTavern World Info JSON file.")
    world = slug_field(help_text="The world to import into (by slug).")
    dry_run = serializers.BooleanField(default=False, help_text="Report; change nothing.")

    def validate_file(self, value: Any) -> Any:
        if value.size > MAX_FILE_BYTES:
            raise serializers.ValidationError(
                f"The file is {value.size} bytes; at most {MAX_FILE_BYTES} bytes."
            )
        return value


class LoreImportedSerializer(serializers.Serializer):
    uid = f.Text(help_text="The entry's uid in the file.")
    title = f.Text(allow_blank=True)
    action = serializers.ChoiceField(choices=["created", "updated", "unchanged", "skipped"])
    id = f.Integer(allow_null=True, help_text="The lore entry (null: skipped, or a dry run).")
    notes = serializers.ListField(
        child=f.Text(), help_text="What has no equivalent here, and what is done instead."
    )
    errors = serializers.DictField(
        child=serializers.ListField(child=f.Text()),
        help_text="Why it was skipped, by the file's field (`order`, `key`...).",
    )


class LoreImportReportSerializer(serializers.Serializer):
    world = f.Text()
    dry_run = f.Flag()
    created = f.Integer()
    updated = f.Integer()
    unchanged = f.Integer()
    skipped = f.Integer()
    entries = LoreImportedSerializer(many=True)


class LoreExportFilterSerializer(serializers.Serializer):
    world = slug_field(help_text="The world whose own entries are exported (by slug).")
