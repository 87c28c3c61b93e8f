from __future__ import annotations

from django.apps import AppConfig


class ReleasesConfig(AppConfig):
    name = "promptadmin.releases"
    label = "releases"
    verbose_name = "Releases"
    default_auto_field = "django.db.models.BigAutoField"
