"""Cache of resolved static content for assembly, invalidated by every content change.

A content generation (a random token kept in the shared cache) is part of every key; each
committed content change replaces it, so all cached bundles become unreachable at once
and simply expire. Bundles are kept in the shared cache (Redis) and, already unpickled,
in a small per-process memory, so a warm assembly costs one cache round trip: reading
the generation. The cache is an accelerator only: when it is unreachable (and, after one
timeout, skipped: see core.cachebreaker), each process keeps serving from its own memory
under a local generation that changes every ``LOCAL_GENERATION_SECONDS`` and with every
change this process commits, so a change made elsewhere shows within that time and one
made here at once; a change made while the cache was unreachable invalidates the shared
cache as soon as it answers again.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

from django.core.cache import cache
from django.db import transaction

from promptadmin.core.metrics import CACHE

logger = logging.getLogger(__name__)

GENERATION_KEY = "assembly:generation"
# Bounds how long a bundle could outlive a change made while the cache was unreachable.
BUNDLE_TTL_SECONDS = 300
LOCAL_ENTRIES = 256

# While the shared cache is unreachable: how long a bundle loaded by this process may
# serve before it is read again (the most a change made in another process can lag).
LOCAL_GENERATION_SECONDS = 2.0
LOCAL_PREFIX = "local."  # a dot: never part of a slug, so never mistaken in a key

_local: OrderedDict[str, Any] = OrderedDict()
_local_lock = threading.Lock()
_process = secrets.token_hex(4)  # local generations never match another process's keys
_local_changes = 0  # content changes this process committed
# Generation keys with a change committed while the shared cache was unreachable.
_bump_pending: set[str] = set()
# Keys this process reads on every request: a request fetches them all in one round trip.
_known: set[str] = set()
KNOWN_LIMIT = 32  # a handful in practice: the generations and the release labels
# ``memo``: what the request being served on this thread has read (None outside one).
_request = threading.local()


def generation(generation_key: str = GENERATION_KEY) -> str:
    """The current content generation: the shared one, or a local one when the shared cache
    cannot be reached (then bundles live in this process's memory only).

    A random token rather than a counter: should the cache lose it (a Redis restart), the
    new one cannot match keys remembered from before. Another domain passes its own
    ``generation_key``, so its changes invalidate only its own entries.
    """
    value = _from_request(generation_key)
    if value is _MISSING:
        value = _read_generation(generation_key)
        _keep(generation_key, value)
    return str(value)


# What a request reads on every call (generations, release labels) is fetched at its
# first read, all in one round trip, and kept for the rest of the request: a request sees
# one state of the content throughout, and the next request reads again.
_MISSING = object()


def _from_request(key: str) -> Any:
    """The value under ``key`` as the request being served read it, else ``_MISSING``
    (outside a request, or not in the shared cache)."""
    memo: dict[str, Any] | None = getattr(_request, "memo", None)
    if memo is None or key in _bump_pending:
        return _MISSING
    if len(_known) < KNOWN_LIMIT:
        _known.add(key)
    if key not in memo and not _request.prefetched:
        _request.prefetched = True
        try:
            memo.update(cache.get_many(sorted(_known)))
        except Exception:  # the cache never fails a request
            logger.warning("content cache unavailable", exc_info=True)
    return memo.get(key, _MISSING)


def _keep(key: str, value: Any) -> None:
    memo: dict[str, Any] | None = getattr(_request, "memo", None)
    if memo is not None:
        memo[key] = value


def _forget() -> None:
    """This process changed what requests read: the request serving it reads again."""
    if getattr(_request, "memo", None) is not None:
        request_started()


def request_started(**_signal: Any) -> None:
    """Django's ``request_started``: the request reads afresh."""
    _request.memo = {}
    _request.prefetched = False


def request_finished(**_signal: Any) -> None:
    """Django's ``request_finished``: reads outside requests (tasks, commands) are not kept."""
    _request.memo = None


def _read_generation(generation_key: str) -> str:
    try:
        value = cache.get(generation_key)
        if value is not None and generation_key in _bump_pending:
            _bump_pending.discard(generation_key)
            _bump(generation_key)
            value = cache.get(generation_key)
        if value is None:
            cache.add(generation_key, secrets.token_hex(8), timeout=None)
            value = cache.get(generation_key)
    except Exception:  # the cache never fails a request
        logger.warning("content cache unavailable", exc_info=True)
        value = None
    if value is None:  # unreachable (the Redis cache ignores its errors: a miss)
        slot = int(time.monotonic() // LOCAL_GENERATION_SECONDS)
        return f"{LOCAL_PREFIX}{_process}-{_local_changes}-{slot}"
    return str(value)


def _shared(keys: Iterable[str]) -> bool:
    """Whether ``keys`` belong to the shared generation (else to this process only)."""
    return not any(f":{LOCAL_PREFIX}" in k for k in keys)


# Bundles are pickled dataclasses: change this when their shape or module changes, so that
# a new release never unpickles what an old one cached.
BUNDLE_FORMAT = 3


def key(generation: str, kind: str, slug: str) -> str:
    return f"assembly:v{BUNDLE_FORMAT}:{generation}:{kind}:{slug}"


def get_many(keys: list[str]) -> dict[str, Any]:
    """Bundles found under ``keys``: from process memory, else from the shared cache."""
    with _local_lock:
        found = {k: _local[k] for k in keys if k in _local}
        for k in found:
            _local.move_to_end(k)
    missing = [k for k in keys if k not in found]
    if missing and _shared(missing):
        try:
            fetched = cache.get_many(missing)
        except Exception:
            logger.warning("content cache unavailable", exc_info=True)
            fetched = {}
        _remember(fetched)
        found.update(fetched)
    _count(len(keys), len(found), len(found) - (len(keys) - len(missing)))
    return found


def _count(asked: int, found: int, shared: int) -> None:
    """Counts bundle lookups for /metrics: memory hits, shared-cache hits, misses."""
    if found - shared:
        CACHE.labels("memory_hit").inc(found - shared)
    if shared:
        CACHE.labels("shared_hit").inc(shared)
    if asked - found:
        CACHE.labels("miss").inc(asked - found)


def set_many(values: dict[str, Any]) -> None:
    _remember(values)
    if not _shared(values):
        return  # bundles of a local generation stay in this process
    try:
        cache.set_many(values, timeout=BUNDLE_TTL_SECONDS)
    except Exception:
        logger.warning("content cache unavailable", exc_info=True)


def _remember(values: dict[str, Any]) -> None:
    with _local_lock:
        _local.update(values)
        while len(_local) > LOCAL_ENTRIES:
            _local.popitem(last=False)


def _bump(generation_key: str = GENERATION_KEY) -> None:
    global _local_changes
    _local_changes += 1
    _forget()
    token = secrets.token_hex(8)
    try:
        # Read back: the Redis cache ignores its errors, so a lost write looks like success.
        cache.set(generation_key, token, timeout=None)
        done = cache.get(generation_key) == token
    except Exception:
        logger.warning("content cache unavailable", exc_info=True)
        done = False
    # Unreachable: bump when it answers again, so that bundles cached before the change
    # are not served by other processes once it is back.
    if done:
        _bump_pending.discard(generation_key)
    else:
        _bump_pending.add(generation_key)


# Called once a content change has committed (content registers its background checks
# here: core imports no domain).
_change_listeners: list[Callable[[], None]] = []


def on_content_change(listener: Callable[[], None]) -> None:
    """Call ``listener`` after every committed content change (once per transaction)."""
    if listener not in _change_listeners:
        _change_listeners.append(listener)


def _content_committed() -> None:
    _bump()
    # The listeners hear of a transaction's changes once (one call per change is queued:
    # the first one to run tells them; the count is the connection's, i.e. this thread's).
    connection = transaction.get_connection()
    if not getattr(connection, "content_notices", 0):
        return
    connection.content_notices = 0  # type: ignore[attr-defined]
    for listener in _change_listeners:
        try:
            listener()
        except Exception:  # a background check never fails the change that asked for it
            logger.exception("content change listener %r failed", listener)


def content_changed() -> None:
    """Invalidate every cached bundle once the current transaction commits (and tell the
    listeners: see :func:`on_content_change`)."""
    connection = transaction.get_connection()
    connection.content_notices = getattr(connection, "content_notices", 0) + 1  # type: ignore[attr-defined]
    transaction.on_commit(_content_committed)


def generation_changed(generation_key: str) -> None:
    """Invalidate every entry keyed by ``generation(generation_key)`` once the current
    transaction commits."""
    transaction.on_commit(lambda: _bump(generation_key))


def generation_changed_now(generation_key: str) -> None:
    """Invalidate every entry keyed by ``generation(generation_key)`` now, and again once
    the current transaction commits (what was read in between is invalidated too)."""
    _bump(generation_key)
    transaction.on_commit(lambda: _bump(generation_key))


# Small shared values read on every request (the release labels): kept in the shared
# cache only, never in process memory, so that a change is seen by the very next request
# whichever process serves it. A writer stores the new value once its transaction
# commits; a reader that misses computes it and only *adds* it, so it can never overwrite
# a newer value with what it read before the writer committed. Two writers committing at
# once could still store in the wrong order, so a value carries a version and the store is
# checked right after (:func:`shared_store`).
SHARED_TTL_SECONDS = 60


def shared(key: str, load: Callable[[], Any]) -> Any:
    """The value under ``key``, else ``load()`` (remembered for the next reader)."""
    value = _from_request(key)
    if value is not _MISSING:
        return value
    try:
        value = cache.get(key)
    except Exception:
        logger.warning("content cache unavailable", exc_info=True)
        return load()
    if value is None:
        value = load()
        try:
            cache.add(key, value, timeout=SHARED_TTL_SECONDS)
        except Exception:
            logger.warning("content cache unavailable", exc_info=True)
    _keep(key, value)
    return value


# Rounds of the check after a store: each needs yet another writer to commit within the
# milliseconds between a store and its check.
SETTLE_ROUNDS = 3


def shared_store(key: str, load: Callable[[], Any], version: Callable[[Any], int]) -> None:
    """Store ``load()`` under ``key`` now; then, while the database holds a newer value
    (by ``version``) than the one stored, store that one.

    Two writers committing close together may store in the wrong order (one loads, the
    other commits and stores, then the first stores what it loaded): the check after the
    store is what keeps the newest value, never an older one, in the cache.
    """
    try:
        cache.set(key, load(), timeout=SHARED_TTL_SECONDS)
        _forget()
        for _ in range(SETTLE_ROUNDS):
            stored, current = cache.get(key), load()
            if stored is not None and version(stored) >= version(current):
                return
            cache.set(key, current, timeout=SHARED_TTL_SECONDS)
    except Exception:
        # Readers fall back to the database while the cache is away; the TTL bounds what
        # an unreachable cache might still hold when it comes back.
        logger.warning("content cache unavailable", exc_info=True)


def shared_changed(key: str, load: Callable[[], Any], version: Callable[[Any], int]) -> None:
    """Once the current transaction commits, :func:`shared_store` the new value."""
    transaction.on_commit(lambda: shared_store(key, load, version))
