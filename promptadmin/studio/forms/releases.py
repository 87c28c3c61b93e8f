"""Forms of the releases pages: publish, move a label (roll back), compare two versions."""

from __future__ import annotations

from typing import Any

from django import forms

from promptadmin.releases.models import PRODUCTION, ReleaseLabel, label_validator
from promptadmin.releases.selectors import choices

STALE_PAGE = (
    "This page does not say what it showed you: reload it to review the impact, then publish."
)


#: The "New label…" choice ('+' is never part of a label).
NEW_LABEL = "+new"


def label_names() -> list[str]:
    """Every release label, production first (offered even before it is first set)."""
    names = ReleaseLabel.objects.order_by("name").values_list("name", flat=True)
    return [PRODUCTION, *(name for name in names if name != PRODUCTION)]


class LabelPickForm(forms.Form):
    """A label picked among the existing ones, or a new one named beside: a typo cannot
    make a label nobody meant."""

    label = forms.ChoiceField(label="Label")
    new_label = forms.CharField(
        max_length=36,
        required=False,
        validators=[label_validator],
        label="New label",
        help_text="Lowercase letters, digits, '_', '.' or '-' (e.g. 'staging').",
    )

    def __init__(self, *args: Any, names: list[str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        names = label_names() if names is None else names
        self.fields["label"].choices = [(n, n) for n in names] + [(NEW_LABEL, "New label…")]
        # studio.js shows the new label's field only while "New label…" is chosen.
        self.fields["label"].widget.attrs["data-new-label"] = ""

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("label") == NEW_LABEL:
            new = cleaned.get("new_label")
            if new:
                cleaned["label"] = new
            elif "new_label" not in self.errors:
                self.add_error("new_label", "Name the new label (e.g. 'staging').")
        return cleaned

    def label_value(self) -> str:
        """The label the form names as posted (or first shown), a new one by its name."""
        value = self["label"].value() or PRODUCTION
        return (self["new_label"].value() or "") if value == NEW_LABEL else value


class PublishForm(LabelPickForm):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields[
            "label"
        ].help_text = "The label the game servers read: production unless you are staging."
        # Choosing another label shows the impact against what it points at (studio.js).
        self.fields["label"].widget.attrs["data-reload-report"] = ""

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


class LabelMoveForm(LabelPickForm):
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
