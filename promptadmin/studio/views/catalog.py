"""Worlds, rulesets and NPCs: list, create, edit, delete. Deleting entries is shared here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from promptadmin.content.kinds import KINDS
from promptadmin.content.models import Ruleset, World
from promptadmin.content.services import catalog
from promptadmin.core.errors import InUseError, StaleRevisionError
from promptadmin.core.roles import Role
from promptadmin.studio import merging, selectors
from promptadmin.studio.access import page_of, render_page, studio_view
from promptadmin.studio.forms.catalog import CatalogForm
from promptadmin.studio.forms.common import add_service_errors, object_value


@studio_view()
def catalog_list(request: HttpRequest, kind: str) -> HttpResponse:
    page = page_of(request, selectors.catalog_list(kind))
    return render_page(
        request,
        "studio/catalog_list.html",
        {
            "section": KINDS[kind].section,
            "kind": KINDS[kind],
            "page": page,
            "objects": selectors.with_use_counts(page.items),
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


LABELS = {"name": "Name", "slug": "Slug", "description": "Description", "world": "World"}


def catalog_values(obj: Any) -> dict[str, Any]:
    """The fields of a world, ruleset, NPC or entry (or a history record of one) that a
    merge compares; an entry's world as its slug."""
    values = {name: getattr(obj, name) for name in catalog.CATALOG_FIELDS}
    if hasattr(obj, "world_id"):
        world = World.objects.filter(pk=obj.world_id).values_list("slug", flat=True).first()
        values["world"] = world or f"#{obj.world_id} (deleted)"
    return values


def save_catalog_edit(
    request: HttpRequest,
    obj: Any,
    form: Any,
    save: Callable[[Any, dict[str, Any], int], Any],
    names: list[str],
    make_form: Callable[[QueryDict], Any],
) -> tuple[Any, Any, merging.Conflict | None, str]:
    """Save the form's values over ``obj`` (``save(current, values, expected_revision)``).

    Returns (the saved object or None, the form to show, the conflict or None, the message
    saying what was merged, if anything). A save from an older revision is merged (see
    :mod:`promptadmin.studio.merging`); ``make_form`` rebinds the form to merged data.
    """
    expected = form.cleaned_data["expected_revision"]
    mine = {name: form.cleaned_data[name] for name in names}
    if "world" in mine:
        mine["world"] = mine["world"].slug
    mine = merging.resolved(request, obj, expected, mine, names, catalog_values)
    try:
        return save(obj, mine, expected), form, None, ""
    except StaleRevisionError:
        current = type(obj)._default_manager.get(pk=obj.pk)
        merged, conflict, message, error = merging.merge_or_conflict(
            current=current,
            expected=expected,
            mine=mine,
            names=names,
            labels=LABELS,
            values_of=catalog_values,
            save=lambda now, values: save(now, values, now.revision),
            text_fields=("description",),
        )
        if merged is not None:
            return merged, form, None, message
        data = request.POST.copy()
        for name in names:
            data[name] = conflict.values[name]
            data.pop(f"resolve_{name}", None)
            data.pop(f"{name}_search", None)  # a picker's box: its value stands
        data["expected_revision"] = str(current.revision)
        form = make_form(data)
        if form.is_valid() and error is not None:
            add_service_errors(form, error)
        return None, form, conflict, ""
    except ValidationError as exc:
        add_service_errors(form, exc)
        return None, form, None, ""


@studio_view()
def catalog_edit(request: HttpRequest, kind: str, slug: str) -> HttpResponse:
    spec = KINDS[kind]
    obj = get_object_or_404(spec.model, slug=slug)
    conflict = None
    status = 200
    if request.method == "POST":
        form = CatalogForm(request.POST, editing=True)
        if form.is_valid():

            def save(current: Any, values: dict[str, Any], expected: int) -> Any:
                return catalog.catalog_update(
                    actor=request.user, obj=current, expected_revision=expected, **values
                )

            saved, form, conflict, merged = save_catalog_edit(
                request,
                obj,
                form,
                save,
                list(catalog.CATALOG_FIELDS),
                lambda data: CatalogForm(data, editing=True),
            )
            if saved is not None:
                messages.success(request, merged or f"Saved {spec.singular} '{saved.name}'.")
                return redirect(f"studio:{kind}_edit", saved.slug)
            if conflict is not None:
                obj = conflict.theirs
                status = 409
    else:
        form = CatalogForm(
            initial={
                **{name: getattr(obj, name) for name in catalog.CATALOG_FIELDS},
                "expected_revision": obj.revision,
            },
            editing=True,
        )
    # Worlds and rulesets are used by entries; say which, since they cannot go while used.
    entries = None
    if isinstance(obj, World | Ruleset):
        entries = page_of(request, obj.entries.order_by("name", "slug"), param="entries_page")
    return render_page(
        request,
        "studio/catalog_edit.html",
        {
            "section": spec.section,
            "kind": spec,
            "form": form,
            "object": obj,
            "object_value": object_value(obj),
            "segments": page_of(request, selectors.segments_of(obj), param="segments_page"),
            "entries": entries,
            "conflict": conflict,
        },
        status=status,
    )


def posted_revision(request: HttpRequest) -> int | None:
    try:
        return int(request.POST.get("expected_revision", ""))
    except ValueError:
        return None


STALE_DELETE = (
    "Someone changed this {what} after you opened it, so it was not deleted. "
    "Here is the latest version; delete it from this page if you still want to."
)
BLIND_DELETE = (
    "The delete form did not say which version you saw, so nothing was deleted. "
    "Delete it from this page if you still want to."
)


def delete_checked(request: HttpRequest, obj: Any, what: str) -> str | None:
    """Delete ``obj`` if it is still the revision the author saw; else say why not."""
    expected = posted_revision(request)
    if expected is None:
        return BLIND_DELETE
    try:
        catalog.catalog_delete(actor=request.user, obj=obj, expected_revision=expected)
    except StaleRevisionError:
        return STALE_DELETE.format(what=what)
    except InUseError as exc:
        return str(exc)
    return None


@studio_view(read=Role.AUTHOR)
@require_POST
def catalog_delete(request: HttpRequest, kind: str, slug: str) -> HttpResponse:
    spec = KINDS[kind]
    obj = get_object_or_404(spec.model, slug=slug)
    error = delete_checked(request, obj, spec.singular)
    if error:
        messages.error(request, error)
        return redirect(f"studio:{kind}_edit", slug)
    messages.success(request, f"Deleted {spec.singular} '{obj.name}'. Its history is kept.")
    return redirect(f"studio:{kind}_list")
