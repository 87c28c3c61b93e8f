"""Restoring and comparing revisions."""

from __future__ import annotations

from django import forms


class RestoreForm(forms.Form):
    revision = forms.IntegerField(min_value=1)
    expected_revision = forms.IntegerField(min_value=1)


class CompareForm(forms.Form):
    """Two revisions of a segment to compare (``a`` older, ``b`` newer, in any order)."""

    a = forms.IntegerField(min_value=1, required=False, label="From revision")
    b = forms.IntegerField(min_value=1, required=False, label="To revision")
