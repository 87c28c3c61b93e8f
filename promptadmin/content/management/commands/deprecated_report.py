"""Print how many deprecated-scope segments are pending, copied and dismissed, per scope."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from promptadmin.content.models import DEPRECATED_SCOPES
from promptadmin.content.services.deprecated import Status, deprecated_segments


class Command(BaseCommand):
    help = "Deprecated-scope segments per scope and review status (pending, copied, dismissed)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="Print the counts as JSON.")

    def handle(self, *args: Any, **options: Any) -> None:
        counts = {
            scope: {
                status: deprecated_segments(scope=scope, status=status).count()
                for status in Status.values
            }
            for scope in DEPRECATED_SCOPES
        }
        totals = {status: sum(row[status] for row in counts.values()) for status in Status.values}
        if options["json"]:
            self.stdout.write(json.dumps({"scopes": counts, "total": totals}, indent=2))
            return
        self.stdout.write(f"{'scope':<12}" + "".join(f"{s:>10}" for s in Status.values))
        for scope, row in counts.items():
            self.stdout.write(f"{scope:<12}" + "".join(f"{row[s]:>10}" for s in Status.values))
        self.stdout.write(f"{'total':<12}" + "".join(f"{totals[s]:>10}" for s in Status.values))
        if totals[Status.PENDING]:
            self.stdout.write(
                f"{totals[Status.PENDING]} pending: review them on the studio's Deprecated page "
                "(/deprecated/) or with the API (/api/v1/deprecated-segments/)."
            )
