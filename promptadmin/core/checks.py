"""System checks: configuration that is only verifiable once Django is loaded."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Error, register


@register()
def tiktoken_encoding_check(app_configs: Any, **kwargs: Any) -> list[Error]:
    from assembler.tokens import UnknownEncodingError, get_tokenizer

    try:
        get_tokenizer(settings.TIKTOKEN_ENCODING)
    except UnknownEncodingError as exc:
        return [Error(f"TIKTOKEN_ENCODING: {exc}", id="promptadmin.E001")]
    return []
