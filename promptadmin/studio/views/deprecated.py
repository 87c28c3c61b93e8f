"""Admin pages: import a legacy export, and review deprecated segments.

Every action calls a content service (``import_jobs``, ``deprecated``), as the API and
the management commands do; the pages only parse, call and render.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.defaultfilters import filesizeformat, pluralize
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_POST

from promptadmin.content.legacy import format_from_name
from promptadmin.content.models import DEPRECATED_SCOPES, ImportJob, Segment
from promptadmin.content.services import deprecated, import_jobs
from promptadmin.core.roles import Role
from promptadmin.core.templatetags.bidi import isolate
from promptadmin.core.uploads import upload_too_large
from promptadmin.studio import selectors
from promptadmin.studio.access import fragment_or_page, page_of, render_page, studio_view
from promptadmin.studio.forms.deprecated import (
    BulkForm,
    CopyForm,
    DeprecatedFilterForm,
    DismissForm,
    ImportForm,
)

BULK_DONE = {
    deprecated.Action.COPY: "Copied {}.",
    deprecated.Action.DISMISS: "Dismissed {}.",
    deprecated.Action.UNDO: "Put {} back to pending.",
}
SKIPPED_IDS_SHOWN = 10  # per reason, in the message after a bulk action
admin_view = studio_view(read=Role.ADMIN, write=Role.ADMIN)


@csrf_exempt  # only until the upload limit is in place: then checked, see below
@admin_view
def legacy_import_page(request: HttpRequest) -> HttpResponse:
    """Upload an export: it is stored and imported in the background, and the job's page
    (progress, then the report) follows; a dry run by default.

    The CSRF check reads the form, so it runs after the upload limit is installed (the
    pattern Django documents for upload handlers), never before and never not at all."""
    limit = settings.IMPORT_MAX_BYTES
    if request.method != "POST":
        return _legacy_import(request)
    if upload_too_large(request, "file", limit):
        return _too_large(request, limit)
    return _legacy_import(request)


@csrf_protect
def _legacy_import(request: HttpRequest) -> HttpResponse:
    form = ImportForm()
    if request.method == "POST":
        form = ImportForm(request.POST, request.FILES)
        if form.is_valid():
            upload = form.cleaned_data["file"]
            fmt = form.cleaned_data["format"] or format_from_name(upload.name or "")
            if fmt is None:
                form.add_error("format", "Cannot tell from the file name: choose JSON or CSV.")
            else:
                try:
                    job = import_jobs.import_job_create(
                        actor=request.user,
                        upload=upload,
                        name=upload.name or "",
                        fmt=fmt,
                        refs=form.cleaned_data["refs"],
                        dry_run=form.cleaned_data["dry_run"],
                        skip_invalid=form.cleaned_data["skip_invalid"],
                    )
                except ValidationError as exc:
                    for name, errors in exc.message_dict.items():
                        form.add_error(name if name in form.fields else None, errors)
                else:
                    return redirect("studio:legacy_import_job", pk=job.pk)
    context = {"section": "deprecated", "form": form, "jobs": _recent_jobs()}
    status = 400 if form.is_bound else 200
    return render_page(request, "studio/legacy_import.html", context, status=status)


def _too_large(request: HttpRequest, limit: int) -> HttpResponse:
    refused = f"The file is over {filesizeformat(limit)}, the most an import takes."
    context = {"section": "deprecated", "form": ImportForm(), "jobs": _recent_jobs()}
    return render_page(
        request, "studio/legacy_import.html", {**context, "refused": refused}, status=413
    )


RECENT_JOBS = 10


def _recent_jobs() -> list[ImportJob]:
    return list(ImportJob.objects.select_related("created_by")[:RECENT_JOBS])


@admin_view
def legacy_import_job(request: HttpRequest, pk: int) -> HttpResponse:
    """An import's page: a progress bar while it runs (htmx polls the ``job`` fragment),
    then its report."""
    job = get_object_or_404(ImportJob, pk=pk)
    context: dict[str, Any] = {
        "section": "deprecated",
        "job": job,
        "progress": import_jobs.progress_of(job),
        "waiting": job.status in (ImportJob.Status.QUEUED, ImportJob.Status.RUNNING),
    }
    report = job.report
    if report is not None:
        scopes = sorted(set(report["created"]) | set(report["unchanged_by_scope"]))
        context["report"] = report
        context["report_rows"] = [
            (scope, report["created"].get(scope, 0), report["unchanged_by_scope"].get(scope, 0))
            for scope in scopes
        ]
        context["report_problems"] = [
            ("Conflicts: kept as stored", report["conflicts"]),
            ("Not imported", report["errors"]),
        ]
    template = fragment_or_page(request, "studio/legacy_import_job.html", "job")
    return render_page(request, template, context)


def _filters(request: HttpRequest) -> tuple[DeprecatedFilterForm, dict[str, Any]]:
    form = DeprecatedFilterForm(request.GET)
    values = form.cleaned_data if form.is_valid() else {}
    return form, {
        "scope": values.get("scope") or None,
        "status": values.get("status") or None,
        "search": values.get("q") or None,
    }


@admin_view
def deprecated_review(request: HttpRequest) -> HttpResponse:
    form, filters = _filters(request)
    queryset = deprecated.deprecated_segments(**filters)
    page = page_of(request, queryset)
    rows = page.items
    hints = deprecated.suggestions(rows)
    labels = {hint.ref_value: f"{isolate(hint.name)} ({hint.slug})" for hint in hints.values()}
    items = []
    for row in rows:
        hint = hints.get(row.pk)
        copy_form = CopyForm(
            initial={
                "scope": hint.scope if hint else "",
                "object": hint.ref_value if hint else "",
                "content": row.content,
            },
            prefix=f"s{row.pk}",
            labels=labels,
        )
        items.append(
            {
                "segment": row,
                "status": deprecated.status_of(row),
                "hint": hint,
                "copy_form": copy_form,
                "copies": deprecated.copy_ids(row),
                "metadata": json.dumps(row.metadata, indent=2, ensure_ascii=False),
            }
        )
    query = {k: v for k, v in request.GET.items() if k != "page" and v}
    return render_page(
        request,
        "studio/deprecated_review.html",
        {
            "section": "deprecated",
            "form": form,
            "page": page,
            "items": items,
            "counts": deprecated.deprecated_counts(),
            "query": urlencode(query),
            "here": request.get_full_path(),
            "bulk_form": BulkForm(prefix="bulk"),
        },
    )


def _back(request: HttpRequest) -> HttpResponse:
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        target = reverse("studio:deprecated_review")
    return redirect(target)


def _source(pk: int) -> Segment:
    return get_object_or_404(Segment, pk=pk, scope__in=DEPRECATED_SCOPES)


def _form_errors(form: Any) -> str:
    return " ".join(
        f"{form.fields[name].label or name.capitalize()}: {' '.join(errors)}"
        if name in form.fields
        else " ".join(errors)
        for name, errors in form.errors.items()
    )


@admin_view
@require_POST
def deprecated_copy(request: HttpRequest, pk: int) -> HttpResponse:
    source = _source(pk)
    form = CopyForm(request.POST, prefix=f"s{pk}")
    if not form.is_valid():
        messages.error(request, f"Segment #{pk} was not copied. {_form_errors(form)}")
        return _back(request)
    try:
        copy = deprecated.deprecated_copy(
            actor=request.user,
            segment=source,
            scope=form.cleaned_data["scope"],
            ref=form.cleaned_data["object"],
            content=form.cleaned_data["content"],
            active=form.cleaned_data["active"],
        )
    except ValidationError as exc:
        messages.error(request, f"Segment #{pk} was not copied. {' '.join(exc.messages)}")
    else:
        state = "active" if copy.active else "inactive"
        messages.success(
            request, f"Copied #{pk} to {selectors.segment_words(copy)}, a new {state} segment."
        )
    return _back(request)


@admin_view
@require_POST
def deprecated_dismiss(request: HttpRequest, pk: int) -> HttpResponse:
    source = _source(pk)
    form = DismissForm(request.POST)
    if not form.is_valid():
        messages.error(request, f"Segment #{pk} was not dismissed. {_form_errors(form)}")
        return _back(request)
    try:
        deprecated.deprecated_dismiss(
            actor=request.user, segment=source, reason=form.cleaned_data["reason"]
        )
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, f"Dismissed #{pk}. It is kept; undo puts it back to pending.")
    return _back(request)


@admin_view
@require_POST
def deprecated_undo(request: HttpRequest, pk: int) -> HttpResponse:
    source = _source(pk)
    try:
        deprecated.deprecated_undo(actor=request.user, segment=source)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, f"#{pk} is pending again (any copy is kept, inactive).")
    return _back(request)


@admin_view
@require_POST
def deprecated_bulk(request: HttpRequest) -> HttpResponse:
    """Copy, dismiss or undo every segment the current filters match."""
    form = BulkForm(request.POST, prefix="bulk")
    if not form.is_valid():
        messages.error(request, f"Nothing was changed. {_form_errors(form)}")
        return _back(request)
    filters = DeprecatedFilterForm(request.POST)
    values = filters.cleaned_data if filters.is_valid() else {}
    ids = deprecated.deprecated_segments(
        scope=values.get("scope") or None,
        status=values.get("status") or None,
        search=values.get("q") or None,
    ).values_list("pk", flat=True)
    data = form.cleaned_data
    options: dict[str, Any] = {"reason": data.get("reason") or "", "active": data["active"]}
    if data["action"] == deprecated.Action.COPY and data.get("scope"):
        options.update(scope=data["scope"], ref=data["object"])
    try:
        result = deprecated.deprecated_bulk(
            actor=request.user, action=data["action"], ids=list(ids), **options
        )
    except ValidationError as exc:
        messages.error(request, f"Nothing was changed. {' '.join(exc.messages)}")
        return _back(request)
    done = len(result.done)
    summary = BULK_DONE[data["action"]].format(f"{done} segment{pluralize(done)}")
    if result.skipped:
        summary += f" Skipped {len(result.skipped)}: {_skipped(result.skipped)}."
        messages.info(request, summary)
    else:
        messages.success(request, summary)
    return _back(request)


def _skipped(skipped: list[deprecated.Skipped]) -> str:
    """``#4 and #9 each was copied: undo ...; #12 is pending: ...``: the ids by reason."""
    by_reason: dict[str, list[str]] = {}
    for row in skipped:
        by_reason.setdefault(row.why, []).append(f"#{row.id}")
    parts = []
    for why, pks in by_reason.items():
        if len(pks) > SKIPPED_IDS_SHOWN:
            pks = [*pks[:SKIPPED_IDS_SHOWN], f"{len(pks) - SKIPPED_IDS_SHOWN} more"]
        who = pks[0] if len(pks) == 1 else f"{', '.join(pks[:-1])} and {pks[-1]} each"
        parts.append(f"{who} {why}")
    return "; ".join(parts)
