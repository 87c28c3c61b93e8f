from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from promptadmin.core import views

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("metrics", views.metrics, name="metrics"),
    path("admin/", admin.site.urls),
    path("api/", include("promptadmin.api.urls")),
    # The author studio (and sign-in/out) at the root; keep it last.
    path("", include("promptadmin.studio.urls")),
]
