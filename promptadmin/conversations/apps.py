from __future__ import annotations

from django.apps import AppConfig


class ConversationsConfig(AppConfig):
    """Conversations appended by API consumers, and the summaries Celery workers make."""

    name = "promptadmin.conversations"
    label = "conversations"
    verbose_name = "Conversations"
