"""Response headers every page of the app shares."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_cache_control

API_PREFIX = "/api/"


class PrivateNoStoreMiddleware:
    """``Cache-Control: private, no-store`` on what signed-in people see and on API answers.

    Their content is someone's unpublished work or a service's prompt: no shared cache
    may keep it, nor the browser's disk after sign-out. A view that set its own
    Cache-Control keeps it.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.has_header("Cache-Control"):
            return response
        user = getattr(request, "user", None)
        if request.path.startswith(API_PREFIX) or (user is not None and user.is_authenticated):
            patch_cache_control(response, private=True, no_store=True)
        return response
