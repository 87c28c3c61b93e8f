"""Create an API key and print it (the only time it is shown)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from promptadmin.content.models import ApiKeyScope
from promptadmin.content.services.api_keys import api_key_create


class Command(BaseCommand):
    help = "Create an API key for a service and print it; only its hash is stored."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--name", required=True, help="Who uses the key (max 50 chars).")
        parser.add_argument(
            "--scope",
            required=True,
            choices=ApiKeyScope.values,
            help="read: assemble, preview, fetch; write: also change content; admin: also "
            "import and migrate deprecated content.",
        )
        parser.add_argument(
            "--expires-days", type=int, default=None, help="Expire after N days (default: never)."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        days = options["expires_days"]
        if days is not None and days < 1:
            raise CommandError("--expires-days must be at least 1.")
        expires_at = timezone.now() + timedelta(days=days) if days is not None else None
        try:
            api_key, key = api_key_create(
                actor=None, name=options["name"], scope=options["scope"], expires_at=expires_at
            )
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        expiry = f"expires {api_key.expiry_date:%Y-%m-%d %H:%M} UTC" if expires_at else "no expiry"
        self.stderr.write(
            f"API key '{api_key.name}' (scope {api_key.scope}, {expiry}). It is shown only "
            "now: store it safely. Send it as 'Authorization: Api-Key <key>'. Revoke it with "
            f"'manage.py revoke_api_key {api_key.prefix}'."
        )
        self.stdout.write(key)
