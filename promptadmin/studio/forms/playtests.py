"""The playtest form: which scenarios, on which release, compared with which."""

from __future__ import annotations

from typing import Any

from django import forms

from promptadmin.releases.models import PRODUCTION, WORKING, Scenario
from promptadmin.releases.selectors import choices


class PlaytestForm(forms.Form):
    scenarios = forms.MultipleChoiceField(
        required=False,
        help_text="None ticked: every saved scenario.",
        widget=forms.CheckboxSelectMultiple,
    )
    release = forms.ChoiceField(initial=WORKING)
    compare_to = forms.ChoiceField(
        required=False, label="Compare with", help_text="Optional: its replies side by side."
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        names = list(Scenario.objects.order_by("name").values_list("name", flat=True)[:200])
        self.fields["scenarios"].choices = [(name, name) for name in names]
        versions = choices()
        self.fields["release"].choices = versions
        self.fields["compare_to"].choices = [("", "Nothing"), *versions]


def before_and_after() -> PlaytestForm:
    """The form of a scenario page's "Playtest": the working copy, compared with what is
    live (the production label) when there is one."""
    form = PlaytestForm()
    if any(value == PRODUCTION for value, _ in form.fields["compare_to"].choices):
        form.initial["compare_to"] = PRODUCTION
    return form
