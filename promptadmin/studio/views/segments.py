"""Segments: the list, the editor (create and edit, with stale-edit detection), deletion."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers

import assembler
from promptadmin.assembly import DEFAULT_TOKEN_BUDGET
from promptadmin.models import SEGMENT_SCOPES, Segment
from promptadmin.roles import Role
from promptadmin.services import segments
from promptadmin.services.errors import StaleRevisionError
from promptadmin.studio import diffs, selectors
from promptadmin.studio.access import fragment_or_page, render_page, studio_view
from promptadmin.studio.forms import (
    SEGMENT_ERROR_FIELDS,
    SegmentCheckForm,
    SegmentFilterForm,
    SegmentForm,
    add_service_errors,
    object_value,
)
from promptadmin.tokens import tokenizer

PAGE_SIZE = 25
# Column header links cycle through these sorts (first: the one a click starts with).
SORT_COLUMNS = {
    "id": ("id", "-id"),
    "scope": ("scope",),
    "tokens": ("-tokens", "tokens"),
    "updated": ("-updated", "updated"),
}
EDITOR = "studio/segment_edit.html"
RELATED = ("world", "ruleset", "entry", "npc", "updated_by", "created_by")


@studio_view()
@vary_on_headers("HX-Request")
def segment_list(request: HttpRequest) -> HttpResponse:
    """Filter, search, sort and page through segments; htmx swaps the results in place."""
    form = SegmentFilterForm(request.GET)
    if form.is_valid():
        data = form.cleaned_data
        found = selectors.segment_list(
            scope=data["scope"],
            obj=data["object"],
            active=data["active"],
            q=data["q"],
            order_by=data["sort"],
        )
    else:
        found = Segment.objects.none()
    page = Paginator(found, PAGE_SIZE).get_page(request.GET.get("page"))
    rows = [(segment, selectors.object_url(segment.ref)) for segment in page]
    template = fragment_or_page(request, "studio/segment_list.html", "results")
    return render_page(
        request,
        template,
        {
            "section": "segments",
            "form": form,
            "page": page,
            "rows": rows,
            "sorts": _sort_links(request),
        },
    )


def _sort_links(request: HttpRequest) -> dict[str, dict[str, str]]:
    """For each sortable column: the URL its header links to and its aria-sort state."""
    current = request.GET.get("sort") or "-updated"
    links = {}
    for column, cycle in SORT_COLUMNS.items():
        following = cycle[(cycle.index(current) + 1) % len(cycle)] if current in cycle else cycle[0]
        query = request.GET.copy()
        query["sort"] = following
        query.pop("page", None)
        state = "none"
        if current in cycle:
            state = "descending" if current.startswith("-") else "ascending"
        links[column] = {"url": f"?{query.urlencode()}", "state": state}
    return links


def live_check(scope: str, content: str, saved_tokens: int | None = None) -> dict[str, Any]:
    """The token count and lint findings shown beside the editor as the author types."""
    tok = tokenizer()
    count = tok.count(content)
    lints = None
    if scope in SEGMENT_SCOPES:
        lints = assembler.lint_segment(
            scope, content, token_count=count, token_budget=DEFAULT_TOKEN_BUDGET
        )
    return {
        "tokens": count,
        "encoding": tok.name,
        "delta": None if saved_tokens is None else count - saved_tokens,
        "lints": None if lints is None else [lint.to_dict() for lint in lints],
    }


@studio_view(read=Role.AUTHOR)
@require_POST
def segment_check(request: HttpRequest) -> HttpResponse:
    """Recount and relint the text being edited (the editor calls this, debounced)."""
    form = SegmentCheckForm(request.POST)
    form.is_valid()
    data = form.cleaned_data
    live = live_check(data.get("scope", ""), data.get("content", ""), data.get("saved_tokens"))
    return render_page(request, f"{EDITOR}#live-check", {"live": live})


@studio_view(read=Role.AUTHOR)
@vary_on_headers("HX-Request")
def segment_create(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        form = SegmentForm(request.POST)
        if form.is_valid():
            try:
                segment = segments.segment_create(
                    actor=request.user, scope=form.cleaned_data["scope"], **form.service_fields()
                )
            except ValidationError as exc:
                add_service_errors(form, exc, SEGMENT_ERROR_FIELDS)
            else:
                messages.success(request, f"Created {segment.scope} segment #{segment.pk}.")
                return redirect("studio:segment_edit", segment.pk)
    else:
        initial = {"scope": request.GET.get("scope", ""), "object": request.GET.get("object", "")}
        form = SegmentForm(initial=initial)
    htmx = getattr(request, "htmx", None)
    template = f"{EDITOR}#scope-fields" if htmx and htmx.target == "scope-fields" else EDITOR
    content = form.data.get("content", "") if form.is_bound else ""
    return render_page(
        request,
        template,
        {
            "section": "segments",
            "form": form,
            "segment": None,
            "live": live_check(form.chosen_scope, content),
        },
    )


def _initial(segment: Segment) -> dict[str, Any]:
    return {
        "scope": segment.scope,
        "object": object_value(segment.ref) if segment.ref is not None else "",
        "tier": segment.tier,
        "content": segment.content,
        "metadata": json.dumps(segment.metadata, indent=2, ensure_ascii=False)
        if segment.metadata
        else "",
        "version": segment.version,
        "active": segment.active,
        "sort_order": segment.sort_order,
        "expected_revision": segment.revision,
    }


@dataclass(frozen=True)
class Conflict:
    """Someone saved the segment after the author loaded it: both versions, and the diff."""

    theirs: Segment
    yours_revision: int
    rows: list[diffs.Row]
    fields: list[diffs.FieldChange]

    @property
    def same_text(self) -> bool:
        return all(row.left.kind == "equal" or row.folded for row in self.rows)

    @property
    def theirs_title(self) -> str:
        who = self.theirs.updated_by or "a script"
        return f"Revision {self.theirs.revision}, saved by {who}"


DELETED_MESSAGE = (
    "Someone deleted this segment after you opened it. Your text is below: "
    "save it as a new segment, or copy it."
)


def _conflict(form: SegmentForm, theirs: Segment) -> Conflict:
    mine = dict(form.cleaned_data)
    theirs_values = {name: getattr(theirs, name, None) for name in diffs.SEGMENT_FIELDS}
    theirs_values["object"] = theirs.ref
    return Conflict(
        theirs=theirs,
        yours_revision=form.cleaned_data["expected_revision"],
        rows=diffs.side_by_side(mine["content"], theirs.content),
        fields=diffs.field_changes(mine, theirs_values, diffs.SEGMENT_FIELDS),
    )


@studio_view()
def segment_edit(request: HttpRequest, pk: int) -> HttpResponse:
    """Read (anyone) or change (authors) a segment; never overwrite someone else's save.

    The form carries the revision it was loaded at. If the segment has moved on, nothing
    is saved: the author sees both versions side by side, then keeps their own (the form,
    now carrying the new revision, saves over the other) or takes the saved one.
    """
    segment = Segment.objects.select_related(*RELATED).filter(pk=pk).first()
    deleted = False
    if segment is None:
        # Deleted while someone was editing it: keep their text on screen, not a 404.
        record = None
        if request.method == "POST":
            record = Segment.history.filter(id=pk).order_by("-history_id").first()  # type: ignore[attr-defined]
        if record is None:
            raise Http404("No such segment.")
        segment = record.instance
        deleted = True
    conflict = None
    status = 200
    if request.method == "POST":
        form = SegmentForm(request.POST, segment=segment)
        if deleted:
            form.is_valid()
            form.add_error(None, DELETED_MESSAGE)
            status = 409
        elif form.is_valid():
            try:
                saved = segments.segment_update(
                    actor=request.user,
                    segment=segment,
                    expected_revision=form.cleaned_data["expected_revision"],
                    **form.service_fields(),
                )
            except StaleRevisionError:
                theirs = Segment.objects.select_related(*RELATED).get(pk=pk)
                conflict = _conflict(form, theirs)
                data = request.POST.copy()
                data["expected_revision"] = str(theirs.revision)
                form = SegmentForm(data, segment=theirs)
                segment = theirs
                status = 409
            except Segment.DoesNotExist:
                deleted = True
                form.add_error(None, DELETED_MESSAGE)
                status = 409
            except ValidationError as exc:
                add_service_errors(form, exc, SEGMENT_ERROR_FIELDS)
            else:
                if saved.revision == segment.revision:
                    messages.info(request, "Nothing changed, so nothing was saved.")
                else:
                    messages.success(request, f"Saved revision {saved.revision}.")
                return redirect("studio:segment_edit", saved.pk)
        content = form.data.get("content", "")
    else:
        form = SegmentForm(initial=_initial(segment), segment=segment)
        content = segment.content
    return render_page(
        request,
        EDITOR,
        {
            "section": "segments",
            "form": form,
            "segment": segment,
            "object_url": selectors.object_url(segment.ref),
            "conflict": conflict,
            "deleted": deleted,
            "live": live_check(segment.scope, content, segment.token_count),
        },
        status=status,
    )


@studio_view(read=Role.AUTHOR)
@require_POST
def segment_delete(request: HttpRequest, pk: int) -> HttpResponse:
    segment = get_object_or_404(Segment, pk=pk)
    try:
        expected = int(request.POST.get("expected_revision", ""))
    except ValueError:
        expected = None
    try:
        segments.segment_delete(actor=request.user, segment=segment, expected_revision=expected)
    except StaleRevisionError:
        messages.error(
            request,
            "Someone changed this segment after you opened it, so it was not deleted. "
            "Here is the latest version.",
        )
        return redirect("studio:segment_edit", pk)
    messages.success(request, f"Deleted segment #{pk}. Its history is kept.")
    return redirect("studio:segment_list")
