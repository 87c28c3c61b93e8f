"""Django admin for superusers. Saves and deletes go through the same services as the API."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.forms import ModelForm
from django.http import HttpRequest
from rest_framework_api_key.admin import APIKeyModelAdmin
from rest_framework_api_key.models import APIKey
from simple_history.admin import SimpleHistoryAdmin

from promptadmin.models import (
    NPC,
    SEGMENT_SCOPES,
    ApiKey,
    Entry,
    EntryRuleset,
    Ruleset,
    Scope,
    Segment,
    World,
)
from promptadmin.services import api_keys, catalog, segments
from promptadmin.services.errors import ConflictError


class SuperuserOnly:
    """The admin is for superusers; staff authors use the studio."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.is_active and request.user.is_superuser)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_module_permission(request)

    has_add_permission = has_module_permission  # type: ignore[assignment]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_module_permission(request)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_module_permission(request)


class ServiceDeleteMixin:
    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        try:
            self._delete(request, obj)
        except ConflictError as exc:
            messages.error(request, str(exc))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        for obj in queryset:
            self.delete_model(request, obj)

    def _delete(self, request: HttpRequest, obj: Any) -> None:
        catalog.catalog_delete(actor=request.user, obj=obj)


@admin.register(World, Ruleset, NPC)
class CatalogAdmin(SuperuserOnly, ServiceDeleteMixin, SimpleHistoryAdmin):
    list_display = ("slug", "name", "updated_at")
    search_fields = ("slug", "name", "description")
    prepopulated_fields = {"slug": ("name",)}

    def save_model(self, request: HttpRequest, obj: Any, form: ModelForm, change: bool) -> None:
        fields = {name: form.cleaned_data[name] for name in catalog.CATALOG_FIELDS}
        if change:
            original = type(obj).objects.get(pk=obj.pk)
            saved = catalog.catalog_update(actor=request.user, obj=original, **fields)
        else:
            saved = catalog.catalog_create(actor=request.user, model=type(obj), **fields)
        obj.pk = saved.pk


class EntryRulesetInline(admin.TabularInline):
    model = EntryRuleset
    extra = 0
    ordering = ("position",)
    fields = ("position", "ruleset")
    autocomplete_fields = ("ruleset",)


@admin.register(Entry)
class EntryAdmin(SuperuserOnly, ServiceDeleteMixin, SimpleHistoryAdmin):
    list_display = ("slug", "name", "world", "updated_at")
    list_filter = ("world",)
    search_fields = ("slug", "name", "description", "world__slug")
    prepopulated_fields = {"slug": ("name",)}
    list_select_related = ("world",)
    inlines = (EntryRulesetInline,)

    def save_model(self, request: HttpRequest, obj: Entry, form: ModelForm, change: bool) -> None:
        fields = {name: form.cleaned_data[name] for name in catalog.CATALOG_FIELDS}
        if change:
            original = Entry.objects.get(pk=obj.pk)
            saved = catalog.entry_update(
                actor=request.user, entry=original, world=form.cleaned_data["world"], **fields
            )
        else:
            saved = catalog.entry_create(
                actor=request.user, world=form.cleaned_data["world"], **fields
            )
        obj.pk = saved.pk

    def save_formset(
        self, request: HttpRequest, form: ModelForm, formset: Any, change: bool
    ) -> None:
        # The inline is an ordered list: keep the rows that are not marked for deletion,
        # sorted by the position the admin typed, and hand the list to the service.
        rows = [
            f.cleaned_data
            for f in formset.forms
            if f.cleaned_data and not f.cleaned_data.get("DELETE") and f.cleaned_data.get("ruleset")
        ]
        rows.sort(key=lambda row: row.get("position") or 0)
        catalog.entry_update(
            actor=request.user, entry=form.instance, rulesets=[row["ruleset"] for row in rows]
        )
        # The admin's change message reads these; the service did the saving.
        formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []


@admin.register(Segment)
class SegmentAdmin(SuperuserOnly, ServiceDeleteMixin, SimpleHistoryAdmin):
    list_display = ("id", "scope", "ref_label", "title", "version", "active", "tier", "token_count")
    list_filter = ("scope", "active", "world", "ruleset", "entry", "npc")
    search_fields = ("content", "world__slug", "ruleset__slug", "entry__slug", "npc__slug")
    list_select_related = ("world", "ruleset", "entry", "npc")
    readonly_fields = ("token_count", "token_encoding", "revision", "created_at", "updated_at")
    fields = (
        "scope",
        "ruleset",
        "world",
        "entry",
        "npc",
        "content",
        "metadata",
        "version",
        "active",
        "sort_order",
        "tier",
        *readonly_fields,
    )

    @admin.display(description="belongs to")
    def ref_label(self, obj: Segment) -> str:
        return obj.ref_slug or "—"

    def get_readonly_fields(self, request: HttpRequest, obj: Segment | None = None) -> Any:
        # Scope is fixed once the segment exists, as everywhere else.
        return (*self.readonly_fields, "scope") if obj is not None else self.readonly_fields

    def save_model(self, request: HttpRequest, obj: Segment, form: ModelForm, change: bool) -> None:
        data = form.cleaned_data
        ref = obj.ref
        editable = {name: data[name] for name in segments.EDITABLE_FIELDS}
        if change:
            saved = segments.segment_update(
                actor=request.user,
                segment=obj,
                ref=ref,
                **editable,
            )
        else:
            saved = segments.segment_create(
                actor=request.user, scope=obj.scope, ref=ref, **editable
            )
        obj.pk = saved.pk
        obj.refresh_from_db()

    def _delete(self, request: HttpRequest, obj: Segment) -> None:
        segments.segment_delete(actor=request.user, segment=obj)

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
        stored = ApiKey.objects.get(pk=obj.pk)
        if obj.revoked and not stored.revoked:
            api_keys.api_key_revoke(actor=request.user, api_key=stored)
        obj.save(update_fields=["name", "expiry_date"])
