"""The dashboard: how much content there is, what is broken, and what changed lately."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from promptadmin.content.services.deprecated import deprecated_counts
from promptadmin.releases.selectors import unpublished
from promptadmin.studio import selectors
from promptadmin.studio.access import render_page, studio_view


@studio_view()
def dashboard(request: HttpRequest) -> HttpResponse:
    counts = selectors.scope_counts()
    lints = selectors.entry_lints()
    return render_page(
        request,
        "studio/dashboard.html",
        {
            "section": "dashboard",
            "counts": counts,
            "total_active": sum(row.active for row in counts),
            "total_inactive": sum(row.inactive for row in counts),
            "entry_lints": lints,
            "lint_errors": sum(len(row.errors) for row in lints),
            # The headline: entries whose prompt loses content at the default budgets.
            "losing": [row for row in lints if row.losses],
            "blank_segments": selectors.blank_active_segments(),
            "changes": selectors.recent_changes(),
            "deprecated": deprecated_counts(),
            "unpublished": unpublished(),
        },
    )
