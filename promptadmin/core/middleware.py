"""What every request and response of the app shares: characters a request may hold,
and the headers of every answer."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, unquote_to_bytes

from csp import middleware as csp_middleware
from csp.constants import HEADER, HEADER_REPORT_ONLY
from csp.middleware import CheckableLazyObject
from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.shortcuts import render
from django.utils.cache import patch_cache_control

from assembler.storable import printable
from promptadmin.core.logs import HEADER as REQUEST_ID_HEADER
from promptadmin.core.logs import current_request_id, request_id_from
from promptadmin.core.metrics import observe_request
from promptadmin.db import lost

logger = logging.getLogger(__name__)

API_PREFIX = "/api/"
LANGFUSE_PREFIX = "/api/public/"
NUL = "a NUL character (U+0000), which cannot be stored"
NOT_UTF8 = "bytes that are not UTF-8 (a lone surrogate, or a broken sequence)"


class RequestIdMiddleware:
    """Outermost: every request gets an id (a sane ``X-Request-ID`` it brought, else a new
    one) that its logs name and its answer carries back in ``X-Request-ID``; and every
    answer is counted and timed by route (``promptadmin.core.metrics``), those of the hot
    path's fast answers included."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = request_id_from(request.META.get("HTTP_X_REQUEST_ID"))
        # Cleared when the request finishes (core.logs.request_finished), not here: Django
        # logs a 4xx or 5xx answer after the middleware has returned it.
        current_request_id.set(request_id)
        start = time.perf_counter()
        response = self.get_response(request)
        response[REQUEST_ID_HEADER] = request_id
        observe_request(request, response.status_code, time.perf_counter() - start)
        return response


def _query_part_problem(raw: str) -> str | None:
    """What is wrong with a query parameter's name or value (the latin-1 text of its
    bytes, percent escapes decoded), or None.

    >>> _query_part_problem("a\\x00"), _query_part_problem("caf\\xc3\\xa9")
    ('a NUL character (U+0000), which cannot be stored', None)
    >>> _query_part_problem("\\xed\\xa0\\x80")
    'bytes that are not UTF-8 (a lone surrogate, or a broken sequence)'
    """
    if "\x00" in raw:
        return NUL
    if not raw.isascii():
        try:
            raw.encode("latin-1").decode("utf-8")
        except (UnicodeEncodeError, UnicodeDecodeError):
            return NOT_UTF8
    return None


# Django percent-escapes again the bytes of a path that are not UTF-8 (a lone surrogate
# arrives as "%ED%A0%80"); no name, slug or key in a path may hold a "%" (they would
# have come as "%25"), so such an escape can only be that.
_NOT_UTF8_IN_PATH = re.compile("%[89A-F][0-9A-F]")


def _path_problem(path: str) -> str | None:
    if "\x00" in path:
        return NUL
    if "%" in path and _NOT_UTF8_IN_PATH.search(path):
        return NOT_UTF8
    return None


def _query_problem(query: str) -> tuple[str, str | None] | None:
    """What is wrong with a query string, and the parameter it is in, or None."""
    if "%" not in query and "\x00" not in query and query.isascii():
        return None  # the common case: nothing escaped, nothing to decode
    try:
        pairs = parse_qsl(query, keep_blank_values=True, encoding="latin-1")
    except ValueError:
        return None  # Django's QueryDict decides what a malformed query means
    for name, value in pairs:
        for part in (name, value):
            problem = _query_part_problem(part)
            if problem:
                return problem, unquote_to_bytes(name).decode("utf-8", "replace")
    return None


class UnstorableCharactersMiddleware:
    """A path or query parameter holding NUL or bytes that are not UTF-8 is a 400, before
    any view: PostgreSQL stores neither, and a view that looked a NUL up failed with a
    500. JSON in the API's error shape under ``/api/`` (Langfuse's under
    ``/api/public/``), the studio's 400 page elsewhere.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        problem = _path_problem(request.path_info)
        found = (problem, None) if problem else _query_problem(request.META.get("QUERY_STRING", ""))
        if found is None:
            return self.get_response(request)
        problem, parameter = found
        where = f"The query parameter {printable(parameter)!r}" if parameter else "The path"
        detail = f"{where} holds {problem}."
        if request.path.startswith(LANGFUSE_PREFIX):  # Langfuse's error shape
            body = {"error": "InvalidRequestError", "message": detail}
            return JsonResponse(body, status=400)
        if request.path.startswith(API_PREFIX):
            error = {
                "code": "invalid_characters",
                "detail": detail,
                "attr": parameter and printable(parameter),
            }
            return JsonResponse({"type": "client_error", "errors": [error]}, status=400)
        return render(request, "400.html", {"detail": detail}, status=400)


SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
READ_ONLY_POSTS = frozenset({"api-assemble", "api-preview", "api-prompt-render", "api-lint"})
"""Routes whose POST only reads: the body is a question (what to assemble, render, lint)."""
JSON_TYPES = ("application/json",)


class RetryLostConnectionMiddleware:
    """A read-only request whose database connection was lost is answered again, once, on a
    fresh connection; a write never is.

    A connection dies under a request when its backend is terminated (a failover, an
    operator, ``pg_terminate_backend``), most often while it sat idle between two requests,
    so that the next request's first query finds out. The backend notes it
    (``promptadmin.db.lost``); a read-only request (GET, HEAD, OPTIONS, or a POST to
    one of :data:`READ_ONLY_POSTS`) is then handled again, its first answer (a 500)
    dropped. Anything else keeps its answer: a write may have been committed before the
    connection went, and running it again could do it twice.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method == "POST" and _small_json(request):
            request.body  # noqa: B018 - kept, so that a second try can read it again
        lost.take()  # what an earlier request on this thread noted and did not take
        response = self.get_response(request)
        gone = lost.take()
        if not gone:
            return response
        for connection in gone:
            connection.close()
        if not _read_only(request):
            return response
        logger.warning(
            "The database connection was lost during %s %s; answering again on a fresh one.",
            request.method,
            request.path,
        )
        return self.get_response(request)


def _small_json(request: HttpRequest) -> bool:
    if not request.META.get("CONTENT_TYPE", "").startswith(JSON_TYPES):
        return False
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return False
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return limit is None or length <= limit


def _read_only(request: HttpRequest) -> bool:
    if request.method in SAFE_METHODS:
        return True
    match = request.resolver_match
    return (
        request.method == "POST"
        and match is not None
        and match.url_name in READ_ONLY_POSTS
        and hasattr(request, "_body")
    )


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
