"""Rebuild the working copy's stamps after a load that skipped the database's triggers."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from promptadmin.releases.working import stamps_check, stamps_rebuild


class Command(BaseCommand):
    help = (
        "Give every object a new working stamp counted afresh from its rows (PostgreSQL). "
        "Run it after restoring or loading data with triggers disabled (pg_restore "
        "--disable-triggers, session_replication_role = replica): until then the studio and "
        "the API may serve the working copy as it was before the load. Safe to run any time; "
        "every process reads the working copy afresh once after it. --check only reports."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--check",
            action="store_true",
            help="report stale stamps and exit with status 1 if any, writing nothing",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        check = stamps_check()
        found = (
            f"{len(check.wrong)} with a wrong count, {len(check.missing)} missing, "
            f"{len(check.extra)} of objects with no active rows"
        )
        if options["check"]:
            if check.stale:
                sample = ", ".join(
                    f"{kind} {owner}" for kind, owner in (check.wrong + check.missing)[:10]
                )
                raise CommandError(
                    f"rebuild_stamps: stale stamps: {found}"
                    + (f" (first: {sample})" if sample else "")
                    + "; run manage.py rebuild_stamps"
                )
            self.stdout.write("rebuild_stamps: the stamps match the rows they count.")
            return
        written = stamps_rebuild()
        if not written:
            self.stdout.write("rebuild_stamps: this database keeps no stamps (not PostgreSQL).")
            return
        self.stdout.write(
            f"rebuild_stamps: {written} stamps written (before: {found}); every process "
            "reads the working copy afresh once."
        )
