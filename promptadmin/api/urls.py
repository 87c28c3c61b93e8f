"""URLs under ``/api/``: the versioned API, its schema and its documentation."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.urls import include, path, re_path
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.permissions import AllowAny
from rest_framework.routers import SimpleRouter

from promptadmin.api import (
    assembly,
    content,
    conversations,
    identity,
    langfuse,
    legacy,
    lore,
    playtests,
    prompts,
    releases,
    schema,
)

assert schema  # imported for its side effect: registers the API-key security scheme

router = SimpleRouter()
router.register("worlds", content.WorldViewSet, basename="world")
router.register("rulesets", content.RulesetViewSet, basename="ruleset")
router.register("npcs", content.NpcViewSet, basename="npc")
router.register("entries", content.EntryViewSet, basename="entry")
router.register("segments", content.SegmentViewSet, basename="segment")
router.register("lore", lore.LoreViewSet, basename="lore")


@csrf_exempt  # nothing is changed here, and the answer must be JSON whatever the method
def not_found(request: HttpRequest, path: str = "") -> JsonResponse:
    """Unknown API paths answer in the API's error shape, not with an HTML page."""
    error = {"code": "not_found", "detail": "No API endpoint at this path.", "attr": None}
    return JsonResponse({"type": "client_error", "errors": [error]}, status=404)


NAME = prompts.NAME_IN_PATH
ADDRESS = rf"^prompts/(?P<component>{NAME})/(?P<agent>{NAME})"
a_prompt_urls = [
    re_path(r"^versions/$", prompts.VersionCreateView.as_view(), name="api-prompt-versions"),
    re_path(
        r"^labels/history$", prompts.LabelHistoryView.as_view(), name="api-prompt-label-history"
    ),
    re_path(
        r"^labels/(?P<label>[a-z0-9_.-]{1,36})$",
        prompts.LabelView.as_view(),
        name="api-prompt-label",
    ),
]
interface_urls = [
    path("", prompts.InterfaceListView.as_view(), name="api-interfaces"),
    re_path(rf"^(?P<name>{NAME})$", prompts.InterfaceDetailView.as_view(), name="api-interface"),
]
adapter_instruction_urls = [
    path("", prompts.AdapterInstructionListView.as_view(), name="api-adapter-instructions"),
    re_path(
        rf"^(?P<pk>{content.ID_IN_PATH})$",
        prompts.AdapterInstructionDetailView.as_view(),
        name="api-adapter-instruction",
    ),
]
prompt_urls = [
    path("prompts/", prompts.PromptListView.as_view(), name="api-prompts"),
    re_path(rf"{ADDRESS}/", include(a_prompt_urls)),
    path("interfaces/", include(interface_urls)),
    path("adapter-instructions/", include(adapter_instruction_urls)),
    path("lint", prompts.LintView.as_view(), name="api-lint"),
]

DEPRECATED = rf"^(?P<pk>{content.ID_IN_PATH})"
deprecated_urls = [
    path("", legacy.DeprecatedListView.as_view(), name="api-deprecated-segments"),
    path("bulk", legacy.BulkView.as_view(), name="api-deprecated-bulk"),
    re_path(rf"{DEPRECATED}/copy$", legacy.CopyView.as_view(), name="api-deprecated-copy"),
    re_path(rf"{DEPRECATED}/dismiss$", legacy.DismissView.as_view(), name="api-deprecated-dismiss"),
    re_path(rf"{DEPRECATED}/undo$", legacy.UndoView.as_view(), name="api-deprecated-undo"),
]
conversation_urls = [
    path("messages", conversations.AppendMessagesView.as_view(), name="api-conversation-messages"),
    path("history", conversations.HistoryView.as_view(), name="api-conversation-history"),
    path("summaries", conversations.SummariesView.as_view(), name="api-conversation-summaries"),
    path("summarize", conversations.SummarizeView.as_view(), name="api-conversation-summarize"),
]
release_label_urls = [
    path("", releases.LabelListView.as_view(), name="api-release-labels"),
    path("<str:label>", releases.LabelView.as_view(), name="api-release-label"),
    path(
        "<str:label>/history", releases.LabelHistoryView.as_view(), name="api-release-label-history"
    ),
]

# The calls a game or a pipeline makes on every turn come first: Django tries the patterns
# in order, and each one tried costs the request some microseconds.
v1_urls = [
    path("assemble", assembly.AssembleView.as_view(), name="api-assemble"),
    re_path(rf"{ADDRESS}/$", prompts.PromptFetchView.as_view(), name="api-prompt"),
    re_path(rf"{ADDRESS}/render$", prompts.RenderView.as_view(), name="api-prompt-render"),
    path("preview", assembly.PreviewView.as_view(), name="api-preview"),
    path("me", identity.MeView.as_view(), name="api-me"),
    path("imports/", legacy.ImportView.as_view(), name="api-imports"),
    path("imports/<int:pk>", legacy.ImportJobView.as_view(), name="api-import"),
    path("deprecated-segments/", include(deprecated_urls)),
    path("conversations/<str:key>/", include(conversation_urls)),
    path("releases/", releases.ReleaseListView.as_view(), name="api-releases"),
    path("releases/<str:name>/", releases.ReleaseDetailView.as_view(), name="api-release"),
    path(
        "releases/<str:before>/compare/<str:after>",
        releases.CompareView.as_view(),
        name="api-release-compare",
    ),
    path("release-labels/", include(release_label_urls)),
    path("lore/test", lore.LoreTestView.as_view(), name="api-lore-test"),
    path("lore/import", lore.LoreImportView.as_view(), name="api-lore-import"),
    path("lore/export", lore.LoreExportView.as_view(), name="api-lore-export"),
    path("scenarios/", releases.ScenarioListView.as_view(), name="api-scenarios"),
    path("playtests/", playtests.PlaytestListView.as_view(), name="api-playtests"),
    path("playtests/<int:pk>", playtests.PlaytestDetailView.as_view(), name="api-playtest"),
    path("scenarios/<int:pk>/", releases.ScenarioDetailView.as_view(), name="api-scenario"),
    path(
        "schema/",
        SpectacularAPIView.as_view(permission_classes=[AllowAny]),
        name="api-schema",
    ),
    *router.urls,
    *prompt_urls,
]

urlpatterns = [
    path("v1/", include(v1_urls)),
    path("public/", include(langfuse.urlpatterns)),
    path(
        "docs/",
        # Split: the page's own script is a separate file (the CSP allows no inline script).
        SpectacularSwaggerSplitView.as_view(url_name="api-schema", permission_classes=[AllowAny]),
        name="api-docs",
    ),
    re_path(r"^(?P<path>[\s\S]*)$", not_found),
]
