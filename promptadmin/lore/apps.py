from __future__ import annotations

from django.apps import AppConfig


class LoreConfig(AppConfig):
    """Living lore: world knowledge that enters the prompt when the story touches it."""

    name = "promptadmin.lore"
    label = "lore"
    verbose_name = "Lore"
    default_auto_field = "django.db.models.BigAutoField"
