"""Playtests in the studio: start a run, and follow it (replies as they arrive, verdicts,
token totals; the compared side's replies beside the release's, with a word diff)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from promptadmin.core.roles import Role
from promptadmin.playtests import selectors, services
from promptadmin.playtests.endpoint import OFF, enabled
from promptadmin.playtests.models import PlaytestRun
from promptadmin.releases.models import Scenario
from promptadmin.studio.access import HtmxHttpRequest, fragment_or_page, render_page, studio_view
from promptadmin.studio.diffs import word_diff
from promptadmin.studio.forms.playtests import PlaytestForm

RECENT_RUNS = 20


@studio_view(read=Role.VIEWER, write=Role.AUTHOR)
def playtest_list(request: HttpRequest) -> HttpResponse:
    """Start a playtest (POST), or the form and the recent runs."""
    if not enabled():
        return render_page(request, "studio/playtests.html", {"section": "playtests", "off": OFF})
    form = PlaytestForm(request.POST or None)
    status = 200
    if request.method == "POST":
        status = 400
        run = _start(request, form, None)
        if run is not None:
            return redirect("studio:playtest_detail", pk=run.pk)
    context = {"section": "playtests", "form": form, "runs": selectors.runs()[:RECENT_RUNS]}
    return render_page(request, "studio/playtests.html", context, status=status)


def _start(
    request: HttpRequest, form: PlaytestForm, scenarios: list[str] | None
) -> PlaytestRun | None:
    """Start the run ``form`` asks for, of ``scenarios`` (None: those ticked, or all);
    None when refused, the reasons added to the form at the fields they name."""
    if not form.is_valid():
        return None
    data = form.cleaned_data
    try:
        return services.playtest_create(
            actor=request.user,
            scenarios=scenarios or data["scenarios"] or services.ALL,
            release=data["release"],
            compare_to=data["compare_to"] or None,
        )
    except ValidationError as exc:
        for field, errors in exc.message_dict.items():
            form.add_error(field if field in form.fields else None, errors)
    return None


@require_POST
@studio_view(write=Role.AUTHOR)
def scenario_playtest(request: HttpRequest, pk: int) -> HttpResponse:
    """A scenario page's "Playtest": that scenario on the release chosen (the working copy
    by default) and, when chosen, on the one it is compared with; then the run's page.
    A refusal (playtests off, a run over the call cap) goes back to the scenario, saying
    why."""
    scenario = get_object_or_404(Scenario, pk=pk)
    if not enabled():
        messages.error(request, OFF)
        return redirect("studio:scenario_edit", pk=pk)
    form = PlaytestForm(request.POST)
    run = _start(request, form, [scenario.name])
    if run is not None:
        return redirect("studio:playtest_detail", pk=run.pk)
    for field, errors in form.errors.items():
        named = form.fields.get(field)
        prefix = f"{named.label or field.capitalize()}: " if named is not None else ""
        for error in errors:
            messages.error(request, prefix + error)
    return redirect("studio:scenario_edit", pk=pk)


def _rows(run: PlaytestRun) -> tuple[list[dict[str, Any]], int, int]:
    """Per scenario, each sample's replies on both sides (with a word diff when both
    came); and samples come so far, of samples asked."""
    results = selectors.results(run)
    by_scenario: dict[str, dict[str, Any]] = {}
    # Runs made before scenarios named conversations hold none.
    conversations = {item["scenario"]: item.get("conversation") for item in run.plan}
    for result in results:
        row = by_scenario.setdefault(result["scenario"], {"scenario": result["scenario"]})
        row[result["side"]] = result
    rows = []
    for row in by_scenario.values():
        release, other = row.get("release"), row.get("compare_to")
        pairs = []
        count = max(
            len(release["samples"]) if release else 0, len(other["samples"]) if other else 0
        )
        for index in range(count):
            left = other["samples"][index] if other and index < len(other["samples"]) else None
            right = (
                release["samples"][index] if release and index < len(release["samples"]) else None
            )
            diff = None
            if left and right and left["reply"] is not None and right["reply"] is not None:
                diff = word_diff(left["reply"], right["reply"])
            pairs.append({"before": left, "after": right, "diff": diff})
        rows.append({**row, "pairs": pairs, "conversation": conversations.get(row["scenario"])})
    wanted = sum(1 if item.get("error") is not None else item["samples"] for item in run.plan)
    got = sum(len(result["samples"]) for result in results)
    return rows, got, wanted


@studio_view(read=Role.VIEWER, write=Role.AUTHOR)
def playtest_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """A run's page: a progress bar while it runs (htmx polls the ``run`` fragment), the
    replies as they arrive with each expectation's verdict, and the cost."""
    run = get_object_or_404(PlaytestRun, pk=pk)
    rows, got, wanted = _rows(run)
    context = {
        "section": "playtests",
        "run": run,
        "rows": rows,
        "got": got,
        "wanted": wanted,
        "percent": round(100 * got / wanted) if wanted else 100,
        "totals": selectors.totals(run),
        "waiting": run.status in (PlaytestRun.Status.QUEUED, PlaytestRun.Status.RUNNING),
        "failing": any(not r.get("release", {}).get("passed", True) for r in rows),
    }
    template = fragment_or_page(request, "studio/playtest_detail.html", "run")
    return render_page(request, template, context)
