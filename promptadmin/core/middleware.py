"""Response headers every page of the app shares."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from csp import middleware as csp_middleware
from csp.constants import HEADER, HEADER_REPORT_ONLY
from csp.middleware import CheckableLazyObject
from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBase
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


# What a view or a template may set to change a response's policy (django-csp).
_CSP_CHANGES = (
    "_csp_config",
    "_csp_update",
    "_csp_replace",
    "_csp_exempt",
    "_csp_config_ro",
    "_csp_update_ro",
    "_csp_replace_ro",
    "_csp_exempt_ro",
)


class CSPMiddleware(csp_middleware.CSPMiddleware):
    """django-csp's middleware, with the policy of a response that changes nothing built once.

    django-csp builds the policy from the settings for every response (about 0.04 ms, some
    8% of a prompt fetch). A response without a nonce or a per-view change gets exactly
    that policy, so it is built once per settings object (a test's override makes a new
    one) and copied; anything else goes to django-csp as it is.
    """

    _built: tuple[Any, Any, dict[str, str]] | None = None

    def process_response(
        self, request: HttpRequest, response: HttpResponseBase
    ) -> HttpResponseBase:
        headers = self._plain_headers(request, response)
        if headers is None:
            return super().process_response(request, response)
        for name, value in headers.items():
            response[name] = value
        # As django-csp does: a nonce asked for once the header is written is an error.
        request.csp_nonce = CheckableLazyObject(self._csp_nonce_post_response)  # type: ignore[attr-defined]
        return response

    def _plain_headers(
        self, request: HttpRequest, response: HttpResponseBase
    ) -> dict[str, str] | None:
        if getattr(request, "_csp_nonce", None) is not None:
            return None
        if any(hasattr(response, name) for name in _CSP_CHANGES):
            return None
        if response.has_header(HEADER) or response.has_header(HEADER_REPORT_ONLY):
            return None
        if settings.DEBUG and response.status_code in (500, 404):
            return None  # django-csp leaves debug pages alone
        policy = getattr(settings, "CONTENT_SECURITY_POLICY", None)
        report_only = getattr(settings, "CONTENT_SECURITY_POLICY_REPORT_ONLY", None)
        if any((p or {}).get("EXCLUDE_URL_PREFIXES") for p in (policy, report_only)):
            return None  # depends on the path
        built = self._built
        if built is None or built[0] is not policy or built[1] is not report_only:
            sample = super().process_response(HttpRequest(), HttpResponse())
            headers = {h: sample[h] for h in (HEADER, HEADER_REPORT_ONLY) if sample.has_header(h)}
            built = self._built = (policy, report_only, headers)
        return built[2]
