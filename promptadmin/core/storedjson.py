"""One check for every JSON value promptadmin stores: metadata, state, configs.

A value that passes can be written by PostgreSQL (no NUL, no lone surrogate), read back
and rendered by every JSON encoder the app uses (integers within 64 bits, finite
numbers), and cannot exhaust a parser or the recursion limit (bounded depth and size).
Every entry point (API serializers, studio forms, services, imports) calls
:func:`check_stored_json`, so the same value is accepted or refused everywhere.

>>> check_stored_json({"title": "Old wars", "tags": ["war", 3, 2.5, None, True]})
>>> try:
...     check_stored_json({"scores": [1, float("nan")]})
... except StoredJsonError as error:
...     print(error.path, "-", error.message)
scores.1 - numbers must be finite (no NaN or Infinity).
"""

from __future__ import annotations

import json
import math
from typing import Any

from django.core.exceptions import ValidationError

MAX_DEPTH = 32
"""How deeply objects and arrays may nest (an object holding an object is depth 2)."""

MAX_ITEMS = 10_000
"""How many values (keys, items and leaves together) one stored JSON value may hold."""

MAX_TEXT = 200_000
"""The longest string, key or value, in characters."""

MIN_INT = -(2**63)
MAX_INT = 2**64 - 1  # what orjson writes: signed and unsigned 64-bit integers


class StoredJsonError(ValueError):
    """A JSON value that cannot be stored; ``path`` names where (``tags.3``, or ``""``)."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}" if path else message)

    @property
    def explanation(self) -> str:
        """For people: ``At tags.3: integers must fit in 64 bits (...)``.

        Characters that cannot be shown (or sent: a lone surrogate) are escaped in the path.
        """
        if not self.path:
            return self.message[:1].upper() + self.message[1:]
        shown = "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in self.path)
        return f"At {shown}: {self.message}"


def _text_problem(text: str) -> str | None:
    if len(text) > MAX_TEXT:
        return f"text may be at most {MAX_TEXT} characters long."
    if "\x00" in text:
        return "text may not contain NUL (U+0000) characters."
    if not text.isascii():
        try:
            text.encode()
        except UnicodeEncodeError:
            return "text may not contain lone surrogates (U+D800 to U+DFFF): they are not UTF-8."
    return None


def check_stored_json(value: Any) -> None:
    """Raise :class:`StoredJsonError` unless ``value`` can be stored and sent back.

    Walks the value without recursion, so a hostile depth cannot raise RecursionError.
    Accepts what ``json.loads`` produces: dict (string keys), list, str, int, float,
    bool, None.
    """
    items = 0
    stack: list[tuple[Any, str, int]] = [(value, "", 1)]
    while stack:
        current, path, depth = stack.pop()
        items += 1
        if items > MAX_ITEMS:
            raise StoredJsonError("", f"at most {MAX_ITEMS} values in all.")
        if current is None or isinstance(current, bool):
            continue
        if isinstance(current, int):
            if not MIN_INT <= current <= MAX_INT:
                raise StoredJsonError(
                    path, f"integers must fit in 64 bits ({MIN_INT} to {MAX_INT})."
                )
        elif isinstance(current, float):
            if not math.isfinite(current):
                raise StoredJsonError(path, "numbers must be finite (no NaN or Infinity).")
        elif isinstance(current, str):
            problem = _text_problem(current)
            if problem:
                raise StoredJsonError(path, problem)
        elif isinstance(current, dict | list):
            if depth > MAX_DEPTH:
                raise StoredJsonError(
                    path, f"objects and arrays may nest {MAX_DEPTH} deep at most."
                )
            children = current.items() if isinstance(current, dict) else enumerate(current)
            for key, child in children:
                if isinstance(current, dict):
                    if not isinstance(key, str):
                        raise StoredJsonError(path, "object keys must be text.")
                    problem = _text_problem(key)
                    if problem:
                        raise StoredJsonError(_join(path, key), f"key: {problem}")
                stack.append((child, _join(path, key), depth + 1))
        else:
            raise StoredJsonError(path, f"{type(current).__name__} is not a JSON value.")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number; send a finite number or null")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is too large for a 64-bit float")
    return value


def loads(text: str) -> Any:
    """``json.loads`` that refuses NaN, Infinity and numbers that overflow to infinity.

    Raises ValueError (JSONDecodeError among them), or RecursionError when the text nests
    deeper than the parser can go; callers turn both into a clear error.

    >>> loads('{"a": [1, 2.5, 18446744073709551616]}')
    {'a': [1, 2.5, 18446744073709551616]}
    >>> loads('1e400')
    Traceback (most recent call last):
    ...
    ValueError: the number 1e400 is too large for a 64-bit float
    """
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)


def validate_stored_json(value: Any) -> None:
    """:func:`check_stored_json` as a Django validator (model fields, forms, services)."""
    try:
        check_stored_json(value)
    except StoredJsonError as error:
        raise ValidationError(error.explanation, code="unstorable_json") from None


def _join(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)
