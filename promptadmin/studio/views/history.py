"""A segment's history: every revision, a diff between any two, and restore; the diff and
the restore are shared with the other histories (lore entries)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from django.contrib import messages
from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.vary import vary_on_headers

from promptadmin.content.kinds import KINDS
from promptadmin.content.models import Segment
from promptadmin.content.services import segments
from promptadmin.core.errors import StaleRevisionError
from promptadmin.studio import diffs, selectors
from promptadmin.studio.access import HtmxHttpRequest, fragment_or_page, render_page, studio_view
from promptadmin.studio.forms.history import CompareForm, RestoreForm

TEMPLATE = "studio/segment_history.html"


def _values(record: Any) -> dict[str, Any]:
    values = {name: getattr(record, name) for name in diffs.SEGMENT_FIELDS if name != "object"}
    values["object"] = None
    for kind in KINDS:
        if getattr(record, f"{kind}_id") is not None:
            try:
                values["object"] = getattr(record, kind)
            except ObjectDoesNotExist:
                values["object"] = f"{kind} #{getattr(record, f'{kind}_id')} (deleted)"
    return values


@studio_view()
@vary_on_headers("HX-Request")
def segment_history(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    segment = get_object_or_404(Segment, pk=pk)
    if request.method == "POST":
        return _restore(request, segment)
    revisions = selectors.segment_revisions(segment)
    return render_page(
        request,
        fragment_or_page(request, TEMPLATE, "diff"),
        {
            "section": "segments",
            "segment": segment,
            "revisions": revisions,
            **compared(
                request,
                ((revision.revision, revision.record) for revision in revisions),
                _values,
                diffs.SEGMENT_FIELDS,
            ),
        },
    )


def compared(
    request: HttpRequest,
    records: Iterable[tuple[int, Any]],
    values: Callable[[Any], dict[str, Any]],
    labels: Any,
) -> dict[str, Any]:
    """The diff between the two revisions the query names (``a`` and ``b``; by default
    the one before the newest and the newest), for a history page's context.

    ``records``: (revision number, record) pairs, newest first; ``values`` gives the fields
    :func:`diffs.field_changes` compares, named by ``labels``. No records (a row written
    without history, by a bulk load or a script): no diff."""
    by_number: dict[int, Any] = {}
    for number, record in records:  # newest first: the last record of each revision wins
        by_number.setdefault(number, record)
    numbers = sorted(by_number)
    if not numbers:
        return {"diff": None, "compare_a": None, "compare_b": None}
    form = CompareForm(request.GET)
    form.is_valid()
    data = getattr(form, "cleaned_data", {})
    newest = numbers[-1]
    b = data.get("b") if data.get("b") in by_number else newest
    a = data.get("a") if data.get("a") in by_number else (numbers[-2] if len(numbers) > 1 else b)
    older, newer = by_number[min(a, b)], by_number[max(a, b)]
    diff = {
        "a": older.revision,
        "b": newer.revision,
        "left_title": f"Revision {older.revision}",
        "right_title": f"Revision {newer.revision}",
        "same_text": older.content == newer.content,
        "rows": diffs.side_by_side(older.content, newer.content),
        "fields": diffs.field_changes(values(older), values(newer), labels),
    }
    return {"diff": diff, "compare_a": min(a, b), "compare_b": max(a, b)}


def _restore(request: HttpRequest, segment: Segment) -> HttpResponse:
    restore = partial(segments.segment_restore, segment=segment)
    return restore_revision(request, segment, restore, "segment", "studio:segment_history")


def restore_revision(
    request: HttpRequest, obj: Any, restore: Callable[..., Any], noun: str, history: str
) -> HttpResponse:
    """Restore the revision the form names (``restore(actor=, revision=,
    expected_revision=)``), say what happened, and go back to the ``history`` page."""
    form = RestoreForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose a revision to restore.")
        return redirect(history, obj.pk)
    revision = form.cleaned_data["revision"]
    try:
        saved = restore(
            actor=request.user,
            revision=revision,
            expected_revision=form.cleaned_data["expected_revision"],
        )
    except StaleRevisionError as exc:
        messages.error(
            request,
            f"Someone saved revision {exc.current} while you were reading: nothing was "
            "restored. Check the latest revision, then restore again if you still want to.",
        )
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        if saved.revision == obj.revision:
            messages.info(request, f"The {noun} already matches revision {revision}.")
        else:
            messages.success(
                request, f"Restored revision {revision}: saved as revision {saved.revision}."
            )
    return redirect(history, obj.pk)
