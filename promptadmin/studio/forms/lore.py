"""The lore page's filters, batch edit and test box, and the lore entry editor."""

from __future__ import annotations

from typing import Any

from django import forms
from django.template.defaultfilters import filesizeformat

from assembler.lore import (
    MAX_LORE_GROUP_LENGTH,
    MAX_LORE_KEYS,
    MAX_LORE_PRIORITY,
    MAX_LORE_TEST_TEXT,
    MAX_LORE_TITLE_LENGTH,
    MIN_LORE_PRIORITY,
)
from assembler.request import MAX_SLUG
from promptadmin.content.models import World, is_slug
from promptadmin.lore.worldinfo import MAX_FILE_BYTES
from promptadmin.studio.forms.common import AutoDirSelect

EVERY_WORLD = "*"
"""How the pickers name "lore of every world" (no slug can be ``*``)."""


def world_choices(first: tuple[str, str]) -> list[tuple[str, str]]:
    worlds = World.objects.order_by("name", "slug")
    return [
        first,
        (EVERY_WORLD, "Every world"),
        *[(world.slug, f"{world.name} ({world.slug})") for world in worlds],
    ]


def world_of(value: str) -> World | None:
    """The world a picker's value names (None: every world, or no such world)."""
    if not value or value == EVERY_WORLD or not is_slug(value):
        return None
    return World.objects.filter(slug=value).first()


def keys_from_text(text: str) -> list[str]:
    """Keys as authors type them, one per line (blank lines ignored, each kept as typed).

    >>> keys_from_text("bell\\r\\n\\n  chapel bell \\n")
    ['bell', 'chapel bell']
    """
    return [line.strip() for line in text.splitlines() if line.strip()]


class LoreFilterForm(forms.Form):
    """The lore page's filters; every value is optional and lives in the URL."""

    q = forms.CharField(
        label="Search",
        required=False,
        max_length=200,
        widget=forms.TextInput(
            attrs={"type": "search", "placeholder": "Words in a key, title or text"}
        ),
    )
    world = forms.ChoiceField(required=False, widget=AutoDirSelect)
    group = forms.ChoiceField(required=False, widget=AutoDirSelect)
    active = forms.ChoiceField(
        label="Status",
        required=False,
        choices=[("", "Any status"), ("yes", "Active"), ("no", "Inactive")],
    )

    def __init__(self, *args: Any, groups: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["world"].choices = world_choices(("", "Any world"))
        self.fields["group"].choices = [("", "Any group"), *[(g, g) for g in groups]]

    def clean_active(self) -> bool | None:
        return {"yes": True, "no": False}.get(self.cleaned_data["active"])


class LoreForm(forms.Form):
    """Create or edit a lore entry."""

    world = forms.ChoiceField(
        required=False,
        help_text="Whose lore it is: one world's, or every world's.",
        widget=AutoDirSelect,
    )
    title = forms.CharField(
        max_length=MAX_LORE_TITLE_LENGTH,
        required=False,
        help_text="A short name authors see in lists, the preview and reports.",
    )
    keys = forms.CharField(
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 4, "class": "mono", "spellcheck": "false"}),
        help_text=f"Words or phrases that bring the entry in, one per line (1 to {MAX_LORE_KEYS}; "
        "none for a constant entry).",
    )
    content = forms.CharField(
        strip=False,
        required=False,
        widget=forms.Textarea(attrs={"rows": 10, "class": "mono", "spellcheck": "true"}),
        help_text="What enters the prompt's lore layer when a key fires.",
    )
    whole_words = forms.BooleanField(
        required=False,
        initial=True,
        label="Whole words",
        help_text="'bell' fires in \"bell's\" but not in 'bells'.",
    )
    case_sensitive = forms.BooleanField(required=False, label="Case sensitive")
    priority = forms.IntegerField(
        initial=0,
        min_value=MIN_LORE_PRIORITY,
        max_value=MAX_LORE_PRIORITY,
        help_text="Higher enters the lore budget first and is left out last.",
    )
    group = forms.CharField(
        max_length=MAX_LORE_GROUP_LENGTH,
        required=False,
        help_text="Of a group's entries fired on a turn, only the highest priority enters.",
    )
    constant = forms.BooleanField(required=False, help_text="Always in, no key needed.")
    recursive = forms.BooleanField(
        required=False, initial=True, help_text="Its text may fire other entries."
    )
    active = forms.BooleanField(
        required=False, initial=True, help_text="Inactive entries never enter a prompt."
    )
    expected_revision = forms.IntegerField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args: Any, editing: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["world"].choices = world_choices(("", "Choose…"))[1:]
        if editing:
            self.fields["expected_revision"].required = True

    def clean_world(self) -> World | None:
        value = self.cleaned_data["world"]
        if value == EVERY_WORLD or not value:
            return None
        world = world_of(value)
        if world is None:
            raise forms.ValidationError("That world no longer exists; choose another.")
        return world

    def clean_keys(self) -> list[str]:
        return keys_from_text(self.cleaned_data["keys"])

    def service_fields(self) -> dict[str, Any]:
        """The cleaned values as the lore services take them."""
        data = self.cleaned_data
        return {name: data[name] for name in EDITABLE}


EDITABLE = (
    "world",
    "title",
    "keys",
    "content",
    "whole_words",
    "case_sensitive",
    "priority",
    "group",
    "constant",
    "recursive",
    "active",
)


class LoreBatchForm(forms.Form):
    """Set the group, priority or active flag of the entries ticked on the lore page;
    each ``entry`` is ``id:revision`` (the revision the author saw)."""

    entry = forms.MultipleChoiceField(required=False)
    set_group = forms.BooleanField(required=False, label="Set the group")
    group = forms.CharField(max_length=MAX_LORE_GROUP_LENGTH, required=False)
    set_priority = forms.BooleanField(required=False, label="Set the priority")
    priority = forms.IntegerField(
        required=False, min_value=MIN_LORE_PRIORITY, max_value=MAX_LORE_PRIORITY
    )
    set_active = forms.ChoiceField(
        required=False,
        label="Status",
        choices=[("", "Leave as is"), ("yes", "Make active"), ("no", "Make inactive")],
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Any id:revision pair is offered: the service says which entries do not exist.
        values = self.data.getlist("entry") if self.is_bound else []
        self.fields["entry"].choices = [(value, value) for value in values]

    def clean_entry(self) -> dict[int, int]:
        revisions = {}
        for value in self.cleaned_data["entry"]:
            pk, _, revision = value.partition(":")
            if not (pk.isdigit() and revision.isdigit()) or len(pk) > 18 or len(revision) > 9:
                raise forms.ValidationError("A selected entry could not be read; reload the page.")
            revisions[int(pk)] = int(revision)
        if not revisions:
            raise forms.ValidationError("Tick the entries to change.")
        return revisions

    def changes(self) -> dict[str, Any]:
        data = self.cleaned_data
        changes: dict[str, Any] = {}
        if data.get("set_group"):
            changes["group"] = data.get("group") or ""
        if data.get("set_priority"):
            if data.get("priority") is None:
                self.add_error("priority", "Give the priority to set.")
            else:
                changes["priority"] = data["priority"]
        if data.get("set_active"):
            changes["active"] = data["set_active"] == "yes"
        return changes


class LoreTestForm(forms.Form):
    """The "test a line" box: a text, and the world whose lore it is tested against."""

    text = forms.CharField(
        required=False,
        strip=False,
        max_length=MAX_LORE_TEST_TEXT,
        label="Test a line",
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "Type what a player might say…"}),
    )
    world = forms.CharField(required=False, max_length=MAX_SLUG)


class LoreImportForm(forms.Form):
    """Import a SillyTavern World Info file into a world: a dry run (what would change)
    or the import itself, by the button pressed."""

    world = forms.ChoiceField(widget=AutoDirSelect, error_messages={"required": "Choose a world."})
    file = forms.FileField(
        label="World Info file",
        help_text=f"A SillyTavern World Info JSON file, up to {filesizeformat(MAX_FILE_BYTES)}.",
        error_messages={"required": "Choose a file to import."},
        widget=forms.ClearableFileInput(attrs={"accept": ".json,application/json"}),
    )
    action = forms.ChoiceField(
        choices=[("dry_run", "Dry run"), ("import", "Import")],
        error_messages={"required": "Choose Dry run or Import."},
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Its own ids: the Lore page shows it beside the filters, which have a world too.
        kwargs.setdefault("auto_id", "import_%s")
        super().__init__(*args, **kwargs)
        worlds = World.objects.order_by("name", "slug").values_list("slug", "name")
        self.fields["world"].choices = [
            ("", "Choose a world…"),
            *[(slug, f"{name} ({slug})") for slug, name in worlds],
        ]

    @property
    def dry_run(self) -> bool:
        return self.cleaned_data.get("action") != "import"
