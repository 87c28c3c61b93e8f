"""The process-wide tokenizer, chosen by the TIKTOKEN_ENCODING setting."""

from __future__ import annotations

from django.conf import settings

from assembler.tokens import Tokenizer, get_tokenizer


def tokenizer() -> Tokenizer:
    """The configured tokenizer; the encoding is loaded once per process."""
    return get_tokenizer(settings.TIKTOKEN_ENCODING)
