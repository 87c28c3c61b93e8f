"""Entries: list, create, edit, and the order of their rulesets (up/down, add, remove)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from promptadmin.models import Entry, Ruleset
from promptadmin.roles import Role
from promptadmin.services import catalog
from promptadmin.studio import selectors
from promptadmin.studio.access import render_page, studio_view
from promptadmin.studio.forms import EntryForm, add_service_errors, object_value
from promptadmin.studio.views.catalog import KINDS

TEMPLATE = "studio/entry_edit.html"


@studio_view()
def entry_list(request: HttpRequest) -> HttpResponse:
    return render_page(
        request,
        "studio/entry_list.html",
        {"section": "entries", "kind": KINDS["entry"], "entries": selectors.entry_list()},
    )


@studio_view(read=Role.AUTHOR)
def entry_create(request: HttpRequest) -> HttpResponse:
    form = EntryForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            entry = catalog.entry_create(
                actor=request.user,
                world=data["world"],
                rulesets=list(data["rulesets"]),
                **form.service_fields(),
            )
        except ValidationError as exc:
            add_service_errors(form, exc)
        else:
            messages.success(request, f"Created entry '{entry.name}'.")
            return redirect("studio:entry_edit", entry.slug)
    return render_page(
        request, TEMPLATE, {"section": "entries", "kind": KINDS["entry"], "form": form}
    )


def _context(entry: Entry, form: EntryForm) -> dict[str, object]:
    rulesets = entry.ordered_rulesets()
    return {
        "section": "entries",
        "kind": KINDS["entry"],
        "form": form,
        "entry": entry,
        "rulesets": rulesets,
        "addable": Ruleset.objects.exclude(pk__in=[r.pk for r in rulesets]).order_by("name"),
        "segments": selectors.segments_of(entry),
        "segments_url": reverse("studio:segment_list")
        + "?"
        + urlencode({"object": object_value(entry)}),
        "preview_url": reverse("studio:preview")
        + "?"
        + urlencode({"entry": entry.slug, "first_turn": "on"}),
        "object_value": object_value(entry),
    }


@studio_view()
def entry_edit(request: HttpRequest, slug: str) -> HttpResponse:
    entry = get_object_or_404(Entry.objects.select_related("world"), slug=slug)
    if request.method == "POST":
        form = EntryForm(request.POST, creating=False)
        if form.is_valid():
            try:
                entry = catalog.entry_update(
                    actor=request.user,
                    entry=entry,
                    world=form.cleaned_data["world"],
                    **form.service_fields(),
                )
            except ValidationError as exc:
                add_service_errors(form, exc)
            else:
                messages.success(request, f"Saved entry '{entry.name}'.")
                return redirect("studio:entry_edit", entry.slug)
    else:
        form = EntryForm(
            initial={
                "slug": entry.slug,
                "name": entry.name,
                "description": entry.description,
                "world": entry.world.slug,
            },
            creating=False,
        )
    return render_page(request, TEMPLATE, _context(entry, form))


def _reordered(current: list[Ruleset], action: str, slug: str) -> list[Ruleset] | None:
    """The rulesets after moving ``slug`` up or down, or removing it; None if not listed."""
    slugs = [ruleset.slug for ruleset in current]
    if slug not in slugs:
        return None
    index = slugs.index(slug)
    result = list(current)
    if action == "remove":
        del result[index]
    elif action == "up" and index > 0:
        result[index - 1], result[index] = result[index], result[index - 1]
    elif action == "down" and index < len(result) - 1:
        result[index + 1], result[index] = result[index], result[index + 1]
    return result


@studio_view(read=Role.AUTHOR)
@require_POST
def entry_rulesets(request: HttpRequest, slug: str) -> HttpResponse:
    """Move, add or remove one of the entry's rulesets (a plain form; htmx swaps in place)."""
    entry = get_object_or_404(Entry.objects.select_related("world"), slug=slug)
    current = entry.ordered_rulesets()
    action, _, target = request.POST.get("action", "").partition(":")
    error = ""
    rulesets: list[Ruleset] | None = None
    if action == "add":
        added = Ruleset.objects.filter(slug=request.POST.get("ruleset", "")).first()
        if added is None:
            error = "Choose a ruleset to add."
        else:
            rulesets = [*current, added]
    elif action in ("up", "down", "remove"):
        rulesets = _reordered(current, action, target)
        if rulesets is None:
            error = f"Ruleset '{target}' is no longer part of this entry."
    else:
        error = "Use the buttons next to a ruleset."
    if rulesets is not None:
        try:
            catalog.entry_update(actor=request.user, entry=entry, rulesets=rulesets)
        except ValidationError as exc:
            error = " ".join(exc.messages)
    if getattr(request, "htmx", None):
        form = EntryForm(creating=False)
        context = {**_context(entry, form), "rulesets_error": error}
        return render_page(request, f"{TEMPLATE}#rulesets", context)
    if error:
        messages.error(request, error)
    else:
        messages.success(request, "Saved the order of rulesets.")
    return redirect("studio:entry_edit", entry.slug)
