"""Revoke an API key for good, by its prefix (the part before the dot)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from promptadmin.content.models import ApiKey
from promptadmin.content.services.api_keys import api_key_revoke


class Command(BaseCommand):
    help = "Revoke an API key: it fails from the next request on. This cannot be undone."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("prefix", help="The key's prefix: its first 8 characters.")

    def handle(self, *args: Any, **options: Any) -> None:
        api_key = ApiKey.objects.filter(prefix=options["prefix"]).first()
        if api_key is None:
            raise CommandError(f"No API key with prefix '{options['prefix']}'.")
        api_key_revoke(actor=None, api_key=api_key)
        self.stdout.write(f"API key '{api_key.name}' ({api_key.prefix}) is revoked.")
