"""Import a SillyTavern World Info file into a world's lore."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from promptadmin.content.models import World
from promptadmin.lore import worldinfo
from promptadmin.lore.services import lorebook_import


class Command(BaseCommand):
    help = (
        "Import a SillyTavern World Info JSON file into a world's lore. Importing the same "
        "file again changes nothing; --dry-run reports what would change."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="The World Info JSON file.")
        parser.add_argument("--world", required=True, help="The world's slug.")
        parser.add_argument("--dry-run", action="store_true", help="Report; write nothing.")
        parser.add_argument("--json", action="store_true", help="Print the report as JSON.")

    def handle(self, *args: Any, **options: Any) -> None:
        world = World.objects.filter(slug=options["world"]).first()
        if world is None:
            raise CommandError(f"No world with slug '{options['world']}'.")
        try:
            raw = Path(options["file"]).read_bytes()
        except OSError as exc:
            raise CommandError(f"Cannot read {options['file']}: {exc.strerror}.") from None
        try:
            report = lorebook_import(
                actor=None, world=world, data=worldinfo.read(raw), dry_run=options["dry_run"]
            )
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        if options["json"]:
            self.stdout.write(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
            return
        for entry in report.entries:
            if entry.notes or entry.errors:
                self.stdout.write(f"{entry.uid} {entry.title!r}: {entry.action}")
                for note in entry.notes:
                    self.stdout.write(f"  note: {note}")
                for field, messages in entry.errors.items():
                    self.stdout.write(f"  {field}: {' '.join(messages)}")
        would = "would be " if report.dry_run else ""
        self.stdout.write(
            f"{report.count('created')} {would}created, {report.count('updated')} {would}updated, "
            f"{report.count('unchanged')} unchanged, {report.count('skipped')} skipped "
            f"(world '{world.slug}')."
        )
