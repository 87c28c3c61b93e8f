from __future__ import annotations

from django.apps import AppConfig


class PromptsConfig(AppConfig):
    """Registered prompts. Imports neither the content app nor the API or studio."""

    name = "promptadmin.prompts"
    label = "prompts"
    verbose_name = "registered prompts"
    default_auto_field = "django.db.models.BigAutoField"
