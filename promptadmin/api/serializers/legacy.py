"""Serializers of the legacy import and the review of deprecated segments."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from assembler.request import MAX_TEXT
from promptadmin.api import fields as f
from promptadmin.api.pagination import page_of
from promptadmin.api.serializers.common import StrictSerializer, slug_field
from promptadmin.api.serializers.content import ScopeField
from promptadmin.content.legacy import FORMATS, MAX_UPLOAD_BYTES, ExportError, parse_refs
from promptadmin.content.models import DEPRECATED_SCOPES, ImportJob
from promptadmin.content.services.deprecated import (
    MAX_REASON,
    Action,
    Status,
    copy_ids,
    review_reason,
    status_of,
)

# Ids in one bulk request (the studio's bulk form acts on a whole filtered selection).
MAX_BULK_IDS = 1000


def _check_size(upload: Any) -> None:
    if upload.size > MAX_UPLOAD_BYTES:
        raise serializers.ValidationError(
            f"The file is {upload.size} bytes; at most {MAX_UPLOAD_BYTES} bytes."
        )


class ImportInputSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="The export: a JSON array or CSV with a header.")
    format = serializers.ChoiceField(
        choices=FORMATS, required=False, help_text="Default: from the file name."
    )
    dry_run = serializers.BooleanField(default=False)
    skip_invalid = serializers.BooleanField(default=False)
    refs = serializers.FileField(
        required=False,
        help_text='A JSON object from the legacy ids in ref_id to slugs or "kind:slug", e.g. '
        '{"12": "iron-coast", "40": "entry:drowned-bell"} (as import_segments --refs takes).',
    )

    def validate_refs(self, value: Any) -> dict[str, str]:
        _check_size(value)
        try:
            return parse_refs(value.read())
        except ExportError as exc:
            raise serializers.ValidationError(str(exc)) from None


class ImportProblemSerializer(serializers.Serializer):
    line = f.Integer(allow_null=True, help_text="Line of the file the row starts on.")
    row = f.Integer(
        allow_null=True,
        help_text="The row's position in the export, the first is 1 (a JSON export on one "
        "line has every row on line 1).",
    )
    id = f.Text(allow_null=True, help_text="The row's legacy id, when it could be read.")
    reason = f.Text()


class ImportReportSerializer(serializers.Serializer):
    dry_run = f.Flag()
    refused = f.Flag(help_text="An invalid row and no skip_invalid: nothing was written.")
    rows = f.Integer(help_text="Rows read from the file.")
    created = serializers.DictField(
        child=f.Integer(), help_text="Rows created (or that would be) per scope."
    )
    unchanged = f.Integer(help_text="Rows already imported as they are.")
    unchanged_by_scope = serializers.DictField(child=f.Integer())
    conflicts = ImportProblemSerializer(
        many=True, help_text="Rows already imported that differ now: kept as stored."
    )
    errors = ImportProblemSerializer(many=True, help_text="Rows not imported, and why.")


class ImportProgressSerializer(serializers.Serializer):
    rows_read = f.Integer(help_text="Rows read so far.")
    rows_total = f.Integer(
        allow_null=True,
        help_text="Rows in all: estimated from the bytes read while the import runs (null "
        "before it starts), exact once it is done.",
    )
    bytes_read = f.Integer()
    bytes_total = f.Integer(help_text="The upload's size.")
    percent = serializers.FloatField(help_text="Of the bytes read, 0 to 100.")


class ImportAcceptedSerializer(serializers.Serializer):
    id = f.Integer()
    status = serializers.ChoiceField(choices=ImportJob.Status.choices)
    url = serializers.URLField(help_text="Where the job's status, progress and report are.")


class ImportJobSerializer(ImportAcceptedSerializer):
    file = f.Text(help_text="The uploaded file's name.")
    format = serializers.ChoiceField(choices=FORMATS)
    dry_run = f.Flag()
    skip_invalid = f.Flag()
    progress = ImportProgressSerializer()
    report = ImportReportSerializer(
        allow_null=True, help_text="Once done: what was imported (or, refused, what was not)."
    )
    error = f.Text(allow_null=True, help_text="Once failed: why (the file could not be read, say).")
    created = serializers.DateTimeField()
    started = serializers.DateTimeField(allow_null=True)
    finished = serializers.DateTimeField(allow_null=True)


class DeprecatedFilterSerializer(serializers.Serializer):
    scope = serializers.ChoiceField(choices=DEPRECATED_SCOPES, required=False)
    status = serializers.ChoiceField(choices=Status.values, required=False)
    search = serializers.CharField(
        required=False, max_length=200, help_text="Words the content contains (any case)."
    )


class SuggestionSerializer(serializers.Serializer):
    scope = f.Text()
    ref = f.Text(source="slug")


class DeprecatedSegmentSerializer(serializers.Serializer):
    id = f.Integer()
    scope = f.Text()
    title = f.Text(allow_blank=True)
    content = f.Text(allow_blank=True)
    metadata = serializers.DictField()
    original_id = serializers.SerializerMethodField()
    original_ref = serializers.SerializerMethodField()
    status = serializers.SerializerMethodField()
    copies = serializers.SerializerMethodField()
    reason = serializers.SerializerMethodField()
    suggested = serializers.SerializerMethodField(
        help_text="Where the text obviously belongs, when one object is named; else null."
    )

    def _meta(self, segment: Any, key: str) -> Any:
        return segment.metadata.get(key) if isinstance(segment.metadata, dict) else None

    def get_original_id(self, segment: Any) -> str:
        value = self._meta(segment, "original_id")
        return str(value) if value is not None else segment.legacy_id or str(segment.pk)

    def get_original_ref(self, segment: Any) -> str | None:
        value = self._meta(segment, "original_ref")
        return value if isinstance(value, str) else None

    def get_status(self, segment: Any) -> str:
        return status_of(segment)

    def get_copies(self, segment: Any) -> list[int]:
        return copy_ids(segment)

    def get_reason(self, segment: Any) -> str | None:
        return review_reason(segment)

    def get_suggested(self, segment: Any) -> dict[str, str] | None:
        hint = self.context.get("suggestions", {}).get(segment.pk)
        return {"scope": hint.scope, "ref": hint.slug} if hint else None


DeprecatedPageSerializer = page_of("DeprecatedPageSerializer", DeprecatedSegmentSerializer)


class CopyInputSerializer(StrictSerializer):
    scope = ScopeField(max_length=20, help_text="An allowed scope.")
    ref = slug_field(allow_null=True, default=None, help_text="Slug of the object; null for core.")
    content = f.Text(
        max_length=MAX_TEXT,
        trim_whitespace=False,
        required=False,
        help_text="The text, edited; default: the deprecated segment's text.",
    )
    active = f.Flag(default=False, help_text="Create the copy active (assembled) or not.")


class DismissInputSerializer(StrictSerializer):
    reason = f.Text(max_length=MAX_REASON, help_text="Why this text is not kept.")


class BulkInputSerializer(StrictSerializer):
    action = serializers.ChoiceField(choices=Action.values)
    ids = serializers.ListField(
        child=f.Integer(min_value=1, max_value=2**63 - 1),
        min_length=1,
        max_length=MAX_BULK_IDS,
        help_text=f"Deprecated segments to act on (at most {MAX_BULK_IDS} per request); those "
        "the action does not apply to are skipped and listed in `skipped`.",
    )
    reason = f.Text(max_length=MAX_REASON, required=False, help_text="For dismiss.")
    scope = ScopeField(
        max_length=20, required=False, help_text="For copy; default: each row's suggestion."
    )
    ref = slug_field(allow_null=True, required=False, help_text="For copy, with scope.")
    active = f.Flag(default=False, help_text="For copy.")


class SkippedSerializer(serializers.Serializer):
    id = f.Integer()
    reason = f.Text(help_text="Why the action does not apply to this segment.")


class BulkOutputSerializer(serializers.Serializer):
    action = f.Text(help_text="The action applied, as requested: copy, dismiss or undo.")
    count = f.Integer(help_text="Segments the action was applied to (the length of results).")
    results = serializers.ListField(
        child=serializers.DictField(),
        help_text="copy: the new segments; dismiss, undo: the deprecated segments changed.",
    )
    skipped = SkippedSerializer(
        many=True, help_text="Segments left as they were, each with the reason; oldest first."
    )
