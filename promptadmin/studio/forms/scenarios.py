"""The scenarios page: edit a saved scenario, and pick the content to run them against."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

import assembler
from assembler.impact import EXPECTATION_KINDS, EXPECTATION_VALUE_KEYS, MAX_EXPECTATIONS
from assembler.replies import (
    MAX_REPLY_TOKENS,
    MAX_SAMPLES,
    MAX_TEMPERATURE,
    REPLY_FIELDS,
    REPLY_KINDS,
)
from promptadmin.content.models import Entry
from promptadmin.core.storedjson import object_from_text
from promptadmin.releases.models import WORKING, Scenario
from promptadmin.releases.scenarios import stored_lore
from promptadmin.releases.selectors import choices as release_choices
from promptadmin.studio.forms.common import ObjectPicker, picked_slug
from promptadmin.studio.forms.lore_options import LoreOptionFields
from promptadmin.studio.forms.preview import (
    DYNAMIC_LAYERS,
    ENTRY_PICKER,
    posted_npcs,
    with_npc_pickers,
)

#: Each kind of expectation as the form names it (the same words as the preview's).
KIND_LABELS = {
    "fits": "Fits without cuts",
    "keeps_segment": "Keeps segment #",
    "contains": "Contains text",
    "max_tokens": "At most N tokens",
    "reply_contains": "Reply contains text",
    "reply_excludes": "Reply leaves out text",
    "reply_matches": "Reply matches a pattern",
    "reply_json": "Reply is JSON, valid by a schema",
    "reply_max_tokens": "Reply has at most N tokens",
    "judge": "The model judges the reply by a rubric",
}
#: Where each kind of expectation keeps its value: the prompt's, then the reply's.
VALUE_KEYS = {**EXPECTATION_VALUE_KEYS, **REPLY_FIELDS}
# Rows shown beyond those filled, to add more.
BLANK_ROWS = 2


class RunForm(forms.Form):
    """Which content every scenario is run against: the working copy, a label, a release."""

    release = forms.ChoiceField(label="Run against", required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["release"].choices = release_choices()

    def content(self) -> str:
        return self.cleaned_data.get("release") or WORKING


class ScenarioForm(LoreOptionFields):
    """A saved scenario's settings and expectations.

    NPCs come as repeated ``npc`` and ``tier`` fields (priority order), expectations as
    repeated ``expect_kind`` and ``expect_value`` fields; empty rows are ignored.
    """

    name = forms.CharField(max_length=100, label="Name")
    # A picker (a game has thousands of entries): an entry's slug, or its name typed.
    entry = forms.CharField(widget=ObjectPicker(("entry",), bare=True))
    first_turn = forms.BooleanField(
        required=False, help_text="Include the entry's opening (entry_start)."
    )
    token_budget = forms.IntegerField(min_value=0, max_value=assembler.MAX_BUDGET)
    npc_budget = forms.IntegerField(min_value=0, max_value=assembler.MAX_BUDGET, label="NPC budget")
    game_state = forms.CharField(required=False, strip=False, widget=forms.Textarea)
    player = forms.CharField(required=False, strip=False, widget=forms.Textarea)
    rng = forms.CharField(required=False, strip=False, widget=forms.Textarea)
    input = forms.CharField(required=False, strip=False, widget=forms.Textarea)
    # Checked by the scenario services (the one request parser), as the API's are.
    conversation = forms.CharField(
        required=False,
        label="Conversation",
        help_text="Playtests send its history to the model as chat messages, before the "
        "input. Empty: none.",
        widget=forms.TextInput(attrs={"class": "mono", "spellcheck": "false"}),
    )
    # How a playtest asks the model; the scenario services check them (assembler.replies).
    # Left out (empty): unchanged.
    temperature = forms.FloatField(required=False, min_value=0, max_value=MAX_TEMPERATURE)
    max_tokens = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_REPLY_TOKENS,
        label="Reply tokens",
        help_text="At most.",
    )
    seed = forms.IntegerField(required=False, help_text="Sent when set and the model takes one.")
    samples = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_SAMPLES,
        help_text="Replies asked for on each side.",
    )
    expected_revision = forms.IntegerField(widget=forms.HiddenInput, min_value=1)

    kinds = [(kind, KIND_LABELS[kind]) for kind in EXPECTATION_KINDS]
    reply_kinds = [(kind, KIND_LABELS[kind]) for kind in REPLY_KINDS]

    def __init__(self, data: Any = None, *, scenario: Scenario) -> None:
        super().__init__(data, initial=self.initial_of(scenario))
        self.scenario = scenario
        for name, label in DYNAMIC_LAYERS:
            field = self.fields[name]
            field.label = label
            field.help_text = "Text, or a JSON object."
            field.widget.attrs.update({"rows": 2, "class": "mono", "spellcheck": "false"})
        self.npcs: list[dict[str, Any]] = []
        self.expectations: list[dict[str, Any]] = []

    @staticmethod
    def initial_of(scenario: Scenario) -> dict[str, Any]:
        state = scenario.state if isinstance(scenario.state, dict) else {}
        return {
            "name": scenario.name,
            "entry": scenario.entry,
            "first_turn": scenario.first_turn,
            "token_budget": scenario.token_budget,
            "npc_budget": scenario.npc_budget,
            "expected_revision": scenario.revision,
            **LoreOptionFields.lore_initial(stored_lore(scenario)),
            "conversation": scenario.conversation,
            "temperature": scenario.temperature,
            "max_tokens": scenario.max_tokens,
            "seed": scenario.seed,
            "samples": scenario.samples,
            **{
                name: value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
                for name, value in state.items()
                if value is not None
            },
        }

    def clean_entry(self) -> str:
        """The entry's slug; the scenario's own entry stands even if deleted since (shown
        as it is, for the author to choose another)."""
        value = self.cleaned_data["entry"]
        slug = picked_slug(ENTRY_PICKER, value, None)
        if slug != self.scenario.entry and not Entry.objects.filter(slug=slug).exists():
            raise ValidationError(f"No entry is called '{value}'; choose from the list.")
        return slug

    def npc_rows(self) -> list[dict[str, Any]]:
        if self.is_bound:
            tiers = self.data.getlist("tier")
            rows = [
                {"slug": slug, "tier": tiers[i] if i < len(tiers) else "0"}
                for i, slug in enumerate(posted_npcs(self.data))
                if slug
            ]
        else:
            rows = [
                {"slug": item["npc"], "tier": item.get("tier", 0)} for item in self.scenario.npcs
            ]
        return with_npc_pickers(rows + [{"slug": "", "tier": "0"} for _ in range(BLANK_ROWS)])

    def expectation_rows(self) -> list[dict[str, Any]]:
        if self.is_bound:
            values = self.data.getlist("expect_value")
            rows = [
                {"kind": kind, "value": values[i] if i < len(values) else ""}
                for i, kind in enumerate(self.data.getlist("expect_kind"))
                if kind
            ]
        else:
            rows = []
            for item in self.scenario.expectations:
                key = VALUE_KEYS.get(item.get("kind", ""))
                value = item.get(key, "") if key else ""
                if not isinstance(value, str | int):  # a JSON schema: shown as JSON
                    value = json.dumps(value, ensure_ascii=False)
                rows.append({"kind": item.get("kind"), "value": value})
        return rows + [{"kind": "", "value": ""} for _ in range(BLANK_ROWS)]

    def _clean_npcs(self) -> None:
        tiers = self.data.getlist("tier")
        for index, slug in enumerate(posted_npcs(self.data)):
            if not slug:
                continue
            raw = (tiers[index] if index < len(tiers) else "").strip() or "0"
            try:
                tier = int(raw)
            except ValueError:
                self.add_error(None, f"NPCs: the tier of '{slug}' must be a whole number.")
                continue
            self.npcs.append({"npc": slug, "tier": tier})

    def _clean_expectations(self) -> None:
        values = self.data.getlist("expect_value")
        rows = [
            (kind, values[i].strip() if i < len(values) else "")
            for i, kind in enumerate(self.data.getlist("expect_kind"))
            if kind
        ]
        if len(rows) > MAX_EXPECTATIONS:
            self.add_error(None, f"A scenario has at most {MAX_EXPECTATIONS} expectations.")
            return
        for number, (kind, value) in enumerate(rows, start=1):
            key = VALUE_KEYS.get(kind)
            if kind not in VALUE_KEYS:
                self.add_error(None, f"Expectation {number}: choose what to expect.")
                continue
            item: dict[str, Any] = {"kind": kind}
            if key in ("segment", "tokens"):
                try:
                    item[key] = int(value)
                except ValueError:
                    self.add_error(
                        None, f"Expectation {number} ({KIND_LABELS[kind]}): a whole number."
                    )
                    continue
            elif key == "schema":
                try:
                    item[key] = object_from_text(value, f"Expectation {number} (schema)")
                except ValidationError as exc:
                    self.add_error(None, exc)
                    continue
            elif key is not None:
                item[key] = value
            self.expectations.append(item)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        self.state: dict[str, Any] = {}
        for name, label in DYNAMIC_LAYERS:
            raw = cleaned.get(name) or ""
            if not raw.strip():
                continue
            if raw.strip().startswith("{"):
                try:
                    self.state[name] = object_from_text(raw, label)
                except ValidationError as exc:
                    self.add_error(name, exc)
            else:
                self.state[name] = raw
        self._clean_npcs()
        self._clean_expectations()
        return cleaned

    def changes(self) -> dict[str, Any]:
        """The scenario's fields, as ``scenario_update`` takes them."""
        data = self.cleaned_data
        return {
            "name": data["name"],
            "entry": data["entry"],
            "first_turn": data["first_turn"],
            "token_budget": data["token_budget"],
            "npc_budget": data["npc_budget"],
            "lore": self.lore_request(data),
            "npcs": self.npcs,
            "state": self.state,
            "expectations": self.expectations,
            "conversation": data["conversation"],
            "seed": data["seed"],
            **{
                name: data[name]
                for name in ("temperature", "max_tokens", "samples")
                if data[name] is not None
            },
        }

    def add_service_error(self, error: ValidationError) -> None:
        """A problem the service found, at the field it names (``state.player``,
        ``npcs.0.tier``, ``expectations.1.text``...)."""
        for key, problems in error.message_dict.items():
            parts = key.split(".")
            if self.lore_field(key):
                self.add_error(self.lore_field(key), problems)
            elif parts[0] in self.fields:
                self.add_error(parts[0], problems)
            elif parts[0] == "state" and len(parts) > 1 and parts[1] in self.fields:
                self.add_error(parts[1], problems)
            elif parts[0] == "expectations" and len(parts) > 1 and parts[1].isdigit():
                self.add_error(None, [f"Expectation {int(parts[1]) + 1}: {p}" for p in problems])
            elif parts[0] == "npcs":
                self.add_error(None, [f"NPCs: {problem}" for problem in problems])
            else:
                self.add_error(None, problems)
