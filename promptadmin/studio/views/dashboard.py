"""The dashboard: how much content there is, what is broken, and what changed lately.

Bounded whatever the size of the game: counts and findings come from the background
check (content.services.health: the page says when one is under way and shows the last
results meanwhile), the worst entries only with a link to all of them, and what is not
yet published in a fragment of its own, loaded once the page is shown.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse

from promptadmin.content.models import ContentCheck
from promptadmin.content.services import health
from promptadmin.content.services.deprecated import deprecated_counts
from promptadmin.releases.selectors import unpublished
from promptadmin.studio import selectors
from promptadmin.studio.access import HtmxHttpRequest, page_of, render_page, studio_view

# The entries with findings shown on the dashboard (the worst first); all on their page.
WORST_SHOWN = 10


def _health(state: ContentCheck | None) -> dict[str, Any]:
    """What each page of the health check shows of it: how recent it is."""
    return {
        "section": "dashboard",
        "state": state,
        "updating": state is None or not state.up_to_date,
    }


@studio_view()
def dashboard(request: HtmxHttpRequest) -> HttpResponse:
    if request.GET.get("part") == "unpublished":
        # Comparing the working copy with production reads all of it: not on the page.
        return render_page(
            request, "studio/dashboard.html#unpublished", {"unpublished": unpublished()}
        )
    state = health.health_state()
    health.health_wanted(state)  # a check lost on its way (or never asked for) is asked again
    counts = selectors.scope_counts(state.scope_counts if state else {})
    totals = health.health_totals()
    return render_page(
        request,
        "studio/dashboard.html",
        {
            **_health(state),
            "counts": counts,
            "total_active": sum(row.active for row in counts),
            "total_inactive": sum(row.inactive for row in counts),
            "totals": totals,
            "worst": list(health.entries_with_findings()[: WORST_SHOWN + 1]),
            "worst_shown": WORST_SHOWN,
            "blank_segments": selectors.blank_segments(state.blank_segments if state else []),
            "changes": selectors.recent_changes(),
            "deprecated": deprecated_counts(),
        },
    )


@studio_view()
def entry_health(request: HttpRequest) -> HttpResponse:
    """Every entry with findings, the worst first, a page at a time."""
    state = health.health_state()
    return render_page(
        request,
        "studio/entry_health.html",
        {
            **_health(state),
            "page": page_of(request, health.entries_with_findings()),
        },
    )
