"""The Celery application. Without REDIS_URL, tasks run in-process (eager)."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "promptadmin.settings")

app = Celery("promptadmin")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
