"""Lore: the page of a world's lore (search, filters, batch edit, the total tokens, a
"test a line" box), the entry editor (with stale-edit merging and a test box for the
entry as typed), deletion, history and restore."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect
from django.template.defaultfilters import filesizeformat
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers

import assembler
from assembler.lore import LoreError
from promptadmin.core.errors import StaleRevisionError
from promptadmin.core.roles import Role
from promptadmin.core.uploads import upload_too_large
from promptadmin.lore import selectors, services, worldinfo
from promptadmin.lore.models import LoreEntry
from promptadmin.lore.worldinfo import MAX_FILE_BYTES
from promptadmin.studio import diffs, merging
from promptadmin.studio.access import (
    HtmxHttpRequest,
    fragment_or_page,
    page_of,
    render_page,
    studio_view,
)
from promptadmin.studio.forms.common import add_service_errors
from promptadmin.studio.forms.history import CompareForm, RestoreForm
from promptadmin.studio.forms.lore import (
    EDITABLE,
    EVERY_WORLD,
    LoreBatchForm,
    LoreFilterForm,
    LoreForm,
    LoreImportForm,
    LoreTestForm,
    world_of,
)
from promptadmin.studio.presenters import highlighted

EDITOR = "studio/lore_edit.html"
LIST = "studio/lore_list.html"

# What a lore entry's history and merges compare, besides the text, with their labels.
FIELD_LABELS = {
    "title": "Title",
    "world": "World",
    "keys": "Keys",
    "whole_words": "Whole words",
    "case_sensitive": "Case sensitive",
    "priority": "Priority",
    "group": "Group",
    "constant": "Constant",
    "recursive": "Recursive",
    "active": "Active",
}
MERGE_FIELDS = ["title", "content", *[name for name in FIELD_LABELS if name != "title"]]
MERGE_LABELS = {"content": "Text", **FIELD_LABELS}


def _filtered(data: dict[str, Any]) -> Any:
    world = data.get("world") or None
    return selectors.lore_list(
        world=world if world != EVERY_WORLD else None,
        every_world=world == EVERY_WORLD,
        group=data.get("group") or None,
        active=data.get("active"),
        search=data.get("q") or None,
    )


@studio_view()
@vary_on_headers("HX-Request")
def lore_list(request: HtmxHttpRequest) -> HttpResponse:
    """A world's lore (or all of it): search, filters, keys as chips, the total tokens, a
    batch edit of a selection, and a box to test a line against the world's lore."""
    form = LoreFilterForm(request.GET, groups=selectors.lore_groups())
    valid = form.is_valid()
    found = _filtered(form.cleaned_data) if valid else LoreEntry.objects.none()
    page = page_of(request, found)
    # The world the test box and the new-entry link start from: a world chosen, if any.
    chosen = form.cleaned_data.get("world", "") if valid else ""
    test_world = chosen if chosen != EVERY_WORLD else ""
    return render_page(
        request,
        fragment_or_page(request, LIST, "results"),
        {
            "section": "lore",
            "form": form,
            "page": page,
            "total_tokens": selectors.lore_total_tokens(found),
            "batch": LoreBatchForm(),
            "test_form": LoreTestForm(initial={"world": test_world}),
            "import_form": LoreImportForm(initial={"world": test_world}),
            "test_world": test_world,
        },
    )


@csrf_exempt  # only until the upload limit is in place: then checked, see below
@studio_view(write=Role.AUTHOR)
def lore_import(request: HttpRequest) -> HttpResponse:
    """Import a SillyTavern World Info file into a world: a dry run shows what would
    change, the import what changed, entry by entry.

    The CSRF check reads the form, so it runs after the upload limit is installed (as the
    legacy import does), never before and never not at all."""
    if request.method == "POST" and upload_too_large(request, "file", MAX_FILE_BYTES):
        refused = f"The file is over {filesizeformat(MAX_FILE_BYTES)}, the most an import takes."
        return _lore_import(request, refused=refused)
    return _lore_import(request)


@csrf_protect
def _lore_import(request: HttpRequest, refused: str | None = None) -> HttpResponse:
    form = LoreImportForm(
        request.POST if request.method == "POST" and not refused else None,
        request.FILES if request.method == "POST" and not refused else None,
        initial={"world": request.GET.get("world", "")},
    )
    report = None
    if form.is_bound and form.is_valid():
        world = world_of(form.cleaned_data["world"])
        try:
            if world is None:
                raise ValidationError({"world": "No such world."})
            data = worldinfo.read(form.cleaned_data["file"].read())
            report = services.lorebook_import(
                actor=request.user, world=world, data=data, dry_run=form.dry_run
            )
        except ValidationError as exc:
            add_service_errors(form, exc)
    status = 413 if refused else 400 if form.is_bound and form.errors else 200
    context = {"section": "lore", "form": form, "report": report, "refused": refused}
    return render_page(request, "studio/lore_import.html", context, status=status)


@studio_view(write=Role.AUTHOR)
@require_POST
def lore_batch(request: HttpRequest) -> HttpResponse:
    """Set the group, priority or active flag of the ticked entries, all or none."""
    form = LoreBatchForm(request.POST)
    back = request.POST.get("next") or reverse("studio:lore_list")
    if not back.startswith("/"):
        back = reverse("studio:lore_list")
    if not form.is_valid():
        messages.error(request, " ".join(e for errors in form.errors.values() for e in errors))
        return redirect(back)
    changes = form.changes()
    if form.errors:
        messages.error(request, " ".join(e for errors in form.errors.values() for e in errors))
        return redirect(back)
    try:
        saved = services.lore_entries_update(
            actor=request.user, revisions=form.cleaned_data["entry"], **changes
        )
    except StaleRevisionError as exc:
        messages.error(request, f"{exc} Nothing was changed: check the list and try again.")
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(
            request, f"Changed {len(saved)} lore entr{'y' if len(saved) == 1 else 'ies'}."
        )
    return redirect(back)


def _activations(world: str | None, text: str) -> tuple[list[dict[str, Any]], str | None]:
    try:
        found = selectors.lore_test(world, text)
    except LoreError as error:
        return [], str(error)
    return [_activation(a) for a in found], None


def _activation(activation: assembler.LoreActivation) -> dict[str, Any]:
    return {
        **activation.to_dict(),
        "url": reverse("studio:lore_edit", args=[activation.entry.id]),
        "keys": list(activation.entry.keys),
    }


def _spans(activations: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """Where the text itself fired entries (not their content, recursively)."""
    return [
        (match["start"], match["end"])
        for row in activations
        if row["trigger"]["source"] == "text"
        for match in row["matches"]
    ]


# The test boxes change nothing: a POST (a text can be long, and never belongs in a URL)
# that viewers may send.
@studio_view(write=Role.VIEWER)
@require_POST
def lore_test(request: HttpRequest) -> HttpResponse:
    """What a line fires in a world's lore, and why, with what fired highlighted."""
    form = LoreTestForm(request.POST)
    form.is_valid()
    text = form.cleaned_data.get("text") or ""
    world = form.cleaned_data.get("world") or None
    found, error = _activations(world if world_of(world or "") else None, text)
    error = error or form.errors.get("text", [None])[0]
    return render_page(
        request,
        "studio/_lore_test.html",
        {
            "found": found,
            "error": error,
            "text": text,
            "pieces": highlighted(text, _spans(found)),
            "world": world,
        },
    )


@studio_view(write=Role.VIEWER)
@require_POST
def lore_check(request: HttpRequest) -> HttpResponse:
    """The editor's test box: does the entry, as typed, fire for the line, and on what."""
    form = LoreForm(request.POST)
    form.is_valid()
    text = request.POST.get("test_text", "")
    data = form.cleaned_data
    found: list[dict[str, Any]] = []
    error = None
    try:
        entry = assembler.LoreEntry(
            id=0,
            title=data.get("title") or "",
            content=data.get("content") or "",
            keys=data.get("keys") or (),
            whole_words=bool(data.get("whole_words")),
            case_sensitive=bool(data.get("case_sensitive")),
            constant=bool(data.get("constant")),
        )
        activations = assembler.test_lore(assembler.LoreBook([entry]), text, recursion=0)
        found = [a.to_dict() for a in activations]
    except (LoreError, TypeError) as exc:
        error = str(exc).split(": ", 1)[-1]
    return render_page(
        request,
        "studio/_lore_test.html",
        {
            "found": found,
            "error": error,
            "text": text,
            "pieces": highlighted(text, _spans(found)),
            "draft": True,
        },
    )


def _initial(entry: LoreEntry) -> dict[str, Any]:
    return {
        "world": entry.world.slug if entry.world is not None else EVERY_WORLD,
        "title": entry.title,
        "keys": "\n".join(entry.keys),
        "content": entry.content,
        "whole_words": entry.whole_words,
        "case_sensitive": entry.case_sensitive,
        "priority": entry.priority,
        "group": entry.group,
        "constant": entry.constant,
        "recursive": entry.recursive,
        "active": entry.active,
        "expected_revision": entry.revision,
    }


def _values_of(entry_or_record: Any) -> dict[str, Any]:
    """An entry's (or history record's) mergeable values, the world by slug."""
    values = {name: getattr(entry_or_record, name) for name in MERGE_FIELDS if name != "world"}
    values["keys"] = "\n".join(values["keys"] or [])
    world_id = entry_or_record.world_id
    values["world"] = EVERY_WORLD
    if world_id is not None:
        world = selectors.world_by_id(world_id)
        values["world"] = world.slug if world is not None else f"#{world_id} (deleted)"
    return values


def _values_of_form(form: LoreForm) -> dict[str, Any]:
    data = form.cleaned_data
    values = {name: data[name] for name in MERGE_FIELDS if name != "world"}
    values["keys"] = "\n".join(values["keys"])
    values["world"] = data["world"].slug if data["world"] is not None else EVERY_WORLD
    return values


def _service_fields(values: dict[str, Any]) -> dict[str, Any]:
    fields = {name: values[name] for name in EDITABLE if name not in ("world", "keys")}
    fields["keys"] = [line for line in values["keys"].splitlines() if line.strip()]
    fields["world"] = world_of(values["world"])
    return fields


def _rebound(request: HttpRequest, values: dict[str, Any], revision: int) -> QueryDict:
    """The posted form with ``values`` in it, now based on ``revision``."""
    data = request.POST.copy()
    for name in MERGE_FIELDS:
        value = values[name]
        if isinstance(value, bool):
            if value:
                data[name] = "on"
            else:
                data.pop(name, None)
        else:
            data[name] = "" if value is None else str(value)
        data.pop(f"resolve_{name}", None)
    data["expected_revision"] = str(revision)
    return data


@studio_view(read=Role.AUTHOR)
def lore_create(request: HtmxHttpRequest) -> HttpResponse:
    if request.method == "POST":
        form = LoreForm(request.POST)
        if form.is_valid():
            try:
                entry = services.lore_entry_create(actor=request.user, **form.service_fields())
            except ValidationError as exc:
                add_service_errors(form, exc)
            else:
                messages.success(request, f"Created lore entry #{entry.pk}.")
                return redirect("studio:lore_edit", entry.pk)
    else:
        world = request.GET.get("world", "")
        form = LoreForm(initial={"world": world if world_of(world) else EVERY_WORLD})
    return render_page(request, EDITOR, {"section": "lore", "form": form, "entry": None})


DELETED_MESSAGE = (
    "Someone deleted this lore entry after you opened it. Your text is below: save it as a "
    "new entry, or copy it."
)


@studio_view()
def lore_edit(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Read (anyone) or change (authors) a lore entry; never overwrite someone else's save:
    a stale save is merged field by field, or the fields both changed are shown for a
    decision (as for segments)."""
    entry = LoreEntry.objects.select_related("world", "updated_by").filter(pk=pk).first()
    if entry is None:
        return _deleted(request, pk)
    conflict = None
    status = 200
    if request.method == "POST":
        form = LoreForm(request.POST, editing=True)
        if form.is_valid():
            expected = form.cleaned_data["expected_revision"]
            mine = merging.resolved(
                request, entry, expected, _values_of_form(form), MERGE_FIELDS, _values_of
            )
            try:
                saved = services.lore_entry_update(
                    actor=request.user,
                    entry=entry,
                    expected_revision=expected,
                    **_service_fields(mine),
                )
            except StaleRevisionError:
                theirs = LoreEntry.objects.select_related("world", "updated_by").get(pk=pk)
                merged, conflict, message, error = merging.merge_or_conflict(
                    current=theirs,
                    expected=expected,
                    mine=mine,
                    names=MERGE_FIELDS,
                    labels=MERGE_LABELS,
                    values_of=_values_of,
                    save=lambda current, values: services.lore_entry_update(
                        actor=request.user,
                        entry=current,
                        expected_revision=current.revision,
                        **_service_fields(values),
                    ),
                    text_fields=("content",),
                )
                if merged is not None:
                    messages.success(request, message)
                    return redirect("studio:lore_edit", merged.pk)
                form = LoreForm(_rebound(request, conflict.values, theirs.revision), editing=True)
                if form.is_valid() and error is not None:
                    add_service_errors(form, error)
                entry = theirs
                status = 409
            except LoreEntry.DoesNotExist:
                form.add_error(None, DELETED_MESSAGE)
                status = 409
            except ValidationError as exc:
                add_service_errors(form, exc)
            else:
                if saved.revision == entry.revision:
                    messages.info(request, "Nothing changed, so nothing was saved.")
                else:
                    messages.success(request, f"Saved revision {saved.revision}.")
                return redirect("studio:lore_edit", saved.pk)
    else:
        form = LoreForm(initial=_initial(entry), editing=True)
    return render_page(
        request,
        EDITOR,
        {"section": "lore", "form": form, "entry": entry, "conflict": conflict},
        status=status,
    )


def _deleted(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """A deleted entry: a 404, unless someone was saving it, whose text stays on screen."""
    record = LoreEntry.history.filter(id=pk).order_by("-history_id").first()  # type: ignore[attr-defined]
    if request.method != "POST" or record is None:
        raise Http404("No such lore entry.")
    form = LoreForm(request.POST)
    form.is_valid()
    form.add_error(None, DELETED_MESSAGE)
    return render_page(
        request,
        EDITOR,
        {"section": "lore", "form": form, "entry": None, "deleted": True},
        status=409,
    )


@studio_view(read=Role.AUTHOR)
@require_POST
def lore_delete(request: HttpRequest, pk: int) -> HttpResponse:
    entry = get_object_or_404(LoreEntry, pk=pk)
    try:
        expected = int(request.POST.get("expected_revision", ""))
    except ValueError:
        messages.error(
            request, "The delete form did not say which revision you saw: nothing was deleted."
        )
        return redirect("studio:lore_edit", pk)
    try:
        services.lore_entry_delete(actor=request.user, entry=entry, expected_revision=expected)
    except StaleRevisionError:
        messages.error(
            request,
            "Someone changed this lore entry after you opened it, so it was not deleted. "
            "Here is the latest version.",
        )
        return redirect("studio:lore_edit", pk)
    messages.success(request, f"Deleted lore entry #{pk}. Its history is kept.")
    return redirect("studio:lore_list")


def _shown(record: Any) -> dict[str, Any]:
    values = _values_of(record)
    values["world"] = "every world" if values["world"] == EVERY_WORLD else values["world"]
    return values


@studio_view()
@vary_on_headers("HX-Request")
def lore_history(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    entry = get_object_or_404(LoreEntry, pk=pk)
    if request.method == "POST":
        return _restore(request, entry)
    records = selectors.lore_revisions(entry)
    by_number: dict[int, Any] = {}
    for record in records:  # newest first: the last record of each revision wins
        by_number.setdefault(record.revision, record)
    numbers = sorted(by_number)
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
        "fields": diffs.field_changes(_shown(older), _shown(newer), FIELD_LABELS),
    }
    return render_page(
        request,
        fragment_or_page(request, "studio/lore_history.html", "diff"),
        {
            "section": "lore",
            "entry": entry,
            "records": records,
            "diff": diff,
            "compare_a": min(a, b),
            "compare_b": max(a, b),
        },
    )


def _restore(request: HttpRequest, entry: LoreEntry) -> HttpResponse:
    form = RestoreForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose a revision to restore.")
        return redirect("studio:lore_history", entry.pk)
    revision = form.cleaned_data["revision"]
    try:
        saved = services.lore_entry_restore(
            actor=request.user,
            entry=entry,
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
        if saved.revision == entry.revision:
            messages.info(request, f"The entry already matches revision {revision}.")
        else:
            messages.success(
                request, f"Restored revision {revision}: saved as revision {saved.revision}."
            )
    return redirect("studio:lore_history", entry.pk)
