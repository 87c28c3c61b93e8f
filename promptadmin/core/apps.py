from __future__ import annotations

from django.apps import AppConfig


class CoreConfig(AppConfig):
    """What every domain shares: roles, actors, errors, the tokenizer, the content cache."""

    name = "promptadmin.core"
    label = "promptadmin_core"
    verbose_name = "promptadmin core"

    def ready(self) -> None:
        from promptadmin.core import checks  # noqa: F401  (registers the system checks)
