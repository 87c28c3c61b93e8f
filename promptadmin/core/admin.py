"""What every app's admin shares (paged lists, superusers only, read-only models), and the
record of stored JSON repairs, for admins to read (written by migrations only)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from promptadmin.core.models import StoredJsonRepair
from promptadmin.core.pagination import ADMIN_PAGE_SIZE, CappedPaginator


class ListsAtScale:
    """Change lists that cost the same at any size: pages of ``ADMIN_PAGE_SIZE`` and a
    count that stops at ``ADMIN_COUNT_CAP`` (no count of the whole table beside it)."""

    list_per_page = ADMIN_PAGE_SIZE
    show_full_result_count = False
    paginator = CappedPaginator


class SuperuserOnly(ListsAtScale):
    """The admin is for superusers; staff authors use the studio. Its lists are paged and
    counted at a bounded cost (a game holds 100,000 segments)."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.is_active and request.user.is_superuser)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_module_permission(request)

    has_add_permission = has_module_permission  # type: ignore[assignment]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_module_permission(request)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_module_permission(request)


class ReadOnly:
    """Rows only services (or migrations) write: the admin shows them and changes nothing,
    since its generic forms would bypass the services' validation, locks and audit."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReadOnlyAdmin(ReadOnly, SuperuserOnly, admin.ModelAdmin):  # type: ignore[type-arg]
    """Read-only, for superusers."""


@admin.register(StoredJsonRepair)
class StoredJsonRepairAdmin(ReadOnly, ListsAtScale, admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("model", "row_id", "field", "path", "original", "repaired_at")
    list_filter = ("model", "field")
