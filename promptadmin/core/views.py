"""Small operational views."""

from __future__ import annotations

from django.conf import settings
from django.core.cache import cache
from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET


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
