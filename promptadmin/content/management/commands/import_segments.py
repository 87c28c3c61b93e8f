"""Import an export of a legacy ``prompt_segments`` table (JSON array or CSV with header)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from promptadmin.content.legacy import FORMATS, ExportError, format_from_name, parse_refs
from promptadmin.content.services.legacy_import import ImportProgress, segments_import


def read_refs(path: str) -> dict[str, str]:
    """A ``--refs`` file: a JSON object from legacy id to slug (or ``kind:slug``)."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise CommandError(f"--refs {path}: cannot read it ({exc.strerror}).") from None
    try:
        return parse_refs(data)
    except ExportError as exc:
        raise CommandError(f"--refs {path}: {exc}") from None


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
        refs = read_refs(options["refs"]) if options["refs"] else None
        report_path = Path(options["report"]) if options["report"] else None
        if report_path is not None:
            # Before importing: an import must not be committed with its report lost.
            try:
                report_path.touch()
            except OSError as exc:
                raise CommandError(
                    f"Cannot write the report to {report_path}: {exc.strerror}."
                ) from None
        try:
            stream = path.open("rb")
            size = path.stat().st_size
        except OSError as exc:
            raise CommandError(f"Cannot read {path}: {exc.strerror}.") from None
        # A progress bar on a terminal only (tqdm leaves pipes and logs alone).
        bar = tqdm(
            total=size,
            unit="B",
            unit_scale=True,
            desc=path.name,
            file=sys.stderr,
            disable=None if options["verbosity"] >= 1 else True,
        )

        def progress(done: ImportProgress) -> None:
            bar.update(done.bytes_read - bar.n)
            bar.set_postfix(rows=done.rows_read, refresh=False)
            if options["verbosity"] >= 2:
                self.stderr.write(
                    f"wrote {done.rows_written} of {done.rows_read} rows read (not yet committed)"
                )
                self.stderr.flush()

        try:
            with stream, bar:
                report = segments_import(
                    actor=None,
                    data=stream,
                    fmt=fmt,
                    refs=refs,
                    dry_run=options["dry_run"],
                    skip_invalid=options["skip_invalid"],
                    progress=progress,
                )
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        if report_path is not None:
            # Ids and reasons are kept showable (legacy.Problem): the report encodes as UTF-8.
            report_path.write_text(
                json.dumps(report.as_dict(), indent=2, ensure_ascii=False) + "\n",
                encoding="utf-8",
            )
        for line in report.lines():
            self.stdout.write(line)
        if report.refused and report.dry_run:
            raise CommandError("An import of this file would be refused: see the reasons above.")
        if report.refused:
            raise CommandError("Nothing was imported: see the reasons above.")
