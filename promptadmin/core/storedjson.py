"""Stored JSON for Django: the check of :mod:`assembler.storable` as a validator, and the
JSON object typed in a box.

Every entry point (API, studio forms, services, imports) checks a JSON value it stores
with :func:`assembler.storable.check_stored_json`, so the same value is accepted or
refused everywhere.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.exceptions import ValidationError

from assembler.storable import StoredJsonError, check_stored_json, loads


def validate_stored_json(value: Any) -> None:
    """:func:`check_stored_json` as a Django validator (model fields, forms, services)."""
    try:
        check_stored_json(value)
    except StoredJsonError as error:
        raise ValidationError(error.explanation, code="unstorable_json") from None


def object_from_text(raw: str, what: str, *, checked: bool = True) -> dict[str, Any]:
    """The JSON object typed in a box (a studio form, the admin), checked as every stored
    JSON value is; every failure is a ``ValidationError`` that starts with ``what``.
    ``checked=False`` leaves that check to the caller (a request's parser words it).

    >>> object_from_text('{"source": "wiki"}', "Metadata")
    {'source': 'wiki'}
    >>> try:
    ...     object_from_text('{"a": NaN}', "Metadata")
    ... except ValidationError as error:
    ...     print(error.messages[0])
    Metadata is not valid JSON: NaN is not a JSON number; send a finite number or null.
    """
    try:
        value = loads(raw)
    except json.JSONDecodeError as exc:
        raise ValidationError(
            f"{what} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})."
        ) from None
    except RecursionError:
        raise ValidationError(f"{what} nests objects or arrays too deeply.") from None
    except ValueError as exc:
        raise ValidationError(f"{what} is not valid JSON: {exc}.") from None
    if not isinstance(value, dict):
        raise ValidationError(
            f'{what} must be a JSON object in braces, for example {{"title": "Old wars"}}.'
        )
    if not checked:
        return value
    try:
        check_stored_json(value)
    except StoredJsonError as error:
        raise ValidationError(f"{what}: {error.explanation}") from None
    return value
