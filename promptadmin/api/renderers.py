"""JSON responses encoded by orjson.

The hot path answers with a prompt of tens of kilobytes: DRF's renderer (the standard
library's encoder) spends about 0.25 ms on a 50 KB response, orjson about a tenth of
that. The output is what DRF's renderer gives with its defaults (compact, UTF-8,
``UNICODE_JSON``), except that U+2028 and U+2029 are not escaped (valid JSON either way;
DRF escapes them for pages that paste JSON into a script). Types orjson does not know
natively go through DRF's own encoder, which raises on anything it cannot represent, so
nothing is silently turned into null. Indented output (``Accept: application/json;
indent=2``) is left to DRF.

A read (``GET``) never fails for a stored row that cannot be encoded (a number beyond 64
bits, written before such numbers were refused), and a list never fails as a whole for
one such row: only when encoding fails are the rows of a list encoded one by one, and a
failing row (or object) goes out with its unencodable values as text and an ``error``
marker in the API's error item shape, and is logged. A write's answer that cannot be
encoded stays an error, so that the write is not committed
(``responses.RenderBeforeCommit``).
"""

from __future__ import annotations

import logging
from typing import Any

import orjson
from rest_framework import renderers
from rest_framework.permissions import SAFE_METHODS
from rest_framework.utils.encoders import JSONEncoder

from assembler.storable import MAX_INT, MIN_INT

logger = logging.getLogger(__name__)

_fallback = JSONEncoder()
# Dates and dataclasses go to DRF's encoder too: orjson's own forms of them differ.
_OPTIONS = (
    orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
)


class JSONRenderer(renderers.JSONRenderer):
    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: dict[str, Any] | None = None,
    ) -> bytes:
        if data is None:
            return b""
        if self.get_indent(accepted_media_type or "", renderer_context or {}):
            return bytes(super().render(data, accepted_media_type, renderer_context))
        try:
            return _dumps(data)
        except orjson.JSONEncodeError:
            request = (renderer_context or {}).get("request")
            if request is None or request.method not in SAFE_METHODS:
                raise
        if isinstance(data, list):
            return _dumps([_encodable(row, request.path) for row in data])
        if isinstance(data, dict) and isinstance(data.get("results"), list):
            rows = [_encodable(row, request.path) for row in data["results"]]
            return _dumps({**data, "results": rows})
        return _dumps(_encodable(data, request.path))


def _dumps(data: Any) -> bytes:
    return orjson.dumps(data, default=_fallback.default, option=_OPTIONS)


IDENTITY = ("id", "key", "name", "slug", "number")
"""The fields that say which row a marked row is, kept when nothing else can be."""


def _encodable(row: Any, path: str) -> Any:
    """``row`` if it encodes; else the row with its unencodable values as text and an
    ``error`` marker; else (it still fails) only the fields that say which row it is."""
    try:
        _dumps(row)
        return row
    except orjson.JSONEncodeError:
        pass
    where: list[str] = []
    shown = _as_text(row, "", where)
    ident = {k: row[k] for k in IDENTITY if isinstance(row, dict) and k in row}
    logger.error("A row of %s cannot be encoded (%s at %s); sent marked", path, ident, where)
    detail = (
        f"This row holds values JSON cannot carry, sent here as text (at {', '.join(where)})."
        if where
        else "This row cannot be sent as JSON."
    )
    error = {"code": "unencodable_row", "detail": detail, "attr": where[0] if where else None}
    if isinstance(shown, dict):
        marked = {**shown, "error": error}
        try:
            _dumps(marked)
            return marked
        except orjson.JSONEncodeError:
            pass
    return {**{k: str(v) for k, v in ident.items()}, "error": error}


def _as_text(value: Any, path: str, where: list[str]) -> Any:
    """``value`` with every integer orjson cannot write as its decimal text; the path of
    each is added to ``where``."""
    if isinstance(value, dict):
        return {k: _as_text(v, f"{path}.{k}" if path else str(k), where) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_as_text(v, f"{path}.{i}" if path else str(i), where) for i, v in enumerate(value)]
    if isinstance(value, int) and not isinstance(value, bool) and not MIN_INT <= value <= MAX_INT:
        where.append(path)
        return str(value)
    return value
