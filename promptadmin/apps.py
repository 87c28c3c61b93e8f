from __future__ import annotations

from django.apps import AppConfig


class PromptadminConfig(AppConfig):
    name = "promptadmin"
    verbose_name = "Prompt content"

    def ready(self) -> None:
        from promptadmin import checks  # noqa: F401  (registers the system checks)
