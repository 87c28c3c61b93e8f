"""Studio URLs, mounted at the site root: sign-in/out, then the ``studio:`` pages."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import URLPattern, URLResolver, include, path

from promptadmin.studio.views import catalog, dashboard, entries, history, preview, segments

studio_patterns: list[URLPattern | URLResolver] = [
    path("", dashboard.dashboard, name="dashboard"),
    path("segments/", segments.segment_list, name="segment_list"),
    path("segments/new/", segments.segment_create, name="segment_create"),
    path("segments/check/", segments.segment_check, name="segment_check"),
    path("segments/<int:pk>/", segments.segment_edit, name="segment_edit"),
    path("segments/<int:pk>/delete/", segments.segment_delete, name="segment_delete"),
    path("segments/<int:pk>/history/", history.segment_history, name="segment_history"),
    path("entries/", entries.entry_list, name="entry_list"),
    path("entries/new/", entries.entry_create, name="entry_create"),
    path("entries/<slug:slug>/", entries.entry_edit, name="entry_edit"),
    path("entries/<slug:slug>/rulesets/", entries.entry_rulesets, name="entry_rulesets"),
    path(
        "entries/<slug:slug>/delete/",
        catalog.catalog_delete,
        {"kind": "entry"},
        name="entry_delete",
    ),
    path("preview/", preview.preview, name="preview"),
]
for kind in ("world", "ruleset", "npc"):
    prefix = catalog.KINDS[kind].section
    studio_patterns += [
        path(f"{prefix}/", catalog.catalog_list, {"kind": kind}, name=f"{kind}_list"),
        path(f"{prefix}/new/", catalog.catalog_create, {"kind": kind}, name=f"{kind}_create"),
        path(f"{prefix}/<slug:slug>/", catalog.catalog_edit, {"kind": kind}, name=f"{kind}_edit"),
        path(
            f"{prefix}/<slug:slug>/delete/",
            catalog.catalog_delete,
            {"kind": kind},
            name=f"{kind}_delete",
        ),
    ]

urlpatterns = [
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(redirect_authenticated_user=True),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include((studio_patterns, "studio"))),
]
