"""The object pickers' matches (an htmx fragment): worlds, rulesets, entries or NPCs
whose name or slug holds what was typed."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from promptadmin.content.kinds import KINDS
from promptadmin.studio import selectors
from promptadmin.studio.access import render_page, studio_view


@studio_view()
def object_picker(request: HttpRequest) -> HttpResponse:
    """``?kinds=world,entry&field=NAME&NAME=text``: the options (``field`` names the
    parameter holding the text, the picker's own input; ``bare=1``: each option's value
    is the slug alone, for a picker of one kind)."""
    kinds = tuple(k for k in request.GET.get("kinds", "").split(",") if k in KINDS) or tuple(KINDS)
    field = request.GET.get("field", "q")
    text = request.GET.get(field, "")
    picks = selectors.pick_objects(kinds, text)
    return render_page(
        request,
        "studio/_picker_options.html",
        {
            "picks": picks,
            "text": text,
            "kinds": [KINDS[k].label for k in kinds],
            "bare": len(kinds) == 1 and request.GET.get("bare") == "1",
        },
    )
