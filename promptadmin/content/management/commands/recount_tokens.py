"""Recount cached segment token counts after TIKTOKEN_ENCODING changes."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from promptadmin.content.services.token_counts import segments_recount_tokens
from promptadmin.core.tokens import tokenizer


class Command(BaseCommand):
    help = (
        "Recount segment token counts that are missing or were made with another encoding "
        "than TIKTOKEN_ENCODING. Safe to run any time, and again."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        count = segments_recount_tokens()
        self.stdout.write(f"recount_tokens: {count} segments recounted with {tokenizer().name}.")
