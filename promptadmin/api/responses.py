"""Answers the client can trust: a write commits only with its rendered answer, and a
server error under ``/api/`` is JSON in the documented shape, never Django's HTML page.

DRF renders a response after the view returns, outside any transaction the view opened:
a body that cannot be written (say, a stored value the encoder refuses) would turn a
committed create into a 500, and a retrying client into duplicates. Views that write
render inside the transaction instead, so a failure to answer undoes the change.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.core.exceptions import PermissionDenied, SuspiciousOperation
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from rest_framework.permissions import SAFE_METHODS
from rest_framework.views import APIView

logger = logging.getLogger(__name__)

API_PREFIX = "/api/"
# Exceptions Django itself answers with a 4xx: left to it.
_DJANGO_ANSWERS = (Http404, PermissionDenied, SuspiciousOperation)


def server_error() -> JsonResponse:
    error = {"code": "error", "detail": "A server error occurred.", "attr": None}
    return JsonResponse({"type": "server_error", "errors": [error]}, status=500)


class RenderBeforeCommit(APIView):
    """Unsafe methods run in one transaction that commits only once the body is rendered."""

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        if request.method in SAFE_METHODS:
            return super().dispatch(request, *args, **kwargs)
        with transaction.atomic():
            response = super().dispatch(request, *args, **kwargs)
            if hasattr(response, "render"):
                response.render()
            return response


class ApiServerErrorMiddleware:
    """Any exception that escapes an API view or its rendering: a JSON 500, logged."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not request.path.startswith(API_PREFIX) or isinstance(exception, _DJANGO_ANSWERS):
            return None
        logger.error("Internal Server Error: %s", request.path, exc_info=exception)
        return server_error()
