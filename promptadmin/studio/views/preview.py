"""The preview: assemble any entry at any budget and explain every cut.

The form is a GET form, so a preview is a URL that can be shared; htmx swaps the result in
place as the settings change and keeps the address bar in step. While the author types, a
setting that is not valid yet (half-typed JSON, a negative budget) is marked at its field
and the last good preview stays, marked out of date: the page never jumps to an error.

Authors save the preview shown as a named scenario by posting to the same address: its
query string is the configuration saved, the body the name and the expectations.

The long, folded parts of a result (every segment considered, the trace step by step)
are sent when opened: the same address with ``show=<part>`` answers an htmx request with
that part alone, assembled again, and a plain request (no JavaScript) with the whole page,
that part unfolded. ``hash`` names the assembly the page showed: a part assembled from
content that has changed since says so.
"""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.vary import vary_on_headers

from promptadmin.content.assembly import AssemblyInputError, preview_prompt
from promptadmin.releases import services
from promptadmin.releases.models import Scenario
from promptadmin.releases.serving import resolve
from promptadmin.studio.access import HtmxHttpRequest, render_page, studio_view
from promptadmin.studio.forms.preview import PreviewForm, SaveScenarioForm
from promptadmin.studio.presenters import present

TEMPLATE = "studio/preview.html"
# The parts of a result sent when opened (see above): ``show`` names one. (The plain
# text of the prompt is joined from its blocks by studio.js: only a page without
# JavaScript asks for it.)
PARTS = ("segments", "steps", "prompt")


def part_urls(request: HttpRequest, content_hash: str) -> dict[str, str]:
    """For each part sent when opened, the address that sends it: this preview's own."""
    query = request.GET.copy()
    for name in ("show", "hash"):
        query.pop(name, None)
    urls = {}
    for part in PARTS:
        query["show"], query["hash"] = part, content_hash
        urls[part] = f"{reverse('studio:preview')}?{query.urlencode()}"
    return urls


def _stale_reason(form: PreviewForm) -> str:
    names = [form[name].label for name in form.errors if name in form.fields]
    if form.npc_errors:
        names.append("NPCs")
    if not names:
        return "a setting needs fixing."
    return f"fix {', '.join(str(name) for name in names)}."


def _save_scenario(
    request: HttpRequest, settings: PreviewForm, form: SaveScenarioForm
) -> Scenario | None:
    """Save the preview's configuration as a scenario; a problem goes to ``form``, at the
    field it comes from (the preview's own settings are named in a form-wide error)."""
    if not form.is_valid():
        return None
    if not (settings.is_bound and settings.is_valid()):
        form.add_error(None, "Fix the preview's settings first: the scenario keeps them.")
        return None
    params = settings.params()
    expectations = form.expectations()
    try:
        return services.scenario_create(
            actor=request.user,
            name=form.cleaned_data["name"],
            entry=params.entry,
            first_turn=params.first_turn,
            npcs=[{"npc": slug, "tier": tier} for slug, tier in params.npcs],
            state=dict(params.state),
            token_budget=params.token_budget,
            npc_budget=params.npc_budget,
            lore=params.lore.to_dict(),
            expectations=[expectation for _field, expectation in expectations],
        )
    except ValidationError as exc:
        for key, problems in exc.message_dict.items():
            parts = key.split(".")
            if parts[0] in ("name", "expectations"):
                field = "name" if key == "name" else None
                if len(parts) > 1 and parts[1].isdigit():
                    field = expectations[int(parts[1])][0]
                form.add_error(field, problems)
                continue
            # The preview's settings: a layer of the state by its field, NPCs as a whole.
            name = parts[1] if parts[0] == "state" and len(parts) > 1 else parts[0]
            where = settings[name].label if name in settings.fields else "NPCs"
            form.add_error(None, [f"{where}: {problem}" for problem in problems])
        return None


@studio_view()
@vary_on_headers("HX-Request")
def preview(request: HtmxHttpRequest) -> HttpResponse:
    form = PreviewForm.from_query(request.GET)
    scenario_form = SaveScenarioForm(request.POST if request.method == "POST" else None)
    if request.method == "POST":
        scenario = _save_scenario(request, form, scenario_form)
        if scenario is not None:
            messages.success(
                request,
                f"Saved the scenario '{scenario.name}': every release's impact report checks it.",
            )
            return redirect(request.get_full_path())
    page = None
    served = None
    if form.is_bound and form.is_valid():
        params = form.params()
        try:
            served = resolve(params.release)
            result = preview_prompt(
                params, include_inactive=True, load=served.load, lore=served.lore
            )
        except AssemblyInputError as exc:
            form.add_request_errors({name: [message] for name, message in exc.errors.items()})
        else:
            page = present(result, form.npc_names(), dict(params.state))
    htmx = request.htmx
    shown = request.GET.get("show")
    shown_hash = page.meta.content_hash if page is not None else ""
    context = {
        "section": "preview",
        "form": form,
        "preview": page,
        "served": served,
        "scenario_form": scenario_form,
        "scenario_action": request.get_full_path(),
        "shown": shown if shown in PARTS else None,
        "parts": part_urls(request, shown_hash) if page is not None else {},
        # A part opened after the content changed: assembled now, not as the page shows.
        "changed": request.GET.get("hash", shown_hash) != shown_hash,
    }
    status = 400 if request.method == "POST" else 200
    in_place = htmx and not htmx.history_restore_request and not htmx.boosted
    if in_place and shown in PARTS and request.method == "GET":
        # A folded part, opened: that part alone (or nothing to swap in, when the
        # address no longer assembles: its link to the whole page stays).
        if page is None:
            return HttpResponse(status=204)
        return render_page(request, f"{TEMPLATE}#{shown}", context)
    if in_place:
        if form.is_bound and form.errors:
            # Keep the last good preview: refresh only the field errors and the notice.
            response = render_page(
                request,
                f"{TEMPLATE}#invalid",
                {**context, "oob": True, "stale": _stale_reason(form)},
                status=status,
            )
            response["HX-Reswap"] = "none"
            return response
        return render_page(
            request,
            f"{TEMPLATE}#update",
            {**context, "oob": True, "announce": True},
            status=status,
        )
    return render_page(request, TEMPLATE, context, status=status)
