"""The preview: assemble any entry at any budget and explain every cut.

The form is a GET form, so a preview is a URL that can be shared; htmx swaps the result in
place as the settings change and keeps the address bar in step.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.vary import vary_on_headers

from promptadmin.assembly import AssemblyInputError, preview_prompt
from promptadmin.studio.access import fragment_or_page, render_page, studio_view
from promptadmin.studio.forms import PreviewForm
from promptadmin.studio.presenters import present


@studio_view()
@vary_on_headers("HX-Request")
def preview(request: HttpRequest) -> HttpResponse:
    form = PreviewForm.from_query(request.GET)
    page = None
    if form.is_bound and form.is_valid():
        params = form.params()
        try:
            result = preview_prompt(params, include_inactive=True)
        except AssemblyInputError as exc:
            for name, message in exc.errors.items():
                form.add_error(name if name in form.fields else None, message)
        else:
            page = present(result, dict(form.npc_options))
    return render_page(
        request,
        fragment_or_page(request, "studio/preview.html", "result"),
        {"section": "preview", "form": form, "preview": page},
    )
