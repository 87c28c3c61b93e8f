from __future__ import annotations

from django.apps import AppConfig


class PlaytestsConfig(AppConfig):
    name = "promptadmin.playtests"
    label = "playtests"
    verbose_name = "Playtests"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from promptadmin.playtests import tasks  # noqa: F401  (registers the playtest task)
