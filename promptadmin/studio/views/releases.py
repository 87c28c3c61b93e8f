"""Releases: the list (labels, history, roll back), publish with its impact report,
compare any two versions, and one scenario's prompts side by side."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.core.exceptions import ObjectDoesNotExist, PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from assembler.explain import CHANGE_KIND_WORDS
from assembler.result import CHANGE_KINDS
from promptadmin.content.assembly import AssemblyInputError, assemble_prompt
from promptadmin.core.pagination import PAGE_SIZE, paginate
from promptadmin.core.roles import Role
from promptadmin.playtests import selectors as playtests
from promptadmin.playtests.endpoint import OFF
from promptadmin.playtests.endpoint import enabled as playtests_enabled
from promptadmin.playtests.models import PlaytestRun
from promptadmin.playtests.services import playtest_confirm
from promptadmin.releases import reports, selectors, services
from promptadmin.releases.models import PRODUCTION, WORKING, ReleaseLabel
from promptadmin.releases.serving import resolve
from promptadmin.studio import confirm
from promptadmin.studio.access import page_of, render_page, studio_view
from promptadmin.studio.diffs import side_by_side
from promptadmin.studio.forms.preview import PreviewForm
from promptadmin.studio.forms.releases import (
    NEW_LABEL,
    CompareForm,
    LabelMoveForm,
    PublishForm,
    label_names,
)
from promptadmin.studio.selectors import Change, recent_changes


def _diff_lines(diff: str) -> list[tuple[str, str]]:
    """A unified diff's lines with their kind, for colouring (headers dropped)."""
    lines = []
    for line in diff.splitlines()[2:]:
        kind = {"+": "added", "-": "removed", "@": "hunk"}.get(line[:1], "same")
        lines.append((kind, line))
    return lines


def _shown(value: Any) -> str:
    """A field's value as a person reads it: text as is, anything else (metadata) as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


# The parameter naming the page of changed scenarios an impact report shows: a change to
# the core changes every one (2,200 in a real-size game), so they come a page at a time,
# the most telling first.
SCENARIOS_PAGE = "scenarios_page"
SCENARIOS_PER_PAGE = PAGE_SIZE


def _report(
    request: HttpRequest, before: str | None, after: str, *, wait: bool = True
) -> dict[str, Any]:
    """The impact report, ready to show. ``wait=False``: when many scenarios must be
    assembled again, without them for now (``pending``: the page polls for them)."""
    if wait:
        report = reports.summary(selectors.compare_report(before, after))
    else:
        report = selectors.compare_started(before, after)
    for change in [*report["segments"]["changed"], *report["objects"]["changed"]]:
        change["diff_lines"] = _diff_lines(change["diff"])
        change["shown_changes"] = [
            (item["field"], _shown(item["before"]), _shown(item["after"]))
            for item in change["changes"]
        ]
    return _scenarios_shown(request, report, before, after)


def _telling(scenario: dict[str, Any]) -> int:
    """How much a changed scenario's row tells, most first: expectations that start
    failing, then what it loses anew (a cut, the scenario itself), then the rest."""
    if scenario["expectations_failing"] or scenario["error_after"] or scenario["missing_after"]:
        return 0
    return 1 if scenario["cuts_added"] or scenario["new"] else 2


def _scenarios_shown(
    request: HttpRequest, report: dict[str, Any], before: str | None, after: str
) -> dict[str, Any]:
    """``report``: a summary (``reports.summary``): the scenarios that changed, the others
    counted. The changed ones come a page at a time, the most telling first."""
    changed = sorted(report["scenarios"], key=_telling)
    report["changed_count"] = len(changed)
    report["unchanged_count"] = report["judged_count"] - len(changed)
    # The links to other pages of scenarios lead to the whole page (not to the fragment
    # the publish page polls for).
    links = request.GET.copy()
    links.pop("report", None)
    page = paginate(
        changed,
        request.GET.get(SCENARIOS_PAGE),
        per_page=SCENARIOS_PER_PAGE,
        cap=len(changed),
        query=links,
        param=SCENARIOS_PAGE,
    )
    report["changed_scenarios"] = page
    query = {"before": before or "", "after": after}
    for scenario in page.items:
        # A new scenario is shown by what it loses, as the preview says it.
        outcome = scenario["outcome_after"] or {}
        scenario["lost_after"] = [
            {**change, "kind_words": CHANGE_KIND_WORDS[change["kind"]]}
            for kind in CHANGE_KINDS
            for change in outcome.get(kind, [])
        ]
        scenario["prompts_url"] = (
            reverse("studio:release_prompts") + f"?{urlencode(query)}&{scenario['preview_query']}"
        )
    pending = report.get("pending")
    if pending is not None:
        label = {"label": report["before"]["label"]} if report["before"]["label"] else {}
        pending["url"] = (
            reverse("studio:release_publish") + "?" + urlencode({**label, "report": pending["key"]})
        )
    return report


def _scenarios_fragment(request: HttpRequest, key: str, before: str | None) -> HttpResponse:
    """The publish page's scenarios while a task assembles them: the progress bar, then
    the table (htmx polls this, see ``_impact.html``)."""
    if not reports.KEY_PATTERN.fullmatch(key):
        return HttpResponseBadRequest("report: not a report's key.")
    found = reports.kept(key)
    if found is not None:
        report = {"before": {"label": None}, **found}
        report = _scenarios_shown(request, report, before, WORKING)
    else:
        state = reports.progress(key)
        if state["state"] == "lost":  # its task died with its worker, or never started
            reports.start(key, before, WORKING, total=0)
            state = reports.progress(key)
        report = {"before": {"label": before}, "pending": {"key": key, **state}}
        _scenarios_shown(request, {**report, **reports.summary({"scenarios": []})}, before, WORKING)
    return render(request, "studio/_impact.html#scenarios", {"report": report})


@studio_view()
def release_list(request: HttpRequest) -> HttpResponse:
    releases = page_of(request, selectors.releases())
    names = label_names()
    for release in releases.items:
        # "Move here" offers only the labels that are elsewhere (or nowhere yet).
        held = {label.name for label in release.labels.all()}
        release.movable = [name for name in names if name not in held]  # type: ignore[attr-defined]
    return render_page(
        request,
        "studio/release_list.html",
        {
            "section": "releases",
            "releases": releases,
            "new_label": NEW_LABEL,
            "labels": list(ReleaseLabel.objects.select_related("release")),
            "moves": page_of(request, selectors.label_moves(), param="moves_page"),
            "compare": CompareForm(initial={"before": PRODUCTION, "after": WORKING}),
        },
    )


@studio_view(read=Role.VIEWER, write=Role.ADMIN)
def release_publish(request: HttpRequest) -> HttpResponse:
    asked = request.GET.get("label", PRODUCTION)
    known = asked in label_names()
    initial = {"label": asked} if known else {"label": NEW_LABEL, "new_label": asked}
    form = PublishForm(request.POST or None, initial=initial)
    failures: list[dict[str, str]] = []
    changed_since: list[Change] | None = None
    status = 400 if request.method == "POST" else 200
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        playtest = (
            PlaytestRun.objects.filter(pk=data["playtest"]).first() if data["playtest"] else None
        )
        replies_fail = playtest is not None and playtests.replies_failing(playtest)
        try:
            if replies_fail and not data["confirm"]:
                raise RepliesFailing()
            release = services.release_create(
                actor=request.user,
                name=data["name"] or None,
                notes=data["notes"],
                labels=[data["label"]],
                confirm=data["confirm"],
                expected_hash=data["reviewed"],
            )
        except services.WorkingCopyChanged:
            # The hash is what refuses; the edits saved since the page was shown are what
            # a person needs to see (the report below is the new one).
            since = data["reviewed_at"]
            changed_since = [c for c in recent_changes() if since is None or c.when >= since]
            status = 409
        except services.ExpectationsFailing as exc:
            failures = exc.failures
            form.add_error("confirm", "Expectations fail on this content: confirm to publish.")
        except RepliesFailing:
            assert playtest is not None
            form.add_error(
                "confirm",
                f"Reply expectations fail in playtest #{playtest.pk}: confirm to publish.",
            )
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                form.add_error(field if field in form.fields else None, errors)
        else:
            if replies_fail and playtest is not None:
                playtest_confirm(actor=request.user, run=playtest)
            messages.success(
                request, f"Published {release.name} as '{data['label']}'. It is live now."
            )
            return redirect("studio:release_list")
    label = form.label_value()
    current = ReleaseLabel.objects.filter(name=label).values_list("release__name", flat=True)
    before = label if current else None
    key = request.GET.get("report")
    if key is not None and request.method == "GET":
        return _scenarios_fragment(request, key, before)
    reviewed_at = timezone.now()  # before the report is read: an edit in between shows
    return render_page(
        request,
        "studio/release_publish.html",
        {
            "section": "releases",
            "form": form,
            "label": label,
            "current": current[0] if current else None,
            "report": _report(request, before, WORKING, wait=False),
            "reviewed_at": reviewed_at.isoformat(),
            "changed_since": changed_since,
            "failures": failures,
            **_playtest_context(before),
        },
        status=status,
    )


class RepliesFailing(Exception):
    """The playtest of the change has a failing reply expectation, and no confirmation."""


def _playtest_context(before: str | None) -> dict[str, Any]:
    """The publish page's "Playtest the change": the scenarios with reply expectations, the
    side it compares with, and the newest such run (its failures ask for confirmation)."""
    if not playtests_enabled():
        return {"playtests_off": OFF}  # the words every page and endpoint says
    run = playtests.latest_on_working(before)
    return {
        "playtest_scenarios": playtests.scenarios_with_reply_expectations(),
        "playtest_compare_to": before or "",
        "playtest": run,
        "playtest_failing": run is not None and playtests.replies_failing(run),
    }


@require_POST
@studio_view(write=Role.ADMIN)
def release_label_move(request: HttpRequest) -> HttpResponse:
    form = LabelMoveForm(request.POST)
    if not form.is_valid():
        problem = form.errors.get("new_label")
        messages.error(request, problem[0] if problem else "Choose a label and a release.")
        return redirect("studio:release_list")
    data = form.cleaned_data
    label = data["label"]
    if label == PRODUCTION and not confirm.confirmed(request):
        now = ReleaseLabel.objects.filter(name=label).values_list("release__name", flat=True)
        if not now or now[0] != data["release"]:
            where = f"from {now[0]} to {data['release']}" if now else f"on {data['release']}"
            return confirm.ask(
                request,
                title=f"Move {label}?",
                question=f"Move the {label} label {where}?",
                consequence=(
                    f"Game servers read {data['release']} on their next request"
                    + ("." if now else " instead of the working copy.")
                ),
                confirm_label=f"Move {label} to {data['release']}",
                cancel_url=reverse("studio:release_list"),
                section="releases",
            )
    try:
        release = selectors.release_named(data["release"])
        services.release_label_set(
            actor=request.user,
            label=label,
            release=release,
            note=data["note"],
            confirm=data["confirm"],
        )
    except services.ExpectationsFailing as exc:
        messages.error(request, f"{exc} Tick 'even though expectations fail' to move it.")
    except (ValidationError, ObjectDoesNotExist, PermissionDenied) as exc:
        text = "; ".join(getattr(exc, "messages", [str(exc)]))
        messages.error(request, text)
    else:
        messages.success(request, f"'{label}' now points at {release.name}.")
    return redirect("studio:release_list")


@studio_view()
def release_compare(request: HttpRequest) -> HttpResponse:
    form = CompareForm(request.GET or None, initial={"before": PRODUCTION, "after": WORKING})
    report = None
    if form.is_bound and form.is_valid():
        try:
            report = _report(request, form.cleaned_data["before"], form.cleaned_data["after"])
        except ObjectDoesNotExist as exc:
            form.add_error(None, str(exc))
    return render_page(
        request,
        "studio/release_compare.html",
        {"section": "releases", "form": form, "report": report},
    )


@studio_view()
def release_prompts(request: HttpRequest) -> HttpResponse:
    """One scenario assembled from two versions, side by side, with the differences."""
    form = PreviewForm.from_query(request.GET)
    if not (form.is_bound and form.is_valid()):
        raise Http404("Name an entry and valid preview settings.")
    params = form.params()
    sides = []
    for key in ("before", "after"):
        name = request.GET.get(key) or None
        try:
            served = resolve(name) if name else None
            result = assemble_prompt(params, load=served.load, lore=served.lore) if served else None
        except AssemblyInputError as exc:
            sides.append({"name": name, "error": "; ".join(exc.errors.values()), "prompt": ""})
        else:
            sides.append(
                {
                    "name": name or "nothing published",
                    "error": None if result else "Nothing was published under this label.",
                    "prompt": result.prompt if result else "",
                    "tokens": result.meta.tokens if result else None,
                    # All it loses (the report lists only what one side loses and the
                    # other does not), in the preview's words.
                    "lost": [
                        {**change.to_dict(), "kind_words": CHANGE_KIND_WORDS[change.kind]}
                        for change in result.meta.outcome.changes()
                    ]
                    if result
                    else [],
                }
            )
    return render_page(
        request,
        "studio/release_prompts.html",
        {
            "section": "releases",
            "sides": sides,
            "rows": side_by_side(sides[0]["prompt"], sides[1]["prompt"]),
            "same_text": sides[0]["prompt"] == sides[1]["prompt"],
            "entry": params.entry,
            "preview_url": reverse("studio:preview") + "?" + request.GET.urlencode(),
        },
    )
