"""Entries: a catalog object with a world and ordered rulesets."""

from __future__ import annotations

from typing import Any

from django import forms

from promptadmin.content.models import Ruleset
from promptadmin.core.templatetags.bidi import bdi
from promptadmin.studio.forms.catalog import CatalogForm
from promptadmin.studio.forms.common import PickedObjectField


class EntryForm(CatalogForm):
    """An entry: a world and, at creation, its rulesets (ordered on the entry's page)."""

    field_order = ("name", "slug", "world", "description", "rulesets")

    # A picker, not a select: a game may have hundreds of worlds.
    world = PickedObjectField("world")
    rulesets = forms.ModelMultipleChoiceField(
        queryset=Ruleset.objects.order_by("name"),
        to_field_name="slug",
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="In this order to start with; reorder them on the entry's page.",
    )

    def __init__(self, *args: Any, creating: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, editing=not creating, **kwargs)
        if creating:
            self.fields["rulesets"].label_from_instance = lambda ruleset: bdi(ruleset.name)
        if not creating:
            del self.fields["rulesets"]
