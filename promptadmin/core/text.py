"""The one rule for text people write: it is stored with ``\\n`` line endings.

Browsers submit a textarea's lines ended by ``\\r\\n``, an editor on Windows saves them so,
an old export may end them with a lone ``\\r``. Stored as sent, the same words would count
other tokens, hash differently and reach a model with two kinds of line ending in one
prompt. So every service that stores what an author wrote (segments, descriptions,
templates, adapter instructions, notes, scenarios, imported rows) passes it through
:func:`normalize_newlines`, whatever the entry point (studio, API, admin, import,
Langfuse): the rule is here, once.

>>> normalize_newlines("Two guards stand at the gate.\\r\\nOne is asleep.\\rThe gate is shut.\\n")
'Two guards stand at the gate.\\nOne is asleep.\\nThe gate is shut.\\n'

Anything that is not text is returned as it is, for the service to refuse in its own words:

>>> normalize_newlines(7)
7
"""

from __future__ import annotations

from typing import TypeVar, cast

T = TypeVar("T")


def normalize_newlines(value: T) -> T:
    """``value`` with ``\\r\\n`` and every lone ``\\r`` turned into ``\\n`` (text only)."""
    if isinstance(value, str) and "\r" in value:
        return cast(T, value.replace("\r\n", "\n").replace("\r", "\n"))
    return value


def normalize_values(value: T) -> T:
    """A mapping's text values with :func:`normalize_newlines` applied (the templates of
    a prompt version, a scenario's layers); anything else as :func:`normalize_newlines`.

    >>> normalize_values({"default": "Q:\\r\\n{{ q }}", "n": 1})
    {'default': 'Q:\\n{{ q }}', 'n': 1}
    """
    if isinstance(value, dict):
        return cast(T, {key: normalize_newlines(item) for key, item in value.items()})
    return normalize_newlines(value)
