"""An optional request rate per API key (``API_RATE_LIMIT``); people are not throttled.

Off unless configured. A throttled call answers 429 in the error shape with
``Retry-After``. Counts live in the cache, so they are shared by every worker; when the
cache is unreachable, nothing is throttled (the cache is never a dependency).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from promptadmin.content.models import ApiKey

if TYPE_CHECKING:
    # Only for the annotation: DRF imports this module while it defines APIView (its
    # throttle_classes come from the settings), so importing APIView here is circular.
    from rest_framework.views import APIView


class ApiKeyRateThrottle(SimpleRateThrottle):
    scope = "api_key"

    def get_cache_key(self, request: Request, view: APIView) -> str | None:
        if not isinstance(request.auth, ApiKey):
            return None
        return self.cache_format % {"scope": self.scope, "ident": request.auth.pk}
