"""Export a world's lore as a SillyTavern World Info file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from promptadmin.content.models import World
from promptadmin.lore import worldinfo
from promptadmin.lore.models import LoreEntry


class Command(BaseCommand):
    help = "Export a world's own lore entries as a SillyTavern World Info JSON file."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--world", required=True, help="The world's slug.")
        parser.add_argument("--output", "-o", help="Write to this file (default: stdout).")

    def handle(self, *args: Any, **options: Any) -> None:
        world = World.objects.filter(slug=options["world"]).first()
        if world is None:
            raise CommandError(f"No world with slug '{options['world']}'.")
        data = worldinfo.export(LoreEntry.objects.filter(world=world).order_by("id"))
        text = json.dumps(data, indent=2, ensure_ascii=False)
        if options["output"]:
            try:
                Path(options["output"]).write_text(text + "\n", encoding="utf-8")
            except OSError as exc:
                raise CommandError(f"Cannot write {options['output']}: {exc.strerror}.") from None
        else:
            self.stdout.write(text)
