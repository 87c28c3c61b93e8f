"""The preview: assemble any entry at any budget and explain every cut.

The form is a GET form, so a preview is a URL that can be shared; htmx swaps the result in
place as the settings change and keeps the address bar in step. While the author types, a
setting that is not valid yet (half-typed JSON, a negative budget) is marked at its field
and the last good preview stays, marked out of date: the page never jumps to an error.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.vary import vary_on_headers

from promptadmin.content.assembly import AssemblyInputError, preview_prompt
from promptadmin.releases.serving import resolve
from promptadmin.studio.access import render_page, studio_view
from promptadmin.studio.forms.preview import PreviewForm
from promptadmin.studio.presenters import present

TEMPLATE = "studio/preview.html"


def _stale_reason(form: PreviewForm) -> str:
    names = [form[name].label for name in form.errors if name in form.fields]
    if form.npc_errors:
        names.append("NPCs")
    if not names:
        return "a setting needs fixing."
    return f"fix {', '.join(str(name) for name in names)}."


@studio_view()
@vary_on_headers("HX-Request")
def preview(request: HttpRequest) -> HttpResponse:
    form = PreviewForm.from_query(request.GET)
    page = None
    served = None
    if form.is_bound and form.is_valid():
        params = form.params()
        try:
            served = resolve(params.release)
            result = preview_prompt(params, include_inactive=True, load=served.load)
        except AssemblyInputError as exc:
            for name, message in exc.errors.items():
                form.add_error(name if name in form.fields else None, message)
        else:
            page = present(result, dict(form.npc_options))
    htmx = getattr(request, "htmx", None)
    context = {"section": "preview", "form": form, "preview": page, "served": served}
    if htmx and not htmx.history_restore_request and not htmx.boosted:
        if form.is_bound and form.errors:
            # Keep the last good preview: refresh only the field errors and the notice.
            response = render_page(
                request,
                f"{TEMPLATE}#invalid",
                {**context, "oob": True, "stale": _stale_reason(form)},
            )
            response["HX-Reswap"] = "none"
            return response
        return render_page(
            request, f"{TEMPLATE}#update", {**context, "oob": True, "announce": True}
        )
    return render_page(request, TEMPLATE, context)
