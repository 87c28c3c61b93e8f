"""One check for every JSON value that is stored or sent: metadata, state, configs.

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
import re
from decimal import Decimal
from typing import Any

MAX_DEPTH = 32
"""How deeply objects and arrays may nest (an object holding an object is depth 2)."""

MAX_ITEMS = 10_000
"""How many values (keys, items and leaves together) one stored JSON value may hold."""

MAX_TEXT = 200_000
"""The longest text, in characters: a string, key or value, in a JSON value, and a text
field of a request (:mod:`assembler.request`)."""

MIN_INT = -(2**63)
MAX_INT = 2**64 - 1  # what orjson writes: signed and unsigned 64-bit integers
INT_RANGE = f"integers must fit in 64 bits ({MIN_INT} to {MAX_INT})."


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
        return f"At {printable(self.path)}: {self.message}"


class UnencodableKeyError(ValueError):
    """A JSON object key holding a lone surrogate; ``path`` leads to it from the top
    (keys and list indexes, the key itself last).

    Refused by the API's parser (:func:`refuse_unencodable_keys`): every key of a body can
    end up in an error message (an unknown field, a missing variable), and a lone surrogate
    cannot be sent back in one.
    """

    def __init__(self, path: tuple[str | int, ...]) -> None:
        self.path = path
        where = printable(".".join(str(step) for step in path))
        super().__init__(
            f"object keys may not contain lone surrogates (U+D800 to U+DFFF), at {where}"
        )


def printable(text: str) -> str:
    """``text`` with the characters that cannot be shown (or sent: a lone surrogate) as
    ``\\u`` escapes.

    >>> printable("tags\\udfff.new\\nline")
    'tags\\\\udfff.new\\\\u000aline'
    """
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text)


LONE_SURROGATES = "text may not contain lone surrogates (U+D800 to U+DFFF): they are not UTF-8."


def _text_problem(text: str) -> str | None:
    if len(text) > MAX_TEXT:
        return f"text may be at most {MAX_TEXT} characters long."
    if "\x00" in text:
        return "text may not contain NUL (U+0000) characters."
    if has_lone_surrogate(text):
        return LONE_SURROGATES
    return None


def has_lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (U+D800 to U+DFFF).

    JSON can carry one (``"\\ud800"``), but it cannot be encoded as UTF-8: not stored, not
    counted by the tokenizer, not sent back.
    """
    if text.isascii():
        return False
    try:
        text.encode()
    except UnicodeEncodeError:
        return True
    return False


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
                raise StoredJsonError(path, INT_RANGE)
        elif isinstance(current, float):
            problem = float_problem(current)
            if problem:
                raise StoredJsonError(path, problem)
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


def storable(value: Any) -> bool:
    """Whether ``value`` plainly passes :func:`check_stored_json`.

    The same walk, without working out where each value sits (only an error needs that):
    a few times quicker on the objects games and pipelines send, so that a request parser
    calls it first and :func:`check_stored_json` only to word a refusal. Conservative: a
    value of a subclass of a JSON type is left to the full check.

    >>> storable({"tide": "rising", "hour": 23}), storable({"hour": float("nan")})
    (True, False)
    """
    items = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        current, depth = stack.pop()
        items += 1
        if items > MAX_ITEMS:
            return False
        kind = type(current)
        if kind is str:
            if not _storable_text(current):
                return False
        elif kind is int:
            if not MIN_INT <= current <= MAX_INT:
                return False
        elif kind is float:
            if float_problem(current):
                return False
        elif kind is dict:
            if depth > MAX_DEPTH:
                return False
            for key, child in current.items():
                if type(key) is not str or not _storable_text(key):
                    return False
                stack.append((child, depth + 1))
        elif kind is list:
            if depth > MAX_DEPTH:
                return False
            stack.extend((child, depth + 1) for child in current)
        elif current is not None and kind is not bool:
            return False
    return True


def _storable_text(text: str) -> bool:
    return (
        len(text) <= MAX_TEXT
        and "\x00" not in text
        and (text.isascii() or not has_lone_surrogate(text))
    )


def float_problem(value: float) -> str | None:
    """Why a float cannot be stored and sent back, or None.

    Django writes a float to PostgreSQL as Python writes it (``repr``), and jsonb keeps a
    number as ``numeric`` with the decimal places written: from ``1e+16`` up (where
    ``repr`` turns to an exponent) that is none, so the number comes back as an integer
    (``1e+20`` as ``100000000000000000000``), and one outside :data:`MIN_INT` to
    :data:`MAX_INT` can no longer be rendered. Those are refused, on every database, so
    that what is accepted never depends on where it is stored.

    >>> float_problem(2.5e15) is None and float_problem(1.8e19) is None
    True
    >>> float_problem(1e20).split(";")[0]
    '1e+20 is stored as the integer 100000000000000000000'
    >>> float_problem(float("nan"))
    'numbers must be finite (no NaN or Infinity).'
    """
    if not math.isfinite(value):
        return "numbers must be finite (no NaN or Infinity)."
    if -1e16 < value < 1e16:
        return None
    written = repr(value)
    whole = int(Decimal(written))
    if MIN_INT <= whole <= MAX_INT:
        return None
    shown = str(whole) if len(str(whole)) <= 40 else f"of {len(str(abs(whole)))} digits"
    return f"{written} is stored as the integer {shown}; {INT_RANGE}"


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
    deeper than the parser can go; callers turn both into a clear error. Keys are left to
    the caller: :func:`check_stored_json` checks them in a value that is stored, the fast
    paths take only keys they know, and the API's parser calls
    :func:`refuse_unencodable_keys`.

    >>> loads('{"a": [1, 2.5, 18446744073709551616]}')
    {'a': [1, 2.5, 18446744073709551616]}
    >>> loads('1e400')
    Traceback (most recent call last):
    ...
    ValueError: the number 1e400 is too large for a 64-bit float
    """
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)


# A lone surrogate reaches a key as its \u escape (a pair matches too, but is rare enough
# outside emoji that the walk it costs does not matter), or as the character itself in
# text that did not come from UTF-8 (has_lone_surrogate). One pattern for both took longer
# than the parse; a search led by a literal is quick.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def refuse_unencodable_keys(value: Any, text: str) -> None:
    """Raise :class:`UnencodableKeyError` if an object key in ``value``, parsed from
    ``text``, holds a lone surrogate; ``text`` spares the walk when none can.

    >>> text = '{"tags": [{"\\\\udfffx": 1}]}'
    >>> try:
    ...     refuse_unencodable_keys(loads(text), text)
    ... except UnencodableKeyError as error:
    ...     print(error.path == ("tags", 0, "\\udfffx"), error)
    True object keys may not contain lone surrogates (U+D800 to U+DFFF), at tags.0.\\udfffx
    """
    if not isinstance(value, dict | list):
        return
    if not _SURROGATE_ESCAPE.search(text) and not has_lone_surrogate(text):
        return
    # Without recursion, like check_stored_json; an object's own keys are all checked
    # before anything inside it, so a body's top-level key is the one reported.
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        current, path = stack.pop()
        if isinstance(current, dict):
            for key in current:
                if has_lone_surrogate(key):
                    raise UnencodableKeyError((*path, key))
            children: Any = current.items()
        else:
            children = enumerate(current)
        stack.extend(
            (child, (*path, step)) for step, child in children if isinstance(child, dict | list)
        )


def _join(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)
