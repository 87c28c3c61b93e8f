"""Django admin for superusers: releases, label moves and the history of scenarios
(deleted ones included), read-only.

Releases are made, labels moved and scenarios changed through the studio or the API (one
service each, with the permission checks and the confirmation of failing expectations);
the admin only shows them.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from promptadmin.core.admin import ReadOnlyAdmin
from promptadmin.releases.models import (
    Release,
    ReleaseAlias,
    ReleaseLabel,
    ReleaseLabelMove,
    Scenario,
)


@admin.register(Release)
class ReleaseAdmin(ReadOnlyAdmin):
    list_display = ("name", "created_at", "created_by", "created_via", "segment_count")
    search_fields = ("name", "aliases__name", "notes")
    exclude = ("catalog", "manifest", "index")

    def get_queryset(self, request: HttpRequest) -> Any:
        # A catalog and a manifest take a megabyte or two at a large game's size (the
        # index, made from the manifest for serving, is no one's to read here).
        return super().get_queryset(request).defer("catalog", "manifest", "index")


@admin.register(ReleaseLabel)
class ReleaseLabelAdmin(ReadOnlyAdmin):
    list_display = ("name", "release", "moved_at")


@admin.register(ReleaseAlias)
class ReleaseAliasAdmin(ReadOnlyAdmin):
    list_display = ("name", "release", "move")


@admin.register(ReleaseLabelMove)
class ReleaseLabelMoveAdmin(ReadOnlyAdmin):
    list_display = ("label", "from_release", "to_release", "at", "by", "via", "note")
    list_filter = ("label",)


@admin.register(Scenario.history.model)
class ScenarioHistoryAdmin(ReadOnlyAdmin):
    """Every version of every scenario: who made, changed or deleted it, when, and what it
    said then (a deleted scenario's last row is its deletion)."""

    list_display = (
        "name",
        "history_type",
        "history_date",
        "history_user",
        "history_change_reason",  # the API key, when a key made the change
        "revision",
    )
    list_filter = ("history_type",)
    search_fields = ("name",)
