"""The request's ``lore`` option as form fields, shared by the preview and the scenario
form: the fields' text becomes the request's ``lore`` object, and the one request parser
(:func:`assembler.request.parse_assemble_params`) decides what it may hold, in its words.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms

from assembler.lore import DEFAULT_LORE_RECURSION, DEFAULT_LORE_SCAN_DEPTH
from assembler.request import LoreOptions
from promptadmin.studio.forms.common import optional_number

LORE_SWITCH = [("on", "On"), ("off", "Off")]
# The form field of each option (the request's ``lore.budget`` is ``lore_budget``).
LORE_OPTION_FIELDS = {
    "enabled": "lore",
    "budget": "lore_budget",
    "scan_depth": "lore_scan_depth",
    "recursion": "lore_recursion",
}
NUMBER = forms.NumberInput(attrs={"min": 0, "inputmode": "numeric"})


class LoreOptionFields(forms.Form):
    """The ``lore`` option's fields; a form showing them inherits this one."""

    # Numbers without bounds of their own: the request parser words what is out of range.
    lore = forms.ChoiceField(
        choices=LORE_SWITCH,
        required=False,
        initial="on",
        label="Lore",
        help_text="Off: no lore entry enters the prompt.",
    )
    lore_budget = optional_number(
        "Lore budget", "Tokens for the lore layer. Empty: a tenth of the token budget."
    )
    lore_scan_depth = optional_number(
        "Lore scan depth",
        f"History messages scanned for keys. Empty: {DEFAULT_LORE_SCAN_DEPTH}.",
        NUMBER,
    )
    lore_recursion = optional_number(
        "Lore recursion",
        f"Rounds of lore triggering lore. Empty: {DEFAULT_LORE_RECURSION}.",
        NUMBER,
    )

    def lore_request(self, cleaned: Mapping[str, Any]) -> dict[str, Any]:
        """The request's ``lore`` object from the fields (a field left empty: its default)."""
        request: dict[str, Any] = {}
        for option, name in LORE_OPTION_FIELDS.items():
            value = cleaned.get(name)
            if option == "enabled":
                if value == "off":
                    request[option] = False
            elif value is not None:
                request[option] = value
        return request

    @staticmethod
    def lore_initial(options: LoreOptions) -> dict[str, Any]:
        """The fields' values showing ``options``."""
        return {
            LORE_OPTION_FIELDS[option]: ("off" if value is False else value)
            for option, value in options.to_dict().items()
        }

    @staticmethod
    def lore_field(path: str) -> str | None:
        """The field an error about the request's ``path`` (``lore.budget``) goes to."""
        top, _, option = path.partition(".")
        if top != "lore":
            return None
        return LORE_OPTION_FIELDS.get(option, "lore")


def lore_words(options: LoreOptions) -> str:
    """The ``lore`` option in a few words, for lists (``off``; ``300 tokens``; ``default``).

    >>> lore_words(LoreOptions(enabled=False)), lore_words(LoreOptions(budget=300))
    ('off', '300 tokens')
    """
    if not options.enabled:
        return "off"
    words = []
    if options.budget is not None:
        words.append(f"{options.budget} tokens")
    if options.scan_depth != DEFAULT_LORE_SCAN_DEPTH:
        words.append(f"scans {options.scan_depth} messages")
    if options.recursion != DEFAULT_LORE_RECURSION:
        words.append(f"{options.recursion} rounds")
    return ", ".join(words) or "default"
