"""Forms of the legacy import and the review of deprecated segments (admins only)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.db import models

from promptadmin.content.kinds import scope_kind
from promptadmin.content.legacy import FORMATS, MAX_UPLOAD_BYTES, ExportError, parse_refs
from promptadmin.content.models import DEPRECATED_SCOPES, SEGMENT_SCOPES
from promptadmin.content.services.deprecated import MAX_REASON, Action, Status
from promptadmin.studio.forms.common import (
    ObjectPicker,
    clean_picked,
)


class ImportForm(forms.Form):
    file = forms.FileField(
        label="Export file",
        help_text="A JSON array or CSV with a header, as exported from prompt_segments.",
    )
    format = forms.ChoiceField(
        choices=[("", "From the file name"), *((fmt, fmt.upper()) for fmt in FORMATS)],
        required=False,
    )
    dry_run = forms.BooleanField(
        required=False, initial=True, label="Dry run: report only, write nothing"
    )
    skip_invalid = forms.BooleanField(
        required=False,
        label="Skip invalid rows (import the valid ones and report the rest)",
    )
    refs = forms.FileField(
        label="References file (optional)",
        required=False,
        help_text="When ref_id holds legacy ids: a JSON object from each to a slug or "
        '"kind:slug", e.g. {"12": "iron-coast", "40": "entry:drowned-bell"}.',
    )

    def clean_refs(self) -> dict[str, str] | None:
        upload = self.cleaned_data["refs"]
        if not upload:
            return None
        try:
            return parse_refs(_checked_size(upload).read())
        except ExportError as exc:
            raise ValidationError(str(exc)) from None


def _checked_size(upload: Any) -> Any:
    if upload.size > MAX_UPLOAD_BYTES:
        raise ValidationError(f"The file is larger than {MAX_UPLOAD_BYTES // 2**20} MB.")
    return upload


class DeprecatedFilterForm(forms.Form):
    q = forms.CharField(label="Search", required=False, max_length=200)
    scope = forms.ChoiceField(
        label="Old scope",
        required=False,
        choices=[("", "Any"), *((s.value, s.label) for s in DEPRECATED_SCOPES)],
    )
    status = forms.ChoiceField(required=False, choices=[("", "Any"), *Status.choices])


class TargetMixin(forms.Form):
    """Where a copy goes: a scope and the object it belongs to, as ``scope`` + ``object``."""

    scope = forms.ChoiceField(
        choices=[("", "Choose a scope…"), *((s.value, s.label) for s in SEGMENT_SCOPES)],
        required=False,
    )
    object = forms.CharField(label="Belongs to", required=False, widget=ObjectPicker)

    def __init__(self, *args: Any, labels: dict[str, str] | None = None, **kwargs: Any) -> None:
        """``labels``: how the pickers show the objects already chosen (``kind:slug`` ->
        label), when a page shows many forms (no query per form)."""
        super().__init__(*args, **kwargs)
        self.fields["object"].widget.labels = labels or {}

    def clean_object(self) -> models.Model | None:
        return clean_picked(self.cleaned_data["object"])

    def check_target(self, cleaned: dict[str, Any], *, required: bool) -> None:
        scope = cleaned.get("scope")
        if not scope:
            if required:
                self.add_error("scope", "Choose the scope to copy the text into.")
            return
        kind = scope_kind(scope)
        obj = cleaned.get("object")
        if "object" not in cleaned:
            return
        if kind is None and obj is not None:
            self.add_error("object", "A core segment belongs to no object: leave this empty.")
        elif kind is not None and not isinstance(obj, kind.model):
            self.add_error("object", f"Choose the {kind.label} the copy belongs to.")


class CopyForm(TargetMixin):
    content = forms.CharField(
        strip=False,
        widget=forms.Textarea(attrs={"rows": 6, "class": "mono"}),
        error_messages={"required": "Write the text of the copy."},
        help_text="Edit the text before copying if it needs it.",
    )
    active = forms.BooleanField(
        required=False, label="Active (assembled from now on)", initial=False
    )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        self.check_target(cleaned, required=True)
        return cleaned


class DismissForm(forms.Form):
    reason = forms.CharField(
        max_length=MAX_REASON,
        error_messages={"required": "Say why this segment is dismissed."},
    )


class BulkForm(TargetMixin):
    action = forms.ChoiceField(choices=Action.choices)
    reason = forms.CharField(max_length=MAX_REASON, required=False)
    active = forms.BooleanField(required=False)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if cleaned.get("action") == Action.DISMISS and not (cleaned.get("reason") or "").strip():
            self.add_error("reason", "Say why these segments are dismissed.")
        if cleaned.get("action") == Action.COPY:
            self.check_target(cleaned, required=False)
        return cleaned
