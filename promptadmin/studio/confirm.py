"""Changes to what is live ask first.

Moving or removing a ``production`` label (a registered prompt's or a release's) changes
what game servers get on their next request. The studio's forms for it post as usual; a
post that would change such a label and is not yet confirmed answers with a page saying
what will change, whose button posts the same change again, confirmed. The API is not
concerned: its callers name what they move, on purpose.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from promptadmin.studio.access import render_page

#: The field a confirmation page adds to the change it posts again.
CONFIRMED = "live_confirmed"


def confirmed(request: HttpRequest) -> bool:
    """Whether the person confirmed the change on the confirmation page."""
    return request.POST.get(CONFIRMED) == "yes"


def ask(
    request: HttpRequest,
    *,
    title: str,
    question: str,
    consequence: str,
    confirm_label: str,
    cancel_url: str,
    section: str,
) -> HttpResponse:
    """The confirmation page for the change ``request`` posted: the same fields, posted
    again to the same address with :data:`CONFIRMED`, or a way back."""
    fields = [
        (name, value)
        for name, values in request.POST.lists()
        if name not in ("csrfmiddlewaretoken", CONFIRMED)
        for value in values
    ]
    return render_page(
        request,
        "studio/confirm_live.html",
        {
            "section": section,
            "title": title,
            "question": question,
            "consequence": consequence,
            "confirm_label": confirm_label,
            "cancel_url": cancel_url,
            "action": request.path,
            "fields": fields,
            "confirmed_field": CONFIRMED,
        },
    )
