"""The Content-Security-Policy header: built once, and exactly what django-csp builds."""

from __future__ import annotations

from typing import Any

import pytest
from csp.constants import HEADER, HEADER_REPORT_ONLY
from csp.decorators import csp_exempt, csp_update
from csp.middleware import CSPMiddleware as LibraryCSPMiddleware
from django.http import HttpRequest, HttpResponse
from django.test import RequestFactory, override_settings

from promptadmin.core.middleware import CSPMiddleware


def through(middleware_class: type, view: Any, request: HttpRequest | None = None) -> Any:
    request = request or RequestFactory().get("/somewhere")
    middleware = middleware_class(view)
    return middleware(request), request


def plain(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok")


@csp_update({"img-src": "https://img.example"})
def updated(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok")


@csp_exempt()
def exempt(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok")


def with_nonce(request: HttpRequest) -> HttpResponse:
    return HttpResponse(str(request.csp_nonce))  # type: ignore[attr-defined]


@pytest.mark.parametrize("view", [plain, updated, exempt, with_nonce])
def test_every_response_gets_what_django_csp_gives_it(view: Any) -> None:
    ours, _ = through(CSPMiddleware, view)
    theirs, _ = through(LibraryCSPMiddleware, view)
    assert ours.get(HEADER) is not None or view is exempt
    # (Our policy names no nonce source: a nonce used by a page changes nothing in it.)
    assert ours.get(HEADER) == theirs.get(HEADER)
    assert ours.get(HEADER_REPORT_ONLY) == theirs.get(HEADER_REPORT_ONLY)


def test_a_changed_setting_is_followed() -> None:
    before, _ = through(CSPMiddleware, plain)
    policy = {"DIRECTIVES": {"default-src": ["'none'"]}}
    with override_settings(
        CONTENT_SECURITY_POLICY=policy, CONTENT_SECURITY_POLICY_REPORT_ONLY=policy
    ):
        after, _ = through(CSPMiddleware, plain)
    assert before[HEADER] != after[HEADER] == "default-src 'none'"
    assert after[HEADER_REPORT_ONLY] == "default-src 'none'"


def test_a_nonce_asked_for_after_the_header_is_written_is_an_error() -> None:
    from csp.exceptions import CSPNonceError

    _, request = through(CSPMiddleware, plain)
    with pytest.raises(CSPNonceError):
        str(request.csp_nonce)  # type: ignore[attr-defined]
