"""Segments: the list, the editor (create and edit, with stale-edit detection), deletion."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers

import assembler
from promptadmin.content.kinds import KINDS
from promptadmin.content.models import SCOPE_REF_FIELD, SEGMENT_SCOPES, Segment
from promptadmin.content.services import segments
from promptadmin.core.errors import StaleRevisionError
from promptadmin.core.roles import Role
from promptadmin.core.tokens import tokenizer
from promptadmin.studio import diffs, merging, selectors
from promptadmin.studio.access import (
    HtmxHttpRequest,
    fragment_or_page,
    page_of,
    render_page,
    studio_view,
)
from promptadmin.studio.forms.common import add_service_errors, object_value, resolve_object
from promptadmin.studio.forms.segments import (
    SEGMENT_ERROR_FIELDS,
    SegmentCheckForm,
    SegmentFilterForm,
    SegmentForm,
)

# Column header links cycle through these sorts (first: the one a click starts with).
SORT_COLUMNS = {
    "id": ("id", "-id"),
    "scope": ("scope",),
    "tokens": ("-tokens", "tokens"),
    "updated": ("-updated", "updated"),
}
EDITOR = "studio/segment_edit.html"
RELATED = (*KINDS, "updated_by", "created_by")


@studio_view()
@vary_on_headers("HX-Request")
def segment_list(request: HtmxHttpRequest) -> HttpResponse:
    """Filter, search, sort and page through segments; htmx swaps the results in place."""
    form = SegmentFilterForm(request.GET)
    ranked = False
    if form.is_valid():
        data = form.cleaned_data
        found = selectors.segment_list(
            scope=data["scope"],
            obj=data["object"],
            active=data["active"],
            q=data["q"],
            order_by=data["sort"],
        )
        # Ranked when there are words to rank by (the selector drops the rank otherwise).
        ranked = "-rank" in found.query.order_by
    else:
        found = Segment.objects.none()
    # Ranking scores every match: past the count's cap, the newest matches come first.
    newest = SegmentFilterForm.SORTS["-updated"][1]
    page = page_of(request, found, capped_order=newest if ranked else None)
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
            scope,
            content,
            token_count=count,
            token_budget=assembler.DEFAULT_TOKEN_BUDGET,
            npc_budget=assembler.DEFAULT_NPC_BUDGET,
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
def segment_create(request: HtmxHttpRequest) -> HttpResponse:
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
                messages.success(request, f"Created {selectors.segment_words(segment)}.")
                return redirect("studio:segment_edit", segment.pk)
    else:
        initial = {"scope": request.GET.get("scope", ""), "object": request.GET.get("object", "")}
        form = SegmentForm(initial=initial)
    htmx = request.htmx
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
        "title": segment.title,
        "content": segment.content,
        "metadata": _metadata_text(segment.metadata),
        "version": segment.version,
        "active": segment.active,
        "sort_order": segment.sort_order,
        "expected_revision": segment.revision,
    }


def _metadata_text(metadata: Any) -> str:
    return json.dumps(metadata, indent=2, ensure_ascii=False) if metadata else ""


# The fields a three-way merge compares, in the order the conflict screen lists them.
MERGE_FIELDS = ["title", "content", "object", "tier", "metadata", "version", "active", "sort_order"]
MERGE_LABELS = {"content": "Text", **diffs.SEGMENT_FIELDS}


def _values_of(segment_or_record: Any) -> dict[str, Any]:
    """A segment's (or history record's) mergeable values; the object as ``kind:slug``."""
    values = {name: getattr(segment_or_record, name) for name in MERGE_FIELDS if name != "object"}
    values["object"] = ""
    field = SCOPE_REF_FIELD.get(segment_or_record.scope)
    if field is not None and getattr(segment_or_record, f"{field}_id") is not None:
        try:
            values["object"] = object_value(getattr(segment_or_record, field))
        except ObjectDoesNotExist:
            values["object"] = f"{field}:#{getattr(segment_or_record, f'{field}_id')}"
    return values


def _values_of_form(form: SegmentForm) -> dict[str, Any]:
    data = form.cleaned_data
    values = {name: data[name] for name in MERGE_FIELDS if name != "object"}
    values["object"] = object_value(data["object"]) if data.get("object") is not None else ""
    return values


def _service_fields(values: dict[str, Any], form: SegmentForm) -> dict[str, Any]:
    fields = {name: values[name] for name in MERGE_FIELDS if name != "object"}
    if not form.is_deprecated:
        fields["ref"] = resolve_object(values["object"]) if values["object"] else None
    return fields


def _show(name: str, value: Any) -> str:
    return (_metadata_text(value) or "{}") if name == "metadata" else diffs.show(value)


def _rebound(request: HttpRequest, values: dict[str, Any], revision: int) -> QueryDict:
    """The posted form with ``values`` in it, now based on ``revision``."""
    data = request.POST.copy()
    for name in MERGE_FIELDS:
        value = values[name]
        if name == "active":
            if value:
                data["active"] = "on"
            else:
                data.pop("active", None)
        elif name == "metadata":
            data[name] = _metadata_text(value)
        else:
            data[name] = "" if value is None else str(value)
        data.pop(f"resolve_{name}", None)
    data["expected_revision"] = str(revision)
    return data


DELETED_MESSAGE = (
    "Someone deleted this segment after you opened it. Your text is below: "
    "save it as a new segment, or copy it."
)


@dataclass
class _Editor:
    """What the editor shows: the form, the segment it edits (the current one after a
    conflict), and what went wrong, if anything."""

    form: SegmentForm
    segment: Segment
    conflict: Any = None
    status: int = 200
    deleted: bool = False


def _segment_or_record(request: HttpRequest, pk: int) -> tuple[Segment, bool]:
    """The segment, and whether it was deleted: a save to a segment deleted while someone
    edited it gets its last state from history (their text stays on screen), not a 404."""
    segment = Segment.objects.select_related(*RELATED).filter(pk=pk).first()
    if segment is not None:
        return segment, False
    record = None
    if request.method == "POST":
        record = Segment.history.filter(id=pk).order_by("-history_id").first()  # type: ignore[attr-defined]
    if record is None:
        raise Http404("No such segment.")
    return record.instance, True


def _saved(request: HttpRequest, saved: Segment, message: str, *, panel: bool) -> HttpResponse:
    if panel:
        return _panel_saved(request, saved, message)
    messages.success(request, message)
    return redirect("studio:segment_edit", saved.pk)


def _save(request: HttpRequest, segment: Segment, *, panel: bool) -> HttpResponse | _Editor:
    """Save the posted form; the answer to a save, or the editor to show again. A stale
    save is merged into the current segment and saved, or the fields both authors
    changed are shown for a decision (nothing saved)."""
    form = SegmentForm(request.POST, segment=segment)
    if not form.is_valid():
        return _Editor(form, segment)
    expected = form.cleaned_data["expected_revision"]
    try:
        saved, conflict, message, error = merging.save_merging(
            request=request,
            obj=segment,
            expected=expected,
            mine=_values_of_form(form),
            save=lambda current, values, revision: segments.segment_update(
                actor=request.user,
                segment=current,
                expected_revision=revision,
                **_service_fields(values, form),
            ),
            reread=lambda stale: Segment.objects.select_related(*RELATED).get(pk=stale.pk),
            names=MERGE_FIELDS,
            labels=MERGE_LABELS,
            values_of=_values_of,
            show=_show,
            text_fields=("content",),
        )
    except Segment.DoesNotExist:
        form.add_error(None, DELETED_MESSAGE)
        return _Editor(form, segment, status=409, deleted=True)
    except ValidationError as exc:
        add_service_errors(form, exc, SEGMENT_ERROR_FIELDS)
        return _Editor(form, segment)
    if conflict is not None:
        theirs = conflict.theirs
        rebound = SegmentForm(_rebound(request, conflict.values, theirs.revision), segment=theirs)
        if rebound.is_valid() and error is not None:
            add_service_errors(rebound, error, SEGMENT_ERROR_FIELDS)
        return _Editor(rebound, theirs, conflict=conflict, status=409)
    if message:
        return _saved(request, saved, message, panel=panel)
    if saved.revision == segment.revision:
        return _saved(request, saved, "Nothing changed, so nothing was saved.", panel=panel)
    return _saved(request, saved, f"Saved revision {saved.revision}.", panel=panel)


@studio_view()
def segment_edit(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Read (anyone) or change (authors) a segment; never overwrite someone else's save.

    The form carries the revision it was loaded at. If the segment has moved on, the two
    edits are merged field by field against that revision (from history): the other
    author's changes are kept, this author's are applied, and only a field both changed
    is shown for a decision (nothing is saved until the author decides).
    """
    # The editor beside the preview: the same form, validation, merge and drafts, swapped
    # in place; a save answers with the panel again and tells the preview to re-render.
    panel = bool(request.htmx) and request.GET.get("panel") == "1"
    segment, deleted = _segment_or_record(request, pk)
    if request.method != "POST":
        editor = _Editor(SegmentForm(initial=_initial(segment), segment=segment), segment)
        content = segment.content
    else:
        if deleted:
            form = SegmentForm(request.POST, segment=segment)
            form.is_valid()
            form.add_error(None, DELETED_MESSAGE)
            outcome: HttpResponse | _Editor = _Editor(form, segment, status=409, deleted=True)
        else:
            outcome = _save(request, segment, panel=panel)
        if isinstance(outcome, HttpResponse):
            return outcome
        editor = outcome
        content = editor.form.data.get("content", "")
    return render_page(
        request,
        f"{EDITOR}#panel" if panel else EDITOR,
        {
            "section": "segments",
            "form": editor.form,
            "segment": editor.segment,
            "object_url": selectors.object_url(editor.segment.ref),
            "conflict": editor.conflict,
            "deleted": editor.deleted,
            "live": live_check(editor.segment.scope, content, editor.segment.token_count),
            "panel": panel,
        },
        # htmx swaps only 2xx answers: the panel shows its conflict with a 200.
        status=200 if panel else editor.status,
    )


def _panel_saved(request: HttpRequest, saved: Segment, message: str) -> HttpResponse:
    """The panel with the saved segment, and a signal for the preview to re-render."""
    saved = Segment.objects.select_related(*RELATED).get(pk=saved.pk)
    response = render_page(
        request,
        f"{EDITOR}#panel",
        {
            "form": SegmentForm(initial=_initial(saved), segment=saved),
            "segment": saved,
            "panel": True,
            "saved_message": message,
            "live": live_check(saved.scope, saved.content, saved.token_count),
        },
    )
    response["HX-Trigger"] = "segmentSaved"
    return response


@studio_view(read=Role.AUTHOR)
@require_POST
def segment_delete(request: HttpRequest, pk: int) -> HttpResponse:
    segment = get_object_or_404(Segment, pk=pk)
    words = selectors.segment_words(segment)
    try:
        expected = int(request.POST.get("expected_revision", ""))
    except ValueError:
        # A delete must name the revision the author saw: never delete blind.
        messages.error(
            request,
            "The delete form did not say which revision you saw, so nothing was deleted. "
            "Here is the latest version; delete it from this page if you still want to.",
        )
        return redirect("studio:segment_edit", pk)
    try:
        segments.segment_delete(actor=request.user, segment=segment, expected_revision=expected)
    except StaleRevisionError:
        messages.error(
            request,
            "Someone changed this segment after you opened it, so it was not deleted. "
            "Here is the latest version.",
        )
        return redirect("studio:segment_edit", pk)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("studio:segment_edit", pk)
    messages.success(request, f"Deleted {words}. Its history is kept.")
    return redirect("studio:segment_list")
