"""Studio URLs, mounted at the site root: sign-in/out, then the ``studio:`` pages."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import URLPattern, URLResolver, include, path

from promptadmin.content.kinds import CATALOG_KINDS, KINDS
from promptadmin.core.lockout import SignInForm
from promptadmin.studio.views import (
    catalog,
    conversations,
    dashboard,
    deprecated,
    entries,
    history,
    lore,
    pickers,
    playtests,
    preview,
    prompts,
    releases,
    scenarios,
    segments,
)

studio_patterns: list[URLPattern | URLResolver] = [
    path("", dashboard.dashboard, name="dashboard"),
    path("health/", dashboard.entry_health, name="entry_health"),
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
    path("entries/<slug:slug>/cast/", entries.entry_cast, name="entry_cast"),
    path(
        "entries/<slug:slug>/delete/",
        catalog.catalog_delete,
        {"kind": "entry"},
        name="entry_delete",
    ),
    path("pick/", pickers.object_picker, name="object_picker"),
    path("lore/", lore.lore_list, name="lore_list"),
    path("lore/new/", lore.lore_create, name="lore_create"),
    path("lore/test/", lore.lore_test, name="lore_test"),
    path("lore/check/", lore.lore_check, name="lore_check"),
    path("lore/batch/", lore.lore_batch, name="lore_batch"),
    path("lore/import/", lore.lore_import, name="lore_import"),
    path("lore/<int:pk>/", lore.lore_edit, name="lore_edit"),
    path("lore/<int:pk>/delete/", lore.lore_delete, name="lore_delete"),
    path("lore/<int:pk>/history/", lore.lore_history, name="lore_history"),
    path("preview/", preview.preview, name="preview"),
    path("deprecated/", deprecated.deprecated_review, name="deprecated_review"),
    path("deprecated/import/", deprecated.legacy_import_page, name="legacy_import"),
    path("deprecated/import/<int:pk>/", deprecated.legacy_import_job, name="legacy_import_job"),
    path("deprecated/bulk/", deprecated.deprecated_bulk, name="deprecated_bulk"),
    path("deprecated/<int:pk>/copy/", deprecated.deprecated_copy, name="deprecated_copy"),
    path("deprecated/<int:pk>/dismiss/", deprecated.deprecated_dismiss, name="deprecated_dismiss"),
    path("deprecated/<int:pk>/undo/", deprecated.deprecated_undo, name="deprecated_undo"),
    path("prompts/", prompts.prompt_list, name="prompt_list"),
    path("prompts/new/", prompts.prompt_create, name="prompt_create"),
    path("prompts/<int:pk>/", prompts.prompt_detail, name="prompt_detail"),
    path(
        "prompts/<int:pk>/versions/new/",
        prompts.prompt_version_create,
        name="prompt_version_create",
    ),
    path(
        "prompts/<int:pk>/versions/check/",
        prompts.prompt_version_check,
        name="prompt_version_check",
    ),
    path("prompts/<int:pk>/labels/", prompts.prompt_label_set, name="prompt_label_set"),
    path(
        "prompts/<int:pk>/labels/remove/", prompts.prompt_label_remove, name="prompt_label_remove"
    ),
    path("prompts/<int:pk>/playground/", prompts.prompt_playground, name="prompt_playground"),
    path("conversations/", conversations.conversation_list, name="conversation_list"),
    path(
        "conversations/<str:key>/",
        conversations.conversation_detail,
        name="conversation_detail",
    ),
    path(
        "conversations/<str:key>/summarize/",
        conversations.conversation_summarize,
        name="conversation_summarize",
    ),
    path("releases/", releases.release_list, name="release_list"),
    path("releases/publish/", releases.release_publish, name="release_publish"),
    path("playtests/", playtests.playtest_list, name="playtest_list"),
    path("playtests/<int:pk>/", playtests.playtest_detail, name="playtest_detail"),
    path("releases/labels/move/", releases.release_label_move, name="release_label_move"),
    path("releases/compare/", releases.release_compare, name="release_compare"),
    path("releases/prompts/", releases.release_prompts, name="release_prompts"),
    path("scenarios/", scenarios.scenario_list, name="scenario_list"),
    path("scenarios/<int:pk>/", scenarios.scenario_edit, name="scenario_edit"),
    path("scenarios/<int:pk>/delete/", scenarios.scenario_delete, name="scenario_delete"),
    path("scenarios/<int:pk>/playtest/", playtests.scenario_playtest, name="scenario_playtest"),
]
for kind in CATALOG_KINDS:
    prefix = KINDS[kind].section
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
        auth_views.LoginView.as_view(form_class=SignInForm, redirect_authenticated_user=True),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include((studio_patterns, "studio"))),
]
