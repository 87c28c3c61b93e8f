"""URLs under ``/api/``: the versioned API, its schema and its documentation."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.urls import include, path, re_path
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.permissions import AllowAny
from rest_framework.routers import SimpleRouter

from promptadmin.api import content, schema, views

assert schema  # imported for its side effect: registers the API-key security scheme

router = SimpleRouter()
router.register("worlds", content.WorldViewSet, basename="world")
router.register("rulesets", content.RulesetViewSet, basename="ruleset")
router.register("npcs", content.NpcViewSet, basename="npc")
router.register("entries", content.EntryViewSet, basename="entry")
router.register("segments", content.SegmentViewSet, basename="segment")


@csrf_exempt  # nothing is changed here, and the answer must be JSON whatever the method
def not_found(request: HttpRequest, path: str = "") -> JsonResponse:
    """Unknown API paths answer in the API's error shape, not with an HTML page."""
    error = {"code": "not_found", "detail": "No API endpoint at this path.", "attr": None}
    return JsonResponse({"type": "client_error", "errors": [error]}, status=404)


urlpatterns = [
    path("v1/assemble", views.AssembleView.as_view(), name="api-assemble"),
    path("v1/preview", views.PreviewView.as_view(), name="api-preview"),
    path("v1/me", views.MeView.as_view(), name="api-me"),
    path(
        "v1/schema/",
        SpectacularAPIView.as_view(permission_classes=[AllowAny]),
        name="api-schema",
    ),
    path(
        "docs/",
        SpectacularSwaggerView.as_view(url_name="api-schema", permission_classes=[AllowAny]),
        name="api-docs",
    ),
    path("v1/", include(router.urls)),
    re_path(r"^(?P<path>[\s\S]*)$", not_found),
]
