"""Worlds, rulesets and NPCs: list, create, edit, delete. Deleting entries is shared here."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db.models import Model
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from promptadmin.models import NPC, Entry, Ruleset, World
from promptadmin.roles import Role
from promptadmin.services import catalog
from promptadmin.services.errors import InUseError
from promptadmin.studio import selectors
from promptadmin.studio.access import render_page, studio_view
from promptadmin.studio.forms import CatalogForm, add_service_errors, object_value


@dataclass(frozen=True)
class Kind:
    """How the studio names one kind of object."""

    key: str
    model: type[Model]
    singular: str
    plural: str
    section: str
    scopes: tuple[str, ...]  # the segment scopes that belong to this kind


KINDS = {
    "world": Kind("world", World, "world", "Worlds", "worlds", ("world",)),
    "ruleset": Kind("ruleset", Ruleset, "ruleset", "Rulesets", "rulesets", ("ruleset",)),
    "npc": Kind("npc", NPC, "NPC", "NPCs", "npcs", ("npc",)),
    "entry": Kind("entry", Entry, "entry", "Entries", "entries", ("entry", "entry_start")),
}


@studio_view()
def catalog_list(request: HttpRequest, kind: str) -> HttpResponse:
    return render_page(
        request,
        "studio/catalog_list.html",
        {
            "section": KINDS[kind].section,
            "kind": KINDS[kind],
            "objects": selectors.catalog_list(kind),
        },
    )


@studio_view(read=Role.AUTHOR)
def catalog_create(request: HttpRequest, kind: str) -> HttpResponse:
    spec = KINDS[kind]
    form = CatalogForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            obj = catalog.catalog_create(
                actor=request.user,
                model=spec.model,  # type: ignore[arg-type]
                **form.service_fields(),
            )
        except ValidationError as exc:
            add_service_errors(form, exc)
        else:
            messages.success(request, f"Created {spec.singular} '{obj.name}'.")
            return redirect(f"studio:{kind}_edit", obj.slug)
    return render_page(
        request,
        "studio/catalog_edit.html",
        {"section": spec.section, "kind": spec, "form": form, "object": None},
    )


@studio_view()
def catalog_edit(request: HttpRequest, kind: str, slug: str) -> HttpResponse:
    spec = KINDS[kind]
    obj = get_object_or_404(spec.model, slug=slug)
    if request.method == "POST":
        form = CatalogForm(request.POST)
        if form.is_valid():
            try:
                obj = catalog.catalog_update(actor=request.user, obj=obj, **form.service_fields())
            except ValidationError as exc:
                add_service_errors(form, exc)
            else:
                messages.success(request, f"Saved {spec.singular} '{obj.name}'.")
                return redirect(f"studio:{kind}_edit", obj.slug)
    else:
        form = CatalogForm(initial={name: getattr(obj, name) for name in catalog.CATALOG_FIELDS})
    # Worlds and rulesets are used by entries; say which, since they cannot go while used.
    entries = obj.entries.order_by("name") if isinstance(obj, World | Ruleset) else None
    return render_page(
        request,
        "studio/catalog_edit.html",
        {
            "section": spec.section,
            "kind": spec,
            "form": form,
            "object": obj,
            "object_value": object_value(obj),
            "segments": selectors.segments_of(obj),
            "entries": entries,
        },
    )


@studio_view(read=Role.AUTHOR)
@require_POST
def catalog_delete(request: HttpRequest, kind: str, slug: str) -> HttpResponse:
    spec = KINDS[kind]
    obj = get_object_or_404(spec.model, slug=slug)
    try:
        catalog.catalog_delete(actor=request.user, obj=obj)  # type: ignore[type-var]
    except InUseError as exc:
        messages.error(request, str(exc))
        return redirect(f"studio:{kind}_edit", slug)
    messages.success(request, f"Deleted {spec.singular} '{obj.name}'. Its history is kept.")
    return redirect(f"studio:{kind}_list")
