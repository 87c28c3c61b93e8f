"""Entries: list, create, edit, and the order of their rulesets (up/down, add, remove)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlencode

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from assembler.request import MAX_TIER
from promptadmin.content.kinds import KINDS
from promptadmin.content.models import Entry, Ruleset, World
from promptadmin.content.services import catalog
from promptadmin.core.errors import StaleRevisionError
from promptadmin.core.roles import Role
from promptadmin.studio import selectors
from promptadmin.studio.access import HtmxHttpRequest, page_of, render_page, studio_view
from promptadmin.studio.forms.common import (
    ObjectPicker,
    add_service_errors,
    object_value,
    picked_object,
)
from promptadmin.studio.forms.entries import EntryForm
from promptadmin.studio.views.catalog import posted_revision, save_catalog_edit

T = TypeVar("T")

TEMPLATE = "studio/entry_edit.html"


@studio_view()
def entry_list(request: HttpRequest) -> HttpResponse:
    page = page_of(request, selectors.entry_list())
    return render_page(
        request,
        "studio/entry_list.html",
        {
            "section": "entries",
            "kind": KINDS["entry"],
            "page": page,
            "entries": selectors.with_use_counts(page.items),
        },
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


def _context(request: HttpRequest, entry: Entry, form: EntryForm) -> dict[str, object]:
    return {
        "section": "entries",
        "kind": KINDS["entry"],
        "form": form,
        "entry": entry,
        "rulesets": entry.ordered_rulesets(),
        # Pickers, not selects: a game may have thousands of NPCs.
        "ruleset_picker": ObjectPicker(("ruleset",)).render("ruleset", "", {"id": "add-ruleset"}),
        "cast": entry.ordered_cast(),
        "npc_picker": ObjectPicker(("npc",)).render("npc", "", {"id": "add-npc"}),
        "segments": page_of(request, selectors.segments_of(entry), param="segments_page"),
        "preview_url": reverse("studio:preview")
        + "?"
        + urlencode({"entry": entry.slug, "first_turn": "on"}),
        "object_value": object_value(entry),
    }


ENTRY_FIELDS = [*catalog.CATALOG_FIELDS, "world"]


@studio_view()
def entry_edit(request: HttpRequest, slug: str) -> HttpResponse:
    entry = get_object_or_404(Entry.objects.select_related("world"), slug=slug)
    conflict = None
    status = 200
    if request.method == "POST":
        form = EntryForm(request.POST, creating=False)
        if form.is_valid():

            def save(current: Entry, values: dict[str, Any], expected: int) -> Entry:
                fields = {name: values[name] for name in catalog.CATALOG_FIELDS}
                world = World.objects.filter(slug=values["world"]).first()
                if world is None:
                    raise ValidationError({"world": "That world no longer exists."})
                return catalog.entry_update(
                    actor=request.user,
                    entry=current,
                    expected_revision=expected,
                    world=world,
                    **fields,
                )

            saved, form, conflict, merged = save_catalog_edit(
                request,
                entry,
                form,
                save,
                ENTRY_FIELDS,
                lambda data: EntryForm(data, creating=False),
            )
            if saved is not None:
                messages.success(request, merged or f"Saved entry '{saved.name}'.")
                return redirect("studio:entry_edit", saved.slug)
            if conflict is not None:
                entry = Entry.objects.select_related("world").get(pk=entry.pk)
                status = 409
    else:
        form = EntryForm(
            initial={
                "slug": entry.slug,
                "name": entry.name,
                "description": entry.description,
                "world": entry.world.slug,
                "expected_revision": entry.revision,
            },
            creating=False,
        )
    return render_page(
        request, TEMPLATE, {**_context(request, entry, form), "conflict": conflict}, status=status
    )


def _reordered(current: list[T], key: Callable[[T], str], action: str, slug: str) -> list[T] | None:
    """The list after moving ``slug`` up or down, or removing it; None if not listed."""
    slugs = [key(item) for item in current]
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


STALE_LIST = (
    "Someone changed this entry after you opened it, so nothing was changed. "
    "Here is the current {what}: make your change again."
)


def _list_response(
    request: HtmxHttpRequest, entry: Entry, partial: str, error: str, saved: str
) -> HttpResponse:
    """The changed section in place (htmx), or the entry page with a message."""
    if request.htmx:
        entry = Entry.objects.select_related("world").get(pk=entry.pk)
        form = EntryForm(creating=False)
        context = {**_context(request, entry, form), f"{partial}_error": error}
        # Focus goes back to where the author was (studio.js reads data-focus).
        context["focus"] = request.POST.get("action", "")
        return render_page(request, f"{TEMPLATE}#{partial}", context)
    if error:
        messages.error(request, error)
    else:
        messages.success(request, saved)
    return redirect("studio:entry_edit", entry.slug)


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
        added = picked_object(request.POST, "ruleset", ("ruleset",))
        if added is None:
            error = "Choose a ruleset to add."
        else:
            rulesets = [*current, added]
    elif action in ("up", "down", "remove"):
        rulesets = _reordered(current, lambda r: r.slug, action, target)
        if rulesets is None:
            error = f"Ruleset '{target}' is no longer part of this entry."
    else:
        error = "Use the buttons next to a ruleset."
    if rulesets is not None:
        error = _update(request, entry, "rulesets in order", rulesets=rulesets)
    return _list_response(request, entry, "rulesets", error, "Saved the order of rulesets.")


def _update(request: HttpRequest, entry: Entry, what: str, **change: Any) -> str:
    """Apply ``change`` to the entry at the revision the form was loaded at; the error."""
    expected = posted_revision(request)
    if expected is None:
        return STALE_LIST.format(what=what)
    try:
        catalog.entry_update(actor=request.user, entry=entry, expected_revision=expected, **change)
    except StaleRevisionError:
        return STALE_LIST.format(what=what)
    except ValidationError as exc:
        return " ".join(exc.messages)
    return ""


@studio_view(read=Role.AUTHOR)
@require_POST
def entry_cast(request: HttpRequest, slug: str) -> HttpResponse:
    """The entry's cast: add, move, remove an NPC, or change their usual tiers."""
    entry = get_object_or_404(Entry.objects.select_related("world"), slug=slug)
    current = [catalog.CastMember(npc=link.npc, tier=link.tier) for link in entry.ordered_cast()]
    action, _, target = request.POST.get("action", "").partition(":")
    error = ""
    cast: list[catalog.CastMember] | None = None
    tiers = {}
    for member in current:
        raw = request.POST.get(f"tier_{member.npc.slug}", str(member.tier)).strip()
        if not raw.isdigit() or int(raw) > MAX_TIER:
            error = f"The tier of {member.npc.name} is a whole number from 0 to {MAX_TIER}."
            break
        tiers[member.npc.slug] = int(raw)
    if not error:
        current = [catalog.CastMember(npc=m.npc, tier=tiers[m.npc.slug]) for m in current]
        if action == "add":
            added = picked_object(request.POST, "npc", ("npc",))
            if added is None:
                error = "Choose an NPC to add."
            else:
                cast = [*current, catalog.CastMember(npc=added, tier=0)]
        elif action in ("up", "down", "remove"):
            cast = _reordered(current, lambda m: m.npc.slug, action, target)
            if cast is None:
                error = f"NPC '{target}' is no longer in this entry's cast."
        elif action == "save":
            cast = current
        else:
            error = "Use the buttons next to an NPC."
    if cast is not None:
        error = _update(request, entry, "cast", cast=cast)
    return _list_response(request, entry, "cast", error, "Saved the cast.")
