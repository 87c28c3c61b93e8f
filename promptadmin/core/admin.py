"""The record of stored JSON repairs, for admins to read (written by migrations only)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from promptadmin.core.models import StoredJsonRepair


@admin.register(StoredJsonRepair)
class StoredJsonRepairAdmin(admin.ModelAdmin):
    list_display = ("model", "row_id", "field", "path", "original", "repaired_at")
    list_filter = ("model", "field")
    show_full_result_count = False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
