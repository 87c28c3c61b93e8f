"""Worlds, rulesets and NPCs: slug, name and description."""

from __future__ import annotations

from typing import Any

from django import forms


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
    # The revision the form was loaded at: a save from an older copy is merged or refused.
    expected_revision = forms.IntegerField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args: Any, editing: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not editing:
            # studio.js suggests the slug from the name until the author types one.
            self.fields["slug"].widget.attrs["data-slug-from"] = self["name"].auto_id
        if editing:
            self.fields["expected_revision"].required = True
            self.fields["expected_revision"].error_messages["required"] = (
                "This form did not say which version you edited; reload the page and redo "
                "your change."
            )

    def service_fields(self) -> dict[str, Any]:
        return {name: self.cleaned_data[name] for name in ("slug", "name", "description")}
