"""Forms for the studio: they check what a person typed; services check the rest.

Errors a service raises (``ValidationError`` keyed by field) are put back on the form with
:func:`add_service_errors`, so every message shows next to the control it is about.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.db import models
from django.http import QueryDict

from promptadmin.assembly import DEFAULT_NPC_BUDGET, DEFAULT_TOKEN_BUDGET, AssembleParams
from promptadmin.models import (
    DEPRECATED_SCOPES,
    NPC,
    SCOPE_REF_FIELD,
    SEGMENT_SCOPES,
    Entry,
    Ruleset,
    Scope,
    Segment,
    World,
)
from promptadmin.services.segments import REF_MODELS

# Only the assemblable scopes are ever offered for writing.
SCOPE_CHOICES = [(scope.value, scope.label) for scope in SEGMENT_SCOPES]
KIND_LABELS = {"world": "world", "ruleset": "ruleset", "entry": "entry", "npc": "NPC"}
KIND_GROUPS = {"world": "Worlds", "ruleset": "Rulesets", "entry": "Entries", "npc": "NPCs"}
KIND_ORDER = ("world", "ruleset", "entry", "npc")
MAX_BUDGET = 1_000_000
DYNAMIC_LAYERS = (
    ("game_state", "Game state"),
    ("player", "Player"),
    ("rng", "RNG"),
    ("input", "Input"),
)
BLOCK_FORMATS = [
    ("delimited", "=== CORE_BEGIN === (delimited)"),
    ("xml", "<core> (XML tags)"),
    ("markdown", "## Core (Markdown headings)"),
]


def add_service_errors(
    form: forms.Form, error: ValidationError, rename: Mapping[str, str] | None = None
) -> None:
    """Show a service's ``ValidationError`` on the form, next to the fields it names."""
    rename = rename or {}
    if not hasattr(error, "error_dict"):
        form.add_error(None, error)
        return
    for name, messages in error.message_dict.items():
        field = rename.get(name, name)
        form.add_error(field if field in form.fields else None, messages)


def object_value(obj: models.Model) -> str:
    """How an object is named in pickers and URLs: ``world:iron-coast``."""
    return f"{type(obj).__name__.lower()}:{obj.slug}"  # type: ignore[attr-defined]


def object_choices(kinds: Iterable[str]) -> list[tuple[str, list[tuple[str, str]]]]:
    """Grouped choices of the objects of ``kinds`` (one query per kind)."""
    groups = []
    for kind in kinds:
        objects = REF_MODELS[kind]._default_manager.order_by("name", "slug")
        options = [(object_value(obj), f"{obj.name} ({obj.slug})") for obj in objects]
        groups.append((KIND_GROUPS[kind], options))
    return groups


def resolve_object(value: str) -> models.Model | None:
    """The object named ``kind:slug``, or None when there is no such object."""
    kind, _, slug = value.partition(":")
    model = REF_MODELS.get(kind)
    if model is None or not slug:
        return None
    return model._default_manager.filter(slug=slug).first()


def _json_object(raw: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValidationError(
            f"{what} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})."
        ) from None
    if not isinstance(value, dict):
        raise ValidationError(
            f'{what} must be a JSON object in braces, for example {{"title": "Old wars"}}.'
        )
    return value


class SegmentForm(forms.Form):
    """Create or edit a segment. The scope is chosen once, at creation."""

    scope = forms.ChoiceField(
        choices=[("", "Choose a scope…"), *SCOPE_CHOICES],
        help_text="Which layer of the prompt this text goes into. Fixed once saved.",
    )
    # A select, checked by clean_object() rather than against its choices, so that an object
    # of the wrong kind gets a message naming the kind the scope needs.
    object = forms.CharField(label="Belongs to", required=False, widget=forms.Select)
    tier = forms.IntegerField(
        min_value=0,
        initial=0,
        required=False,
        help_text="NPC segments only: shown when the NPC is requested at this tier or above.",
    )
    content = forms.CharField(
        strip=False,
        widget=forms.Textarea(attrs={"rows": 16, "class": "mono", "spellcheck": "true"}),
        error_messages={"required": "Write the text of the segment."},
    )
    metadata = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "class": "mono", "spellcheck": "false"}),
        help_text='A JSON object, e.g. {"title": "Old wars"}. The title labels the segment.',
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
        self.chosen_scope = self._chosen_scope()
        kinds: tuple[str, ...]
        if not self.chosen_scope:
            kinds = KIND_ORDER  # no scope yet (or no JavaScript to narrow it): every kind
        elif self.chosen_scope in DEPRECATED_SCOPES:
            kinds = ()
        else:
            kind = SCOPE_REF_FIELD[self.chosen_scope]
            kinds = (kind,) if kind else ()
        self.object_kinds = kinds
        self.fields["object"].widget.choices = [("", "—"), *object_choices(kinds)]
        if len(kinds) == 1:
            self.fields["object"].label = f"Belongs to ({KIND_LABELS[kinds[0]]})"
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
        return _json_object(raw, "Metadata") if raw else {}

    def clean_object(self) -> models.Model | None:
        value = self.cleaned_data["object"]
        if not value:
            return None
        obj = resolve_object(value)
        if obj is None:
            raise ValidationError("That object no longer exists; choose another.")
        return obj

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
        kind = SCOPE_REF_FIELD[scope]
        obj = cleaned.get("object")
        if "object" in cleaned:
            if kind is None and obj is not None:
                self.add_error("object", "A core segment belongs to no object: leave this empty.")
            elif kind is not None and not isinstance(obj, REF_MODELS[kind]):
                self.add_error("object", f"Choose the {KIND_LABELS[kind]} this segment belongs to.")
        if scope != Scope.NPC and cleaned.get("tier"):
            self.add_error("tier", "Tiers apply to NPC segments only; use 0.")
        return cleaned

    def service_fields(self) -> dict[str, Any]:
        """The cleaned values as ``segment_create`` / ``segment_update`` take them."""
        data = self.cleaned_data
        fields = {
            name: data[name]
            for name in ("content", "metadata", "version", "active", "sort_order", "tier")
        }
        if not self.is_deprecated:
            fields["ref"] = data["object"]
        return fields


# Service errors about the object a segment belongs to, shown on the picker.
SEGMENT_ERROR_FIELDS = {name: "object" for name in ("ref", "world", "ruleset", "entry", "npc")}


class SegmentCheckForm(forms.Form):
    """What the editor sends while the author types, for the live token count and lints."""

    scope = forms.CharField(required=False)
    content = forms.CharField(required=False, strip=False)
    saved_tokens = forms.IntegerField(required=False, min_value=0)


class SegmentFilterForm(forms.Form):
    """The segment list's filters; every value is optional and lives in the URL."""

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
    object = forms.ChoiceField(label="Belongs to", required=False)
    active = forms.ChoiceField(label="Status", choices=ACTIVE_CHOICES, required=False)
    sort = forms.ChoiceField(
        label="Sort by", choices=[(k, v[0]) for k, v in SORTS.items()], required=False
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["scope"].choices = [
            ("", "All scopes"),
            *SCOPE_CHOICES,
            ("Deprecated (kept inactive)", [(s.value, s.label) for s in DEPRECATED_SCOPES]),
        ]
        self.fields["object"].choices = [("", "Any object"), *object_choices(KIND_ORDER)]

    def clean_object(self) -> models.Model | None:
        value = self.cleaned_data["object"]
        return resolve_object(value) if value else None

    def clean_active(self) -> bool | None:
        return {"yes": True, "no": False}.get(self.cleaned_data["active"])

    def clean_sort(self) -> tuple[str, ...]:
        return self.SORTS[self.cleaned_data["sort"] or "-updated"][1]


class CatalogForm(forms.Form):
    """Slug, name and description: worlds, rulesets and NPCs."""

    name = forms.CharField(max_length=200)
    slug = forms.CharField(
        max_length=64,
        help_text="Lowercase letters, digits, '-' or '_' (e.g. iron-coast). Used by the API.",
    )
    description = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 4}), strip=True
    )

    def service_fields(self) -> dict[str, Any]:
        return {name: self.cleaned_data[name] for name in ("slug", "name", "description")}


class EntryForm(CatalogForm):
    """An entry: a world and, at creation, its rulesets (ordered on the entry's page)."""

    world = forms.ModelChoiceField(
        queryset=World.objects.order_by("name"), to_field_name="slug", empty_label="Choose…"
    )
    rulesets = forms.ModelMultipleChoiceField(
        queryset=Ruleset.objects.order_by("name"),
        to_field_name="slug",
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="In this order to start with; reorder them on the entry's page.",
    )

    def __init__(self, *args: Any, creating: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not creating:
            del self.fields["rulesets"]


class PreviewForm(forms.Form):
    """Everything a preview depends on, read from the query string so it can be shared.

    NPCs come as repeated ``npc`` and ``tier`` parameters, in priority order.
    """

    entry = forms.ChoiceField(error_messages={"required": "Choose an entry to preview."})
    first_turn = forms.BooleanField(
        required=False, initial=True, help_text="Include the entry's opening (entry_start)."
    )
    token_budget = forms.IntegerField(
        min_value=0, max_value=MAX_BUDGET, initial=DEFAULT_TOKEN_BUDGET, label="Token budget"
    )
    npc_budget = forms.IntegerField(
        min_value=0, max_value=MAX_BUDGET, initial=DEFAULT_NPC_BUDGET, label="NPC budget"
    )
    block_format = forms.ChoiceField(
        choices=BLOCK_FORMATS, initial="delimited", required=False, label="Block format"
    )
    game_state = forms.CharField(required=False, strip=False, widget=forms.Textarea)
    player = forms.CharField(required=False, strip=False, widget=forms.Textarea)
    rng = forms.CharField(required=False, strip=False, widget=forms.Textarea, label="RNG")
    input = forms.CharField(required=False, strip=False, widget=forms.Textarea)

    STATE_HELP = "Text, or a JSON object (shown as key: value lines)."

    @classmethod
    def from_query(cls, query: QueryDict) -> PreviewForm:
        """The form for a preview address; a link may name only the entry."""
        if "entry" not in query:
            return cls()
        data = query.copy()
        for name in ("token_budget", "npc_budget"):
            if not data.get(name):
                data[name] = str(cls.base_fields[name].initial)
        return cls(data)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["entry"].choices = [
            ("", "Choose an entry…"),
            *Entry.objects.order_by("name").values_list("slug", "name"),
        ]
        self.npc_options = list(NPC.objects.order_by("name").values_list("slug", "name"))
        for name, label in DYNAMIC_LAYERS:
            field = self.fields[name]
            field.label = label
            field.help_text = self.STATE_HELP
            field.widget.attrs.update({"rows": 2, "class": "mono", "spellcheck": "false"})
        self.npc_errors: list[str] = []
        self.npcs: list[tuple[str, int]] = []

    def npc_rows(self) -> list[dict[str, Any]]:
        """The NPC rows to show: the ones asked for, then empty rows to add more."""
        if self.is_bound:
            slugs = self.data.getlist("npc")
            tiers = self.data.getlist("tier")
            rows = [
                {"slug": slug, "tier": tiers[i] if i < len(tiers) else "0"}
                for i, slug in enumerate(slugs)
                if slug
            ]
        else:
            rows = []
        blanks = max(3 - len(rows), 1)
        return rows + [{"slug": "", "tier": "0"} for _ in range(blanks)]

    def _clean_npcs(self) -> None:
        known = {slug for slug, _name in self.npc_options}
        slugs = self.data.getlist("npc")
        tiers = self.data.getlist("tier")
        seen: set[str] = set()
        for index, slug in enumerate(slugs):
            if not slug:
                continue
            raw = (tiers[index] if index < len(tiers) else "").strip() or "0"
            if slug not in known:
                self.npc_errors.append(f"There is no NPC '{slug}'.")
                continue
            if slug in seen:
                self.npc_errors.append(f"NPC '{slug}' is listed twice; keep one row.")
                continue
            seen.add(slug)
            try:
                tier = int(raw)
            except ValueError:
                tier = -1
            if tier < 0:
                self.npc_errors.append(f"The tier of '{slug}' must be a whole number, 0 or more.")
                continue
            self.npcs.append((slug, tier))

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        for name, label in DYNAMIC_LAYERS:
            raw = cleaned.get(name) or ""
            if raw.strip().startswith("{"):
                try:
                    cleaned[name] = _json_object(raw, label)
                except ValidationError as exc:
                    self.add_error(name, exc)
        self._clean_npcs()
        for message in self.npc_errors:
            self.add_error(None, f"NPCs: {message}")
        return cleaned

    def params(self) -> AssembleParams:
        data = self.cleaned_data
        state = {name: data[name] for name, _label in DYNAMIC_LAYERS if data.get(name)}
        return AssembleParams(
            entry=data["entry"],
            first_turn=data["first_turn"],
            token_budget=data["token_budget"],
            npc_budget=data["npc_budget"],
            npcs=tuple(self.npcs),
            state=state,
            block_format=data.get("block_format") or "delimited",
        )


class RestoreForm(forms.Form):
    revision = forms.IntegerField(min_value=1)
    expected_revision = forms.IntegerField(min_value=1)


class CompareForm(forms.Form):
    """Two revisions of a segment to compare (``a`` older, ``b`` newer, in any order)."""

    a = forms.IntegerField(min_value=1, required=False, label="From revision")
    b = forms.IntegerField(min_value=1, required=False, label="To revision")
