"""Import an export of a legacy ``prompt_segments`` table (JSON array or CSV with header)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from promptadmin.content.legacy import FORMATS, format_from_name
from promptadmin.content.services.legacy_import import segments_import


def read_refs(path: str) -> dict[str, str]:
    """A ``--refs`` file: a JSON object from legacy id to slug (or ``kind:slug``)."""
    try:
        refs = json.loads(Path(path).read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CommandError(f"--refs {path}: cannot read it as JSON ({exc}).") from None
    if not isinstance(refs, dict) or not all(
        isinstance(key, str) and isinstance(value, str) for key, value in refs.items()
    ):
        raise CommandError(
            f'--refs {path}: expected a JSON object from legacy id to slug, e.g. {{"12": '
            '"iron-coast", "40": "entry:drowned-bell"}.'
        )
    return refs


class Command(BaseCommand):
    help = (
        "Import a legacy prompt_segments export: allowed scopes against existing objects, "
        "deprecated scopes as inactive rows for review. All or nothing, idempotent."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="The export: a JSON array or CSV with a header.")
        parser.add_argument("--format", choices=FORMATS, help="Default: from the file name.")
        parser.add_argument("--refs", help="JSON object mapping legacy ref ids to slugs.")
        parser.add_argument("--dry-run", action="store_true", help="Report; write nothing.")
        parser.add_argument(
            "--skip-invalid",
            action="store_true",
            help="Import the valid rows and report the invalid ones (default: refuse all).",
        )
        parser.add_argument("--report", help="Also write the report to this file as JSON.")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["file"])
        fmt = options["format"] or format_from_name(path.name)
        if fmt is None:
            raise CommandError(f"Cannot tell the format of {path.name}: pass --format json|csv.")
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CommandError(f"Cannot read {path}: {exc.strerror}.") from None
        refs = read_refs(options["refs"]) if options["refs"] else None

        def progress(written: int, total: int) -> None:
            if options["verbosity"] >= 2:
                self.stderr.write(f"wrote {written} of {total} rows (not yet committed)")
                self.stderr.flush()

        try:
            report = segments_import(
                actor=None,
                data=data,
                fmt=fmt,
                refs=refs,
                dry_run=options["dry_run"],
                skip_invalid=options["skip_invalid"],
                progress=progress,
            )
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        if options["report"]:
            Path(options["report"]).write_text(
                json.dumps(report.as_dict(), indent=2, ensure_ascii=False) + "\n",
                encoding="utf-8",
            )
        for line in report.lines():
            self.stdout.write(line)
        if report.refused:
            raise CommandError("Nothing was imported: see the reasons above.")
