"""The JSON request parser: every body it cannot take is a 400, never a server error.

DRF's parser lets ``1e400`` through as infinity (which PostgreSQL and the renderer then
refuse) and lets a body nested a thousand levels deep raise ``RecursionError``. This one
refuses both, and ``NaN`` / ``Infinity`` (not JSON), with a ParseError that says why.
Integers are kept exact (the standard library, unlike orjson, never turns ``2**64`` into
a float); whether they fit where they go is the serializers' concern.

An object key holding a lone surrogate is refused here too, before any serializer can
echo it into an error that cannot be sent: inside a field, as an error on the object
holding it (``state.player``), worded as stored JSON words it; a body's own key, as a
ParseError.
"""

from __future__ import annotations

from typing import IO, Any

from django.conf import settings
from rest_framework import parsers
from rest_framework.exceptions import ParseError, ValidationError

from assembler.storable import (
    LONE_SURROGATES,
    StoredJsonError,
    UnencodableKeyError,
    loads,
    refuse_unencodable_keys,
)


class JSONParser(parsers.JSONParser):
    def parse(
        self,
        stream: IO[bytes],
        media_type: str | None = None,
        parser_context: dict[str, Any] | None = None,
    ) -> Any:
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = stream.read().decode(encoding)
            data = loads(text)
            refuse_unencodable_keys(data, text)
            return data
        except RecursionError:
            raise ParseError("JSON parse error - objects or arrays nest too deeply.") from None
        except UnencodableKeyError as error:
            *holder, key = error.path
            if not holder or not isinstance(holder[0], str):
                raise ParseError(f"JSON parse error - {error}.") from None
            # The keys above it were checked first, so the holder's path can be sent.
            field = ".".join(str(step) for step in holder)
            detail = StoredJsonError(str(key), f"key: {LONE_SURROGATES}").explanation
            raise ValidationError(
                {field: [detail]}, code="surrogate_characters_not_allowed"
            ) from None
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, ours, int digits
            raise ParseError(f"JSON parse error - {exc}") from None
