"""The record of stored JSON repairs, for admins to read (written by migrations only)."""

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


@admin.register(StoredJsonRepair)
class StoredJsonRepairAdmin(ListsAtScale, admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("model", "row_id", "field", "path", "original", "repaired_at")
    list_filter = ("model", "field")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
