"""Cache of resolved static content for assembly, invalidated by every content change.

One counter (the content generation) is part of every cache key; each committed content
change bumps it, so all cached bundles become unreachable at once and simply expire.
The cache is an accelerator only: when it is down, reads miss and assembly uses the
database.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.cache import cache
from django.db import transaction

logger = logging.getLogger(__name__)

GENERATION_KEY = "assembly:generation"
# Bounds how long a bundle could outlive a change made while the cache was unreachable.
BUNDLE_TTL_SECONDS = 300


def generation() -> int:
    try:
        value = cache.get(GENERATION_KEY)
    except Exception:  # the cache never fails a request
        logger.warning("content cache unavailable", exc_info=True)
        return -1
    return int(value) if value is not None else 0


def key(generation: int, kind: str, slug: str) -> str:
    return f"assembly:{generation}:{kind}:{slug}"


def get_many(keys: list[str]) -> dict[str, Any]:
    try:
        return cache.get_many(keys)
    except Exception:
        logger.warning("content cache unavailable", exc_info=True)
        return {}


def set_many(values: dict[str, Any]) -> None:
    try:
        cache.set_many(values, timeout=BUNDLE_TTL_SECONDS)
    except Exception:
        logger.warning("content cache unavailable", exc_info=True)


def _bump() -> None:
    try:
        if not cache.add(GENERATION_KEY, 1, timeout=None):
            cache.incr(GENERATION_KEY)
    except Exception:
        logger.warning(
            "content cache unavailable: cached bundles expire on their own", exc_info=True
        )


def content_changed() -> None:
    """Invalidate every cached bundle once the current transaction commits."""
    transaction.on_commit(_bump)
