"""JSON fields that take only their own JSON type.

DRF's fields coerce (``0`` becomes ``"0"`` or ``False``, ``"5"`` becomes ``5``). An API
with a schema should refuse what the schema says is wrong instead of guessing.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers


class Text(serializers.CharField):
    default_error_messages = {"invalid": "Expected a string."}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        # The schema's maxLength bounds what is sent, before surrounding whitespace is
        # trimmed (Python counts some control characters as whitespace).
        if self.max_length is not None and len(data) > self.max_length:
            self.fail("max_length", max_length=self.max_length)
        return str(super().to_internal_value(data))


class Flag(serializers.BooleanField):
    default_error_messages = {"invalid": "Expected true or false."}

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class Integer(serializers.IntegerField):
    default_error_messages = {"invalid": "Expected an integer."}

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return int(super().to_internal_value(data))


class Number(serializers.FloatField):
    default_error_messages = {"invalid": "Expected a number."}

    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        return float(super().to_internal_value(data))


class QueryFlag(serializers.BooleanField):
    """A boolean query parameter: exactly ``true`` or ``false``."""

    default_error_messages = {"invalid": "Expected true or false."}

    def to_internal_value(self, data: Any) -> bool:
        if data not in ("true", "false"):
            self.fail("invalid")
        return data == "true"
