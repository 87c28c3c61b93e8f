"""What every area's serializers share: strict input, text that can be stored and sent."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail, ValidationError

from assembler.request import MAX_SLUG
from assembler.storable import StoredJsonError, check_stored_json, has_lone_surrogate, printable
from promptadmin.api import fields as f


def validated(serializer_class: type[Any], data: Any, **kwargs: Any) -> dict[str, Any]:
    """``data`` as ``serializer_class`` validates it (``kwargs``: ``partial=True``...); a
    ValidationError, which the API answers as its documented 400, when it is not valid."""
    serializer = serializer_class(data=data, **kwargs)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


class StrictSerializer(serializers.Serializer):
    """Refuses unknown fields (the schema says ``additionalProperties: false``), read-only
    ones included: a client sends only what it may change."""

    def to_internal_value(self, data: Any) -> Any:
        errors: dict[str, Any] = {}
        if isinstance(data, Mapping) and data.keys() - self.fields.keys():
            allowed = ", ".join(self.fields)
            for name in sorted(data.keys() - self.fields.keys()):
                # The parser refuses a name with a lone surrogate; escaped all the same,
                # since an error that cannot be encoded would be a 500.
                errors[printable(name)] = [
                    ErrorDetail(f"Unknown field; the fields are: {allowed}.", code="unknown_field")
                ]
        try:
            value = super().to_internal_value(data)
        except ValidationError as exc:
            if not isinstance(exc.detail, dict):
                raise
            errors.update(exc.detail)
        if errors:
            raise ValidationError(errors)
        return value


def utf8_text(text: str) -> None:
    """Refuse lone surrogates in a text, with a clear message."""
    if has_lone_surrogate(text):
        raise ValidationError(
            "Text may not contain lone surrogates (U+D800 to U+DFFF): they are not UTF-8.",
            code="surrogate_characters_not_allowed",
        )


def storable_json(value: Any) -> None:
    """Refuse a JSON value that cannot be stored and sent back (see core.storedjson): the
    error is on the field and says where inside it (``At tags.3: ...``)."""
    try:
        check_stored_json(value)
    except StoredJsonError as error:
        raise ValidationError(error.explanation, code="unstorable_json") from None


def slug_field(**kwargs: Any) -> serializers.CharField:
    return f.Text(max_length=MAX_SLUG, **kwargs)


class OrderedSerializer(serializers.Serializer):
    """Its JSON has its fields in ``ORDER`` (clients and the schema see them in that
    order), whichever class declares them."""

    ORDER: ClassVar[tuple[str, ...]]

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        return {name: fields[name] for name in self.ORDER}
