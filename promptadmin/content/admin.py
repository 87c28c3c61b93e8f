"""Django admin for superusers. Saves and deletes go through the same services as the API."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.forms import ModelForm
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from rest_framework_api_key.admin import APIKeyModelAdmin
from rest_framework_api_key.models import APIKey
from simple_history.admin import SimpleHistoryAdmin

from promptadmin.content.kinds import KINDS
from promptadmin.content.models import (
    NPC,
    SEGMENT_SCOPES,
    ApiKey,
    Entry,
    EntryNpc,
    EntryRuleset,
    Ruleset,
    Scope,
    Segment,
    World,
)
from promptadmin.content.search import segment_search
from promptadmin.content.services import api_keys, catalog, segments
from promptadmin.content.services.segments import EDITABLE_FIELDS
from promptadmin.core import storedjson
from promptadmin.core.admin import SuperuserOnly
from promptadmin.core.errors import ConflictError, StaleRevisionError

BLIND_DELETE = (
    "The delete form did not say which revision you saw, so nothing was deleted: "
    "delete it again from this page if you still want to."
)


def _revision(raw: str | None) -> int | None:
    try:
        return int(raw or "")
    except ValueError:
        return None


def _stale_delete(model: Any, expected: int, current: int, name: str = "") -> str:
    what = str(model._meta.verbose_name).capitalize() + (f" '{name}'" if name else "")
    return (
        f"{what} was changed by someone else: you saw revision {expected}, the current "
        f"revision is {current}. Nothing was deleted: this is the current version; delete it "
        "again if you still want to."
    )


class ServiceDeleteMixin:
    """Deletes go through the service and name the revision the admin saw.

    The change page's delete link carries its revision (``?revision=``, see
    templates/admin/promptadmin/submit_line.html) into the confirmation, which posts it
    back; the bulk confirmation posts each object's revision as listed. A delete of an
    older revision, or one naming none, deletes nothing and says why: the admin's delete
    views run in a transaction, so the refusal also takes back the log entry Django wrote.
    """

    delete_confirmation_template = "admin/revision_delete_confirmation.html"
    delete_selected_confirmation_template = "admin/revision_delete_selected_confirmation.html"

    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        seen = _revision(request.GET.get("revision"))
        obj = self.get_object(request, unquote(object_id))  # type: ignore[attr-defined]
        if obj is None or not self.has_delete_permission(request, obj):  # type: ignore[attr-defined]
            return super().delete_view(request, object_id, extra_context)  # type: ignore[misc, no-any-return]
        change_url = reverse(
            f"admin:{obj._meta.app_label}_{obj._meta.model_name}_change", args=[quote(obj.pk)]
        )
        if request.method == "GET" and seen is not None and seen != obj.revision:
            # Opened from a page that is out of date: say so before asking to confirm.
            messages.error(request, _stale_delete(type(obj), seen, obj.revision))
            return HttpResponseRedirect(change_url)
        context = {
            **(extra_context or {}),
            "expected_revision": obj.revision if seen is None else seen,
        }
        try:
            return super().delete_view(request, object_id, context)  # type: ignore[misc, no-any-return]
        except ConflictError as exc:
            messages.error(request, str(exc))
            return HttpResponseRedirect(change_url)

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        self._delete_checked(request, obj, request.POST.get("expected_revision"))

    def response_action(self, request: HttpRequest, queryset: QuerySet[Any]) -> Any:
        # Django's bulk delete logs, then deletes one by one: all of it, or none of it.
        try:
            with transaction.atomic():
                return super().response_action(request, queryset)  # type: ignore[misc]
        except ConflictError as exc:
            messages.error(request, str(exc))
            return HttpResponseRedirect(request.get_full_path())

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        for obj in queryset:
            self._delete_checked(
                request, obj, request.POST.get(f"expected_revision_{obj.pk}"), name=str(obj)
            )

    def _delete_checked(
        self, request: HttpRequest, obj: Any, raw: str | None, name: str = ""
    ) -> None:
        expected = _revision(raw)
        if expected is None:
            raise ConflictError(BLIND_DELETE)
        try:
            self._delete(request, obj, expected)
        except StaleRevisionError as exc:
            raise ConflictError(_stale_delete(type(obj), exc.expected, exc.current, name)) from None

    def _delete(self, request: HttpRequest, obj: Any, expected: int) -> None:
        catalog.catalog_delete(actor=request.user, obj=obj, expected_revision=expected)


STALE_ADVICE = "Nothing was saved: open it again to see the other change, then redo yours."


class StaleSaveMixin:
    """A save that loses the race to another one is refused like a stale form.

    The form checks the revision it was loaded with; the service checks again under a row
    lock, so a save landing between the two is refused there. The admin's change view is
    atomic, so nothing of this save (inlines included) stays; the page is shown again with
    the other change and says so, instead of answering 500 or "changed successfully".
    """

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        try:
            return super().changeform_view(  # type: ignore[misc, no-any-return]
                request, object_id, form_url, extra_context
            )
        except StaleRevisionError as exc:
            messages.error(request, f"{exc} {STALE_ADVICE}")
            return HttpResponseRedirect(request.get_full_path())


class RevisionAdminForm(forms.ModelForm):
    """A change form carrying the revision it was loaded with.

    Like every other entry point, a save made from an older copy is refused rather than
    written over someone else's change (the service checks again under a row lock).
    """

    expected_revision = forms.IntegerField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            self.fields["expected_revision"].required = True
            self.fields["expected_revision"].initial = self.instance.revision

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        expected = cleaned.get("expected_revision")
        if self.instance.pk is not None and expected is not None:
            model = type(self.instance)
            current = (
                model._default_manager.filter(pk=self.instance.pk)
                .values_list("revision", flat=True)
                .first()
            )
            if current is not None and current != expected:
                what = str(model._meta.verbose_name).capitalize()
                stale = StaleRevisionError(expected=expected, current=current, what=what)
                raise forms.ValidationError(f"{stale} {STALE_ADVICE}", code="stale")
        return cleaned


class MetadataField(forms.CharField):
    """A JSON object typed as text, parsed and checked as every stored JSON value is.

    Django's JSONField parses with plain ``json.loads``: a deeply nested value raised
    RecursionError (a 500), and NaN or 1e400 got as far as the model's check. Here every
    failure is an error on the field, and the text is shown back as typed.
    """

    widget = forms.Textarea

    def prepare_value(self, value: Any) -> Any:
        return value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)

    def to_python(self, value: Any) -> dict[str, Any]:
        text = super().to_python(value)
        if not text:
            return {}
        return storedjson.object_from_text(text, "Metadata")

    def has_changed(self, initial: Any, data: Any) -> bool:
        try:
            return self.to_python(data) != (initial or {})
        except ValidationError:
            return True


class SegmentAdminForm(RevisionAdminForm):
    metadata = MetadataField(required=False)

    class Meta:
        model = Segment
        fields = ("scope", *KINDS, *EDITABLE_FIELDS)


class CatalogAdminForm(RevisionAdminForm):
    class Meta:
        fields = (*catalog.CATALOG_FIELDS, "expected_revision")


@admin.register(World, Ruleset, NPC)
class CatalogAdmin(SuperuserOnly, StaleSaveMixin, ServiceDeleteMixin, SimpleHistoryAdmin):
    form = CatalogAdminForm
    list_display = ("slug", "name", "revision", "updated_at")
    search_fields = ("slug", "name", "description")
    prepopulated_fields = {"slug": ("name",)}
    readonly_fields = ("revision",)

    def save_model(self, request: HttpRequest, obj: Any, form: ModelForm, change: bool) -> None:
        fields = {name: form.cleaned_data[name] for name in catalog.CATALOG_FIELDS}
        if change:
            original = type(obj).objects.get(pk=obj.pk)
            saved = catalog.catalog_update(
                actor=request.user,
                obj=original,
                expected_revision=form.cleaned_data["expected_revision"],
                **fields,
            )
        else:
            saved = catalog.catalog_create(actor=request.user, model=type(obj), **fields)
        obj.pk = saved.pk


class EntryRulesetInline(admin.TabularInline):
    model = EntryRuleset
    extra = 0
    ordering = ("position",)
    fields = ("position", "ruleset")
    autocomplete_fields = ("ruleset",)


def _ordered_rows(formset: Any, field: str) -> list[dict[str, Any]]:
    """The rows of an ordered inline that are kept, sorted by the position typed."""
    rows = [
        f.cleaned_data
        for f in formset.forms
        if f.cleaned_data and not f.cleaned_data.get("DELETE") and f.cleaned_data.get(field)
    ]
    return sorted(rows, key=lambda row: row.get("position") or 0)


class CastFormSet(forms.BaseInlineFormSet):
    def clean(self) -> None:
        super().clean()
        # Said here, on the page, rather than by the service once the form is accepted.
        kept = len(_ordered_rows(self, "npc"))
        if kept > catalog.MAX_CAST:
            raise ValidationError(
                f"A cast lists at most {catalog.MAX_CAST} NPCs; got {kept}.", code="too_many"
            )


class EntryCastInline(admin.TabularInline):
    model = EntryNpc
    formset = CastFormSet
    extra = 0
    ordering = ("position",)
    fields = ("position", "npc", "tier")
    autocomplete_fields = ("npc",)


class EntryAdminForm(RevisionAdminForm):
    class Meta:
        fields = (*catalog.CATALOG_FIELDS, "world", "expected_revision")


@admin.register(Entry)
class EntryAdmin(SuperuserOnly, StaleSaveMixin, ServiceDeleteMixin, SimpleHistoryAdmin):
    form = EntryAdminForm
    readonly_fields = ("revision",)
    list_display = ("slug", "name", "world", "revision", "updated_at")
    # Hundreds of worlds: searched for, never listed in a filter or a select.
    search_fields = ("slug", "name", "description", "world__slug")
    autocomplete_fields = ("world",)
    prepopulated_fields = {"slug": ("name",)}
    list_select_related = ("world",)
    inlines = (EntryRulesetInline, EntryCastInline)

    def save_model(self, request: HttpRequest, obj: Entry, form: ModelForm, change: bool) -> None:
        # Saved with its inlines in save_related: the details, the rulesets and the cast are
        # one service call, so one save is one revision.
        pass

    def save_related(
        self, request: HttpRequest, form: ModelForm, formsets: Any, change: bool
    ) -> None:
        data = form.cleaned_data
        fields = {name: data[name] for name in catalog.CATALOG_FIELDS}
        lists: dict[str, Any] = {}
        for formset in formsets:
            if formset.model is EntryRuleset:
                lists["rulesets"] = [row["ruleset"] for row in _ordered_rows(formset, "ruleset")]
            else:
                lists["cast"] = [
                    catalog.CastMember(npc=row["npc"], tier=row["tier"] or 0)
                    for row in _ordered_rows(formset, "npc")
                ]
            # The admin's change message reads these; the service does the saving.
            formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []
        if change:
            saved = catalog.entry_update(
                actor=request.user,
                entry=Entry.objects.get(pk=form.instance.pk),
                expected_revision=data["expected_revision"],
                world=data["world"],
                **lists,
                **fields,
            )
        else:
            saved = catalog.entry_create(actor=request.user, world=data["world"], **lists, **fields)
        form.instance.pk = saved.pk


@admin.register(Segment)
class SegmentAdmin(SuperuserOnly, StaleSaveMixin, ServiceDeleteMixin, SimpleHistoryAdmin):
    form = SegmentAdminForm
    list_display = ("id", "scope", "ref_label", "label", "version", "active", "tier", "token_count")
    list_filter = ("scope", "active")
    # Words of the title and text, through the search index (get_search_results).
    search_fields = ("title", "content")
    search_help_text = "Words of the title or the text (each a prefix), or #id."
    # A segment's object: one foreign key per kind (see content/kinds.py); thousands of
    # each, so picked by searching.
    autocomplete_fields = tuple(KINDS)
    list_select_related = tuple(KINDS)
    readonly_fields = ("token_count", "token_encoding", "revision", "created_at", "updated_at")
    fields = (
        "scope",
        *KINDS,
        "title",
        "content",
        "metadata",
        "version",
        "active",
        "sort_order",
        "tier",
        "expected_revision",
        *readonly_fields,
    )

    @admin.display(description="belongs to")
    def ref_label(self, obj: Segment) -> str:
        return obj.ref_slug or "—"

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Segment], search_term: str
    ) -> tuple[QuerySet[Segment], bool]:
        term = search_term.strip()
        if term.startswith("#") and term[1:].isascii() and term[1:].isdigit() and len(term) < 19:
            return queryset.filter(pk=int(term[1:])), False
        return (segment_search(queryset, term) if term else queryset), False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Deprecated rows are read-only here: the deprecated-content review handles them.
        deprecated = obj is not None and obj.is_deprecated
        return super().has_change_permission(request, obj) and not deprecated

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        deprecated = obj is not None and obj.is_deprecated
        return super().has_delete_permission(request, obj) and not deprecated

    def get_readonly_fields(self, request: HttpRequest, obj: Segment | None = None) -> Any:
        # Scope is fixed once the segment exists, as everywhere else.
        return (*self.readonly_fields, "scope") if obj is not None else self.readonly_fields

    def save_model(self, request: HttpRequest, obj: Segment, form: ModelForm, change: bool) -> None:
        data = form.cleaned_data
        ref = obj.ref
        editable = {name: data[name] for name in segments.EDITABLE_FIELDS}
        if change:
            # The service checks the revision again under a row lock (see StaleSaveMixin).
            saved = segments.segment_update(
                actor=request.user,
                segment=obj,
                expected_revision=data["expected_revision"],
                ref=ref,
                **editable,
            )
        else:
            saved = segments.segment_create(
                actor=request.user, scope=obj.scope, ref=ref, **editable
            )
        obj.pk = saved.pk
        obj.refresh_from_db()

    def _delete(self, request: HttpRequest, obj: Segment, expected: int) -> None:
        segments.segment_delete(actor=request.user, segment=obj, expected_revision=expected)

    def get_form(self, request: HttpRequest, obj: Segment | None = None, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, **kwargs)
        if obj is None:
            # Deprecated scopes are never offered for new segments.
            form.base_fields["scope"].choices = [
                (value, label) for value, label in Scope.choices if value in SEGMENT_SCOPES
            ]
        return form


# The library's own key model is unused: ours carries a scope.
admin.site.unregister(APIKey)


@admin.register(ApiKey)
class ApiKeyAdmin(SuperuserOnly, APIKeyModelAdmin):
    list_display = (*APIKeyModelAdmin.list_display, "scope")
    list_filter = ("scope", "revoked", "created")
    fields = ("name", "scope", "expiry_date", "revoked", "prefix")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # A key's scope is what it was issued with; a revoked key stays revoked.
        fields = tuple(super().get_readonly_fields(request, obj))
        return (*fields, "scope") if obj is not None else fields

    def save_model(self, request: HttpRequest, obj: ApiKey, form: ModelForm, change: bool) -> None:
        if not change:
            created, key = api_keys.api_key_create(
                actor=request.user, name=obj.name, scope=obj.scope, expires_at=obj.expiry_date
            )
            obj.pk = created.pk
            messages.warning(
                request,
                f"The API key for {obj.name} is: {key} — store it now: it cannot be shown again.",
            )
            return
        stored = api_keys.api_key_update(
            actor=request.user, api_key=obj, name=obj.name, expires_at=obj.expiry_date
        )
        if obj.revoked and not stored.revoked:
            api_keys.api_key_revoke(actor=request.user, api_key=stored)
