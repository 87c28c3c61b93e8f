"""The segment editor, its live check, and the segment list's filters."""

from __future__ import annotations

from typing import Any

from django import forms
from django.db import models
from django.urls import reverse

from promptadmin.content.kinds import KINDS, scope_kind
from promptadmin.content.models import DEPRECATED_SCOPES, SEGMENT_SCOPES, Scope, Segment
from promptadmin.core.storedjson import object_from_text
from promptadmin.studio.forms.common import (
    SCOPE_CHOICES,
    ObjectPicker,
    clean_picked,
)


class SegmentForm(forms.Form):
    """Create or edit a segment. The scope is chosen once, at creation."""

    scope = forms.ChoiceField(
        choices=[("", "Choose a scope…"), *SCOPE_CHOICES],
        help_text="Which layer of the prompt this text goes into. Fixed once saved.",
    )
    # A picker, checked by clean_object(), so that an object of the wrong kind gets a
    # message naming the kind the scope needs.
    object = forms.CharField(label="Belongs to", required=False, widget=ObjectPicker)
    tier = forms.IntegerField(
        min_value=0,
        initial=0,
        required=False,
        help_text="NPC segments only: shown when the NPC is requested at this tier or above.",
    )
    title = forms.CharField(
        max_length=200,
        required=False,
        help_text="A short name authors see in lists, the preview and cut explanations.",
    )
    content = forms.CharField(
        strip=False,
        widget=forms.Textarea(attrs={"rows": 16, "class": "mono", "spellcheck": "true"}),
        error_messages={"required": "Write the text of the segment."},
    )
    metadata = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "class": "mono", "spellcheck": "false"}),
        help_text='Optional notes for tools, as a JSON object, e.g. {"source": "wiki"}.',
    )
    version = forms.CharField(
        label="Version label", max_length=32, initial="1.0.0", help_text="For authors, e.g. 1.2.0."
    )
    active = forms.BooleanField(
        required=False, initial=True, help_text="Inactive segments are never assembled."
    )
    sort_order = forms.IntegerField(
        initial=0, help_text="Lower comes first within its layer.", label="Sort order"
    )
    expected_revision = forms.IntegerField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args: Any, segment: Segment | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.segment = segment
        if segment is not None:
            # Disabled: whatever is posted, the form keeps the saved scope.
            self.fields["scope"].choices = [(segment.scope, segment.get_scope_display())]
            self.fields["scope"].disabled = True
            self.fields["scope"].initial = segment.scope
            self.fields["scope"].help_text = "Fixed after creation."
            self.fields["expected_revision"].required = True
        else:
            # Choosing the scope swaps in the fields it needs. On the select itself (rather
            # than a trigger filter on a wrapper, which htmx would have to eval: the CSP
            # forbids that), so the select swapped in keeps doing it.
            self.fields["scope"].widget.attrs.update(
                {
                    "hx-get": reverse("studio:segment_create"),
                    "hx-trigger": "change",
                    "hx-target": "#scope-fields",
                    "hx-swap": "outerHTML",
                }
            )
        self.chosen_scope = self._chosen_scope()
        kinds: tuple[str, ...]
        if not self.chosen_scope:
            kinds = tuple(KINDS)  # no scope yet (or no JavaScript to narrow it): every kind
        elif self.chosen_scope in DEPRECATED_SCOPES:
            kinds = ()
        else:
            kind = scope_kind(self.chosen_scope)
            kinds = (kind.key,) if kind else ()
        self.object_kinds = kinds
        self.fields["object"].widget.kinds = kinds or tuple(KINDS)
        if len(kinds) == 1:
            self.fields["object"].label = f"Belongs to ({KINDS[kinds[0]].label})"
        metadata = (self.data if self.is_bound else self.initial).get("metadata") or ""
        self.fields["metadata"].widget.attrs["rows"] = min(max(3, metadata.count("\n") + 2), 12)

    def _chosen_scope(self) -> str:
        if self.segment is not None:
            return self.segment.scope
        value = self.data.get("scope") if self.is_bound else self.initial.get("scope")
        return value if value in SEGMENT_SCOPES else ""

    @property
    def shows_object(self) -> bool:
        return bool(self.object_kinds)

    @property
    def shows_tier(self) -> bool:
        return self.chosen_scope in ("", Scope.NPC)

    @property
    def is_deprecated(self) -> bool:
        return self.chosen_scope in DEPRECATED_SCOPES

    def clean_metadata(self) -> dict[str, Any]:
        raw = self.cleaned_data["metadata"].strip()
        return object_from_text(raw, "Metadata") if raw else {}

    def clean_object(self) -> models.Model | None:
        return clean_picked(self.cleaned_data["object"], self.object_kinds or KINDS)

    def clean_tier(self) -> int:
        return self.cleaned_data["tier"] or 0

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        scope = cleaned.get("scope")
        if not scope or scope in DEPRECATED_SCOPES:
            if scope and cleaned.get("active"):
                self.add_error(
                    "active", f"Scope '{scope}' is deprecated: this segment must stay inactive."
                )
            return cleaned
        kind = scope_kind(scope)
        obj = cleaned.get("object")
        if "object" in cleaned:
            if kind is None and obj is not None:
                self.add_error("object", "A core segment belongs to no object: leave this empty.")
            elif kind is not None and not isinstance(obj, kind.model):
                self.add_error("object", f"Choose the {kind.label} this segment belongs to.")
        if scope != Scope.NPC and cleaned.get("tier"):
            self.add_error("tier", "Tiers apply to NPC segments only; use 0.")
        return cleaned

    def service_fields(self) -> dict[str, Any]:
        """The cleaned values as ``segment_create`` / ``segment_update`` take them."""
        data = self.cleaned_data
        fields = {
            name: data[name]
            for name in ("title", "content", "metadata", "version", "active", "sort_order", "tier")
        }
        if not self.is_deprecated:
            fields["ref"] = data["object"]
        return fields


# Service errors about the object a segment belongs to, shown on the picker.
SEGMENT_ERROR_FIELDS = dict.fromkeys(("ref", *KINDS), "object")


class SegmentCheckForm(forms.Form):
    """What the editor sends while the author types, for the live token count and lints."""

    scope = forms.CharField(required=False)
    content = forms.CharField(required=False, strip=False)
    saved_tokens = forms.IntegerField(required=False, min_value=0)


class SegmentFilterForm(forms.Form):
    """The segment list's filters; every value is optional and lives in the URL."""

    # No sort chosen: the best matches of a search first, else the newest change.
    BEST_MATCH = ("-rank", "-updated_at", "-id")
    SORTS = {
        "-updated": ("Newest change", ("-updated_at", "-id")),
        "updated": ("Oldest change", ("updated_at", "id")),
        "scope": ("Scope", ("scope", "sort_order", "id")),
        "-tokens": ("Most tokens", ("-token_count", "-id")),
        "tokens": ("Fewest tokens", ("token_count", "id")),
        "id": ("Id, lowest first", ("id",)),
        "-id": ("Id, highest first", ("-id",)),
    }
    ACTIVE_CHOICES = [("", "Any status"), ("yes", "Active"), ("no", "Inactive")]

    q = forms.CharField(
        label="Search",
        required=False,
        widget=forms.TextInput(
            attrs={"type": "search", "placeholder": "Words in the text or title, or #id"}
        ),
    )
    scope = forms.ChoiceField(required=False)
    object = forms.CharField(label="Belongs to", required=False, widget=ObjectPicker)
    active = forms.ChoiceField(label="Status", choices=ACTIVE_CHOICES, required=False)
    sort = forms.ChoiceField(
        label="Sort by",
        choices=[("", "Best match (else newest)"), *((k, v[0]) for k, v in SORTS.items())],
        required=False,
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["scope"].choices = [
            ("", "All scopes"),
            *SCOPE_CHOICES,
            ("Deprecated (kept inactive)", [(s.value, s.label) for s in DEPRECATED_SCOPES]),
        ]

    def clean_object(self) -> models.Model | None:
        return clean_picked(self.cleaned_data["object"])

    def clean_active(self) -> bool | None:
        return {"yes": True, "no": False}.get(self.cleaned_data["active"])

    def clean_sort(self) -> tuple[str, ...]:
        """The sort chosen; by default the best matches of a search, else the newest."""
        chosen = self.cleaned_data["sort"]
        return self.SORTS[chosen][1] if chosen else self.BEST_MATCH
