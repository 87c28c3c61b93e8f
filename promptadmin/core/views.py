"""Small operational views."""

from __future__ import annotations

import hmac
import ipaddress
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from promptadmin.core.clients import client_address
from promptadmin.core.metrics import registry


def _database_ok() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            return cursor.fetchone() == (1,)
    except DatabaseError:
        return False


def _cache_status() -> str:
    if not settings.REDIS_URL:
        return "absent"
    try:
        # The Redis cache ignores connection errors (the app runs without it), so a
        # round trip that comes back empty is how "down" shows here.
        cache.set("healthz", "ok", timeout=10)
        return "ok" if cache.get("healthz") == "ok" else "unavailable"
    except Exception:
        return "unavailable"


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """200 when the database answers; the cache is reported but never fails the check."""
    database_ok = _database_ok()
    body = {"database": "ok" if database_ok else "unavailable", "cache": _cache_status()}
    return JsonResponse(body, status=200 if database_ok else 503)


def locked_out(
    request: HttpRequest, response: HttpResponse | None = None, credentials: object = None
) -> HttpResponse:
    """What a locked-out sign-in sees (django-axes): why, for how long, and who can help."""
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    context = {
        "failure_limit": settings.AXES_FAILURE_LIMIT,
        "address_limit": settings.LOGIN_ADDRESS_FAILURE_LIMIT,
        "minutes": minutes,
    }
    return render(request, "registration/locked_out.html", context, status=429)


@lru_cache(maxsize=8)
def _networks(allowed: tuple[str, ...]) -> tuple[Any, ...]:
    return tuple(ipaddress.ip_network(item, strict=False) for item in allowed)


def may_read(request: HttpRequest) -> bool:
    """Whether ``request`` may read the metrics (see the module's docstring)."""
    token = settings.METRICS_TOKEN
    if token:
        keyword, _, given = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
        if keyword.lower() == "bearer" and hmac.compare_digest(given.strip(), token):
            return True
    address = client_address(request)
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return False
    if ip.is_loopback:
        # A request relayed by a proxy that is not trusted to name the client comes from
        # the proxy's own (often loopback) address: it is not local.
        return settings.TRUST_X_FORWARDED or "HTTP_X_FORWARDED_FOR" not in request.META
    return any(ip in network for network in _networks(tuple(settings.METRICS_ALLOWED_ADDRESSES)))


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """The metrics in Prometheus' text format."""
    if not may_read(request):
        return HttpResponse(
            "Metrics are answered to this machine (loopback), to METRICS_ALLOWED_ADDRESSES, "
            "or with Authorization: Bearer <METRICS_TOKEN>.\n",
            status=403,
            content_type="text/plain; charset=utf-8",
        )
    return HttpResponse(generate_latest(registry()), content_type=CONTENT_TYPE_LATEST)
