"""Django admin for superusers: registered prompts are shown read-only.

Every change (versions, labels, interfaces, adapter instructions) goes through the
services the studio and the API call, which validate templates, lock rows and record
label events; the admin's generic forms would bypass all of that.
"""

from __future__ import annotations

from django.contrib import admin

from promptadmin.core.admin import ReadOnlyAdmin
from promptadmin.prompts.models import (
    AdapterInstruction,
    Interface,
    Label,
    LabelEvent,
    Prompt,
    PromptVersion,
)


@admin.register(Prompt)
class PromptAdmin(ReadOnlyAdmin):
    list_display = ("component", "agent", "task_type", "updated_at")
    search_fields = ("component", "agent", "task_type", "description")


@admin.register(PromptVersion)
class PromptVersionAdmin(ReadOnlyAdmin):
    list_display = ("prompt", "number", "syntax", "task", "created_at")
    list_select_related = ("prompt",)


@admin.register(Label)
class LabelAdmin(ReadOnlyAdmin):
    list_display = ("prompt", "name", "version", "updated_at")
    list_select_related = ("prompt", "version__prompt")


@admin.register(LabelEvent)
class LabelEventAdmin(ReadOnlyAdmin):
    list_display = ("prompt", "label", "action", "from_version", "to_version", "created_at")
    list_select_related = ("prompt",)


@admin.register(Interface)
class InterfaceAdmin(ReadOnlyAdmin):
    list_display = ("name", "supports_system_prompt", "supports_structured_output")


@admin.register(AdapterInstruction)
class AdapterInstructionAdmin(ReadOnlyAdmin):
    list_display = ("interface", "task", "order", "active")
    list_select_related = ("interface",)
