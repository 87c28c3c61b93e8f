from __future__ import annotations

from django.apps import AppConfig


class ContentConfig(AppConfig):
    """Worlds, rulesets, NPCs, entries, segments and API keys.

    The app label stays ``promptadmin``, the label these models had when the whole project
    was one app: tables (``promptadmin_segment``...), migration history, content types,
    permissions and the historical tables keep their names, so a database made by the
    earlier layout migrates with nothing to do.
    """

    name = "promptadmin.content"
    label = "promptadmin"
    verbose_name = "Prompt content"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from promptadmin.content import tasks  # noqa: F401  (registers the import task)
        from promptadmin.content.keys import api_key_changed
        from promptadmin.content.models import ApiKey
        from promptadmin.content.services.health import health_changed
        from promptadmin.core.cache import on_content_change

        post_save.connect(api_key_changed, sender=ApiKey, dispatch_uid="api-key-saved")
        post_delete.connect(api_key_changed, sender=ApiKey, dispatch_uid="api-key-deleted")
        # Every committed content change brings the entries' findings up to date, in the
        # background.
        on_content_change(health_changed)
