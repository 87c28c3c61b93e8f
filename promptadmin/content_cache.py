"""Cache of resolved static content for assembly, invalidated by every content change.

A content generation (a random token kept in the shared cache) is part of every key; each
committed content change replaces it, so all cached bundles become unreachable at once
and simply expire. Bundles are kept in the shared cache (Redis) and, already unpickled,
in a small per-process memory, so a warm assembly costs one cache round trip: reading
the generation. The cache is an accelerator only: when it is unreachable, assembly reads
the database.
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections import OrderedDict
from typing import Any

from django.core.cache import cache
from django.db import transaction

logger = logging.getLogger(__name__)

GENERATION_KEY = "assembly:generation"
# Bounds how long a bundle could outlive a change made while the cache was unreachable.
BUNDLE_TTL_SECONDS = 300
LOCAL_ENTRIES = 256

_local: OrderedDict[str, Any] = OrderedDict()
_local_lock = threading.Lock()


def generation() -> str | None:
    """The current content generation, or None when the cache cannot be reached.

    A random token rather than a counter: should the cache lose it (a Redis restart), the
    new one cannot match keys remembered from before.
    """
    try:
        value = cache.get(GENERATION_KEY)
        if value is None:
            cache.add(GENERATION_KEY, secrets.token_hex(8), timeout=None)
            value = cache.get(GENERATION_KEY)
    except Exception:  # the cache never fails a request
        logger.warning("content cache unavailable", exc_info=True)
        return None
    return str(value) if value is not None else None


# Bundles are pickled dataclasses: change this when their shape changes, so that a new
# release never unpickles what an old one cached.
BUNDLE_FORMAT = 2


def key(generation: str, kind: str, slug: str) -> str:
    return f"assembly:v{BUNDLE_FORMAT}:{generation}:{kind}:{slug}"


def get_many(keys: list[str]) -> dict[str, Any]:
    """Bundles found under ``keys``: from process memory, else from the shared cache."""
    with _local_lock:
        found = {k: _local[k] for k in keys if k in _local}
        for k in found:
            _local.move_to_end(k)
    missing = [k for k in keys if k not in found]
    if missing:
        try:
            fetched = cache.get_many(missing)
        except Exception:
            logger.warning("content cache unavailable", exc_info=True)
            fetched = {}
        _remember(fetched)
        found.update(fetched)
    return found


def set_many(values: dict[str, Any]) -> None:
    _remember(values)
    try:
        cache.set_many(values, timeout=BUNDLE_TTL_SECONDS)
    except Exception:
        logger.warning("content cache unavailable", exc_info=True)


def _remember(values: dict[str, Any]) -> None:
    with _local_lock:
        _local.update(values)
        while len(_local) > LOCAL_ENTRIES:
            _local.popitem(last=False)


def _bump() -> None:
    try:
        cache.set(GENERATION_KEY, secrets.token_hex(8), timeout=None)
    except Exception:
        logger.warning(
            "content cache unavailable: cached bundles expire on their own", exc_info=True
        )


def content_changed() -> None:
    """Invalidate every cached bundle once the current transaction commits."""
    transaction.on_commit(_bump)
