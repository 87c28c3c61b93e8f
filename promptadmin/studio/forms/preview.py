"""The preview's settings, read from the query string so a preview is a link, and the
form that saves a preview as a scenario.

The form turns the query string's text into JSON values (numbers, a typed-in JSON
object); what a preview request may hold is then decided by the one request parser,
:func:`assembler.request.parse_assemble_params`, as for the API: the studio refuses what
the API refuses, in the same words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.http import QueryDict

import assembler
from assembler.impact import MAX_EXPECTATION_TEXT
from assembler.render import LAYER_TITLES, block_open
from assembler.request import (
    DEFAULT_BLOCK_FORMAT,
    MAX_CONVERSATION_KEY,
    AssembleParams,
    RequestError,
    parse_assemble_params,
)
from promptadmin.content.models import NPC, EntryNpc
from promptadmin.core.storedjson import object_from_text
from promptadmin.core.text import normalize_newlines
from promptadmin.releases.models import MAX_SCENARIO_NAME, WORKING
from promptadmin.releases.selectors import choices as release_choices
from promptadmin.studio.forms.common import (
    BUDGET,
    ObjectPicker,
    optional_number,
    picked_labels,
    picked_slug,
)
from promptadmin.studio.forms.lore_options import LoreOptionFields

# The dynamic layers as the form shows them, titled as the assembler titles them.
DYNAMIC_LAYERS = tuple((scope, LAYER_TITLES[scope]) for scope in assembler.DYNAMIC_SCOPES)
# Each block format, shown by how it opens the core layer.
BLOCK_FORMATS = [(name, f"{block_open('core', name)} ({name})") for name in assembler.BLOCK_FORMATS]
ENTRY_PICKER = ObjectPicker(("entry",), bare=True)
NPC_PICKER = ObjectPicker(("npc",), bare=True)


def posted_npcs(data: QueryDict) -> list[str]:
    """Each NPC row's choice (rows of pickers named ``npc``, beside their ``tier``), as a
    slug; as typed when it names no NPC, for the request's checks to say so."""
    typed = data.getlist("npc_search")
    return [
        picked_slug(NPC_PICKER, picked, typed[i] if i < len(typed) else "")
        for i, picked in enumerate(data.getlist("npc"))
    ]


def with_npc_pickers(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` (each with an NPC's ``slug``), each given its NPC ``picker`` (a game has
    thousands of NPCs: not a select of them all), labelled in one query."""
    picker = ObjectPicker(("npc",), bare=True)
    picker.labels = picked_labels("npc", (row["slug"] for row in rows))
    for number, row in enumerate(rows, start=1):
        row["picker"] = picker.render("npc", row["slug"], {"id": f"npc-{number}"})
    return rows


class PreviewForm(LoreOptionFields):
    """Everything a preview depends on, read from the query string so it can be shared.

    NPCs come as repeated ``npc`` and ``tier`` parameters, in priority order.
    """

    # A picker (a game has thousands of entries); its slug, or the text typed, is judged
    # by the request parser and the assembly.
    entry = forms.CharField(
        widget=ObjectPicker(("entry",), bare=True),
        error_messages={"required": "Choose an entry to preview."},
    )
    release = forms.ChoiceField(
        required=False,
        label="Content",
        help_text="The working copy, or what a label or a release serves.",
    )
    first_turn = forms.BooleanField(
        required=False, initial=True, help_text="Include the entry's opening (entry_start)."
    )
    # Numbers without bounds of their own: the request parser words what is out of range.
    token_budget = forms.IntegerField(
        widget=BUDGET, initial=assembler.DEFAULT_TOKEN_BUDGET, label="Token budget"
    )
    npc_budget = forms.IntegerField(
        widget=BUDGET, initial=assembler.DEFAULT_NPC_BUDGET, label="NPC budget"
    )
    block_format = forms.ChoiceField(
        choices=BLOCK_FORMATS, initial=DEFAULT_BLOCK_FORMAT, required=False, label="Block format"
    )
    conversation = forms.CharField(
        required=False,
        widget=forms.TextInput(attrs={"maxlength": MAX_CONVERSATION_KEY}),
        label="Conversation",
        help_text="A conversation's key: its summary and recent messages make the history layer.",
    )
    history_budget = optional_number("History budget", "Empty: the conversation's own.")
    game_state = forms.CharField(required=False, strip=False, widget=forms.Textarea)
    player = forms.CharField(required=False, strip=False, widget=forms.Textarea)
    rng = forms.CharField(required=False, strip=False, widget=forms.Textarea, label="RNG")
    input = forms.CharField(required=False, strip=False, widget=forms.Textarea)

    STATE_HELP = "Text, or a JSON object (shown as key: value lines)."

    @classmethod
    def from_query(cls, query: QueryDict) -> PreviewForm:
        """The form for a preview address; a link may name only the entry.

        A link that names no NPCs starts from the entry's cast (its usual NPCs, in
        priority order, at their usual tiers).
        """
        if "entry" not in query and "entry_search" not in query:
            return cls()
        data = query.copy()
        # What the pickers chose, as slugs (a name typed without JavaScript is looked up).
        data["entry"] = picked_slug(ENTRY_PICKER, data.get("entry"), data.get("entry_search"))
        if "npc" in data:
            data.setlist("npc", posted_npcs(data))
        for name in ("entry_search", "npc_search"):
            data.pop(name, None)
        for name in ("token_budget", "npc_budget"):
            if not data.get(name):
                data[name] = str(cls.base_fields[name].initial)
        if "npc" not in data:
            links = EntryNpc.objects.filter(entry__slug=data.get("entry", "")).order_by("position")
            cast = list(links.values_list("npc__slug", "tier"))
            data.setlist("npc", [slug for slug, _tier in cast])
            data.setlist("tier", [str(tier) for _slug, tier in cast])
        return cls(data)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["release"].choices = release_choices()
        for name, label in DYNAMIC_LAYERS:
            field = self.fields[name]
            field.label = label
            field.help_text = self.STATE_HELP
            field.widget.attrs.update({"rows": 2, "class": "mono", "spellcheck": "false"})
        self.npc_errors: list[str] = []
        self.request_error: RequestError | None = None
        self._params: AssembleParams | None = None

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
        return with_npc_pickers(rows + [{"slug": "", "tier": "0"} for _ in range(blanks)])

    def npc_names(self) -> dict[str, str]:
        """The names of the NPCs asked for, by slug."""
        slugs = self.data.getlist("npc") if self.is_bound else []
        return dict(NPC.objects.filter(slug__in=slugs).values_list("slug", "name"))

    def _npc_requests(self) -> list[dict[str, Any]]:
        """The NPC rows asked for, as a request holds them (a tier that is not a number
        is left as typed, for the request parser to refuse)."""
        tiers = self.data.getlist("tier")
        requests = []
        for index, slug in enumerate(self.data.getlist("npc")):
            if not slug:
                continue
            raw = (tiers[index] if index < len(tiers) else "").strip() or "0"
            try:
                tier: Any = int(raw)
            except ValueError:
                tier = raw
            requests.append({"npc": slug, "tier": tier})
        return requests

    def _request(self, cleaned: dict[str, Any]) -> dict[str, Any]:
        """The preview request the settings make; a setting refused already is left out
        (it has its error, and the request its default)."""
        state = {name: cleaned[name] for name, _label in DYNAMIC_LAYERS if cleaned.get(name)}
        request = {
            "entry": cleaned["entry"],
            "npcs": self._npc_requests(),
            "state": state,
            "policy": {"block_format": cleaned.get("block_format") or DEFAULT_BLOCK_FORMAT},
            "conversation": cleaned.get("conversation") or None,
            "release": cleaned.get("release") or WORKING,
            "lore": self.lore_request(cleaned),
        }
        for name in ("first_turn", "token_budget", "npc_budget", "history_budget"):
            if cleaned.get(name) is not None:
                request[name] = cleaned[name]
        return request

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        for name, label in DYNAMIC_LAYERS:
            # What a saved scenario would store (core.text): a preview counts the same.
            raw = cleaned[name] = normalize_newlines(cleaned.get(name) or "")
            if raw.strip().startswith("{"):
                try:
                    # Typed JSON is read here; the request parser checks what it holds.
                    cleaned[name] = object_from_text(raw, label, checked=False)
                except ValidationError as exc:
                    self.add_error(name, exc)
        if "entry" in cleaned:
            try:
                self._params = parse_assemble_params(self._request(cleaned))
            except RequestError as error:
                self.request_error = error
                self.add_request_errors(error.errors)
        return cleaned

    def add_request_errors(self, errors: Mapping[str, Sequence[str]]) -> None:
        """Show what is wrong with the request (from the request parser, or from the
        assembly: an unknown entry or NPC) at the setting it comes from."""
        rows = self._npc_requests()
        for path, messages in errors.items():
            top, _, rest = path.partition(".")
            if top == "npcs":
                index = rest.partition(".")[0]
                if index.isdigit() and int(index) < len(rows):  # name the row's NPC
                    messages = [f"{rows[int(index)]['npc']}: {message}" for message in messages]
                self.npc_errors.extend(messages)
                self.add_error(None, [f"NPCs: {message}" for message in messages])
                continue
            name = rest if top in ("state", "policy") and rest else top
            name = self.lore_field(path) or name
            self.add_error(name if name in self.fields else None, list(messages))

    def params(self) -> AssembleParams:
        """The preview request (once the form is valid)."""
        assert self._params is not None
        return self._params


class SaveScenarioForm(forms.Form):
    """Save the preview shown as a named scenario, with the expectations every release's
    impact report checks. Each expectation is optional; the preview's settings come from
    its own form."""

    prefix = "scenario"

    name = forms.CharField(
        max_length=MAX_SCENARIO_NAME,
        label="Scenario name",
        error_messages={"required": "Name the scenario."},
    )
    fits = forms.BooleanField(required=False, label="Fits without cuts")
    keeps_segment = forms.IntegerField(
        required=False,
        min_value=1,
        label="Keeps segment #",
        help_text="A segment's number: it must stay in the prompt.",
        widget=forms.NumberInput(attrs={"inputmode": "numeric"}),
    )
    contains = forms.CharField(
        required=False,
        max_length=MAX_EXPECTATION_TEXT,
        label="Contains text",
        help_text="The prompt must contain this text.",
    )
    max_tokens = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=assembler.MAX_BUDGET,
        label="At most N tokens",
        widget=forms.NumberInput(attrs={"inputmode": "numeric"}),
    )

    def expectations(self) -> list[tuple[str, dict[str, Any]]]:
        """The expectations asked for, each with the field it came from."""
        data = self.cleaned_data
        found: list[tuple[str, dict[str, Any]]] = []
        if data.get("fits"):
            found.append(("fits", {"kind": "fits"}))
        if data.get("keeps_segment") is not None:
            found.append(
                ("keeps_segment", {"kind": "keeps_segment", "segment": data["keeps_segment"]})
            )
        if data.get("contains"):
            found.append(("contains", {"kind": "contains", "text": data["contains"]}))
        if data.get("max_tokens") is not None:
            found.append(("max_tokens", {"kind": "max_tokens", "tokens": data["max_tokens"]}))
        return found
