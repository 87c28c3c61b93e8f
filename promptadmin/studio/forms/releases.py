"""Forms of the releases pages: publish, move a label (roll back), compare two versions."""

from __future__ import annotations

from typing import Any

from django import forms

from promptadmin.releases.models import PRODUCTION, label_validator
from promptadmin.releases.selectors import choices

STALE_PAGE = (
    "This page does not say what it showed you: reload it to review the impact, then publish."
)


class PublishForm(forms.Form):
    label = forms.CharField(
        max_length=36,
        initial=PRODUCTION,
        validators=[label_validator],
        help_text="The label the game servers read: production unless you are staging.",
    )
    name = forms.CharField(
        max_length=64,
        required=False,
        label="Release name",
        help_text="Optional; by default r-YYYY-MM-DD.",
    )
    notes = forms.CharField(
        required=False, max_length=10_000, widget=forms.Textarea(attrs={"rows": 3})
    )
    confirm = forms.BooleanField(
        required=False, label="Publish even though expectations fail (this is recorded)"
    )
    # The working copy the impact report showed (its content hash), and when: the page
    # writes them itself, always those of the report it shows.
    reviewed = forms.RegexField(
        r"^[0-9a-f]{64}\Z",
        widget=forms.HiddenInput,
        error_messages={"required": STALE_PAGE, "invalid": STALE_PAGE},
    )
    reviewed_at = forms.DateTimeField(
        required=False, widget=forms.HiddenInput, error_messages={"invalid": STALE_PAGE}
    )
    # The playtest of the change the page showed: a failing reply expectation there asks
    # for ``confirm`` too, and the confirmation is recorded with the run.
    playtest = forms.IntegerField(required=False, min_value=1, widget=forms.HiddenInput)


class LabelMoveForm(forms.Form):
    label = forms.CharField(max_length=36, validators=[label_validator])
    release = forms.CharField(max_length=64)
    note = forms.CharField(required=False, max_length=10_000)
    confirm = forms.BooleanField(required=False, label="Even though expectations fail")


class CompareForm(forms.Form):
    before = forms.ChoiceField(label="From")
    after = forms.ChoiceField(label="To")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        options = choices()
        self.fields["before"].choices = options
        self.fields["after"].choices = options
