"""Small operational views."""

from __future__ import annotations

from django.conf import settings
from django.core.cache import cache
from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse
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
