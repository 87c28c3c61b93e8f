"""Saved scenarios: list them, run them against the working copy or any release (every
expectation shown, those that hold as well as those that fail), edit and delete them.

Scenarios are made from the preview ("Save as scenario"); every change goes through the
scenario services, as the API's do.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from promptadmin.content.assembly import AssemblyInputError
from promptadmin.core.errors import StaleRevisionError
from promptadmin.playtests.endpoint import OFF
from promptadmin.playtests.endpoint import enabled as playtests_enabled
from promptadmin.releases import services
from promptadmin.releases.models import Scenario
from promptadmin.releases.scenarios import from_model, run
from promptadmin.releases.serving import resolve
from promptadmin.studio.access import render_page, studio_view
from promptadmin.studio.forms.lore_options import lore_words
from promptadmin.studio.forms.playtests import before_and_after
from promptadmin.studio.forms.scenarios import KIND_LABELS, RunForm, ScenarioForm

# Scenarios judge releases: the page sits in that section (its own would not fit the bar).
SECTION = "releases"
# The most scenarios one page lists and runs (each run assembles a prompt).
PAGE_SIZE = 100


def _preview_url(scenario: Scenario, release: str | None = None) -> str:
    query = from_model(scenario).preview_query()
    if release:
        query += f"&release={release}"
    return f"{reverse('studio:preview')}?{query}"


@studio_view()
def scenario_list(request: HttpRequest) -> HttpResponse:
    """Every saved scenario; with ``release`` (a label, a release or ``working``), each one
    run against that content with the verdict on every expectation."""
    scenarios = list(Scenario.objects.select_related("updated_by").order_by("name")[:PAGE_SIZE])
    form = RunForm(request.GET if "release" in request.GET else None)
    rows: list[dict[str, Any]] = [
        {"scenario": scenario, "spec": from_model(scenario), "run": None} for scenario in scenarios
    ]
    for row in rows:
        row["lore"] = lore_words(row["spec"].lore)
    ran = None
    if form.is_bound and form.is_valid():
        try:
            served = resolve(form.content())
        except AssemblyInputError as exc:
            form.add_error("release", list(exc.errors.values()))
        else:
            ran = served
            for row in rows:
                row["run"] = run(row["spec"], served.load, served.lore)
                row["preview_url"] = _preview_url(row["scenario"], served.name)
    for row in rows:
        row.setdefault("preview_url", _preview_url(row["scenario"]))
    return render_page(
        request,
        "studio/scenario_list.html",
        {
            "section": SECTION,
            "rows": rows,
            "form": form,
            "ran": ran,
            "more": Scenario.objects.count() > PAGE_SIZE,
            "failed": sum(row["run"].failed for row in rows if row["run"]),
            "errors": sum(1 for row in rows if row["run"] and row["run"].error),
        },
    )


@studio_view()
def scenario_edit(request: HttpRequest, pk: int) -> HttpResponse:
    scenario = get_object_or_404(Scenario, pk=pk)
    form = ScenarioForm(request.POST or None, scenario=scenario)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            try:
                saved = services.scenario_update(
                    actor=request.user,
                    scenario=scenario,
                    expected_revision=form.cleaned_data["expected_revision"],
                    **form.changes(),
                )
            except StaleRevisionError:
                scenario.refresh_from_db()
                form.add_error(
                    None,
                    f"Someone saved this scenario since you opened it (it is at revision "
                    f"{scenario.revision} now). Open it again to see their change, then make "
                    "yours.",
                )
                status = 409
            except ValidationError as exc:
                form.add_service_error(exc)
            else:
                messages.success(request, f"Saved the scenario '{saved.name}'.")
                return redirect("studio:scenario_list")
    return render_page(
        request,
        "studio/scenario_edit.html",
        {
            "section": SECTION,
            "scenario": scenario,
            "form": form,
            "kind_labels": KIND_LABELS,
            "preview_url": _preview_url(scenario),
            "playtest_form": before_and_after(),
            "playtests_off": None if playtests_enabled() else OFF,
        },
        status=status,
    )


@require_POST
@studio_view()
def scenario_delete(request: HttpRequest, pk: int) -> HttpResponse:
    scenario = get_object_or_404(Scenario, pk=pk)
    raw = request.POST.get("expected_revision", "")
    expected = int(raw) if raw.isdigit() else None
    try:
        services.scenario_delete(actor=request.user, scenario=scenario, expected_revision=expected)
    except StaleRevisionError:
        messages.error(
            request,
            f"The scenario '{scenario.name}' was changed since you opened this page: it is "
            "kept. Look at it again before deleting it.",
        )
    else:
        messages.success(request, f"Deleted the scenario '{scenario.name}'.")
    return redirect("studio:scenario_list")
