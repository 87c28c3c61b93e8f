from __future__ import annotations

from django.apps import AppConfig
from django.core.exceptions import ImproperlyConfigured


class PromptsConfig(AppConfig):
    """Registered prompts. Imports neither the content app nor the API or studio."""

    name = "promptadmin.prompts"
    label = "prompts"
    verbose_name = "registered prompts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        check_settings()


def check_settings() -> None:
    """The settings that name prompts or labels, read by the parsers of prompt names and
    label names (which need the apps loaded, so not in settings.py itself)."""
    from django.conf import settings

    from promptadmin.prompts.models import parse_langfuse_name
    from promptadmin.prompts.services.prompts import label_name_problem

    name = settings.SUMMARIZER_PROMPT
    if parse_langfuse_name(name) is None:
        raise ImproperlyConfigured(
            f"SUMMARIZER_PROMPT={name!r} must name a registered prompt as component/agent or "
            "component/agent/task_type, each part lowercase letters, digits, '_', '.' or '-' "
            "(default: conversations/summarizer)."
        )
    for label in settings.PROTECTED_PROMPT_LABELS:
        problem = label_name_problem(label)
        if problem:
            raise ImproperlyConfigured(f"PROTECTED_PROMPT_LABELS={label!r}: {problem}")
