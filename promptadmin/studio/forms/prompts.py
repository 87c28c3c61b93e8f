"""Forms of the registered-prompt pages: prompt, version editor, labels, compare, playground.

The version editor's user templates are rows of (name, text) fields, ``template_name_N``
and ``template_text_N``: one row per template of the version it starts from, plus an
empty row to add one. A row with neither name nor text is ignored.
"""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.http import QueryDict

from assembler.request import DEFAULT_TEMPLATE, INT32, RENDER_FORMATS
from assembler.templates import SYNTAXES
from promptadmin.core.storedjson import object_from_text

TEMPLATE_ROW = re.compile(r"^template_(name|text)_([0-9]{1,3})$")
MAX_ROWS = 60
SYNTAX_LABELS = {"curly": "{{ name }} (curly)", "format": "{name} (format)"}
_SPLIT = re.compile(r"[\s,]+")


def _names(text: str) -> list[str]:
    return [name for name in _SPLIT.split(text.strip()) if name]


def json_object_field(label: str, help_text: str) -> forms.CharField:
    return forms.CharField(
        label=label,
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false", "class": "mono"}),
        help_text=help_text,
    )


class PromptForm(forms.Form):
    component = forms.CharField(max_length=64, help_text="e.g. verifier")
    agent = forms.CharField(max_length=64, help_text="e.g. judge")
    task_type = forms.CharField(
        max_length=64, required=False, help_text="Empty for the default prompt of the agent."
    )
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    expected_system = forms.CharField(
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Optional: every version's system text must equal it exactly.",
    )

    def service_fields(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "component": data["component"],
            "agent": data["agent"],
            "task_type": data["task_type"] or None,
            "description": data["description"],
            "expected_system": data["expected_system"] or None,
        }


class VersionForm(forms.Form):
    syntax = forms.ChoiceField(
        choices=[(syntax, SYNTAX_LABELS[syntax]) for syntax in SYNTAXES],
        initial="curly",
    )
    system = forms.CharField(
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 6, "class": "content-field"}),
        label="System template",
    )
    variables = forms.CharField(
        required=False,
        label="Declared variables",
        help_text="What a caller must pass, separated by commas or spaces; empty: exactly "
        "the variables the templates use (listed under Checks).",
    )
    task = forms.CharField(
        max_length=64,
        required=False,
        help_text="Task name for adapter instructions (e.g. parsing).",
    )
    config = json_object_field(
        "Config (JSON object)", "Free-form settings served with the version."
    )
    commit_message = forms.CharField(required=False, max_length=10_000)
    labels = forms.CharField(
        required=False, help_text="Labels to put on the new version, e.g. staging."
    )

    def __init__(self, *args: Any, templates: dict[str, str] | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        data: QueryDict | dict[str, Any] = self.data if self.is_bound else {}
        if self.is_bound:
            rows = sorted(
                {
                    int(m[2])
                    for key in data
                    if (m := TEMPLATE_ROW.match(key)) and int(m[2]) < MAX_ROWS
                }
            )
            self.rows = [
                (data.get(f"template_name_{i}", ""), data.get(f"template_text_{i}", ""))
                for i in rows
            ]
        else:
            self.rows = list((templates or {DEFAULT_TEMPLATE: ""}).items())
        if not self.is_bound or all(name or text for name, text in self.rows):
            self.rows.append(("", ""))
        self.template_errors: list[str] = []

    def clean_config(self) -> dict[str, Any]:
        raw = self.cleaned_data["config"]
        return object_from_text(raw, "Config") if raw else {}

    def clean_variables(self) -> list[str] | None:
        text = self.cleaned_data["variables"]
        return _names(text) if text.strip() else None

    def clean_labels(self) -> list[str]:
        return _names(self.cleaned_data["labels"])

    def user_templates(self) -> dict[str, str]:
        templates: dict[str, str] = {}
        for name, text in self.rows:
            name = name.strip()
            if not name and not text:
                continue
            if not name:
                self.template_errors.append("A template has text but no name.")
            elif name in templates:
                self.template_errors.append(f"Two templates are named '{name}'.")
            else:
                templates[name] = text
        return templates

    def row_fields(self) -> list[dict[str, Any]]:
        return [
            {"index": i, "name": name, "text": text} for i, (name, text) in enumerate(self.rows)
        ]


class LabelForm(forms.Form):
    name = forms.CharField(max_length=36, label="Label")
    version = forms.IntegerField(min_value=1, max_value=INT32)


class LabelRemoveForm(forms.Form):
    name = forms.CharField(max_length=36)


class CompareForm(forms.Form):
    a = forms.IntegerField(min_value=1, max_value=INT32, label="Compare version")
    b = forms.IntegerField(min_value=1, max_value=INT32, label="with version")


FORMAT_LABELS = {"messages": "Messages", "text": "Raw texts"}


class PlaygroundForm(forms.Form):
    """The version (``label:NAME`` or ``version:N``), template, interface and the
    caller's inputs; one text field per variable is added by the view (``var_NAME``)."""

    source = forms.CharField(label="Version")
    template = forms.CharField(required=False)
    interface = forms.CharField(required=False)
    user_instructions = forms.CharField(
        required=False, strip=False, widget=forms.Textarea(attrs={"rows": 2})
    )
    instruction_context = json_object_field(
        "Instruction context (JSON object)",
        'Values adapter instructions use, e.g. {"json_schema": {...}}; missing keys render empty.',
    )
    format = forms.ChoiceField(
        choices=[(name, FORMAT_LABELS[name]) for name in RENDER_FORMATS],
        initial="messages",
        required=False,
    )

    def __init__(self, *args: Any, variables: list[str] = (), **kwargs: Any):  # type: ignore[assignment]
        super().__init__(*args, **kwargs)
        for name in variables:
            self.fields[f"var_{name}"] = forms.CharField(
                label=name, required=False, strip=False, widget=forms.Textarea(attrs={"rows": 2})
            )
        self.variable_names = list(variables)

    def clean_instruction_context(self) -> dict[str, Any]:
        raw = self.cleaned_data["instruction_context"]
        return object_from_text(raw, "Instruction context") if raw else {}

    def values(self) -> dict[str, str]:
        """The variables the author filled (an empty field is left out, so it is reported
        as missing rather than rendered empty)."""
        return {
            name: self.cleaned_data[f"var_{name}"]
            for name in self.variable_names
            if self.cleaned_data.get(f"var_{name}")
        }
