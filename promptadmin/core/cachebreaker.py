"""A circuit breaker for Redis: after a failure, skip the cache for a while.

The cache is an accelerator, never a dependency. Short socket timeouts bound what one
call to an unreachable Redis costs; this breaker makes sure only one call pays it: once
a command fails (refused, reset, timed out), every command in the process fails at once,
without touching the network, for ``COOLDOWN`` seconds. Then one command probes; if it
succeeds the cache is used again, else the breaker stays open for another cooldown.

It sits under django-redis, as the Redis client class (``REDIS_CLIENT_CLASS``), so every
cache use gets it: the content cache, health checks and any future caller. django-redis
turns the fast failure into a miss (``IGNORE_EXCEPTIONS``), exactly as a slow one was.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import redis
from redis.client import Pipeline

from promptadmin.core.metrics import BREAKER_OPEN, BREAKER_OPENED

logger = logging.getLogger(__name__)

FAILURES = (redis.ConnectionError, redis.TimeoutError)


class CircuitBreaker:
    """Closed (use the cache), or open until a moment (skip it); thread-safe.

    >>> breaker = CircuitBreaker(cooldown=30.0)
    >>> breaker.allow()
    True
    >>> breaker.failed()
    >>> breaker.allow()
    False
    """

    def __init__(self, cooldown: float) -> None:
        self.cooldown = cooldown
        self._open_until = 0.0  # 0.0: closed
        self._lock = threading.Lock()

    @property
    def is_open(self) -> bool:
        return self._open_until != 0.0

    def allow(self) -> bool:
        """Whether to try the cache now. After a cooldown, one caller probes; the others
        keep skipping until it succeeds or fails."""
        if not self._open_until:
            return True
        with self._lock:
            now = time.monotonic()
            if now < self._open_until:
                return False
            self._open_until = now + self.cooldown
            return True

    def failed(self) -> None:
        with self._lock:
            if not self._open_until:
                BREAKER_OPEN.set(1)
                BREAKER_OPENED.inc()
                logger.warning(
                    "cache unreachable: skipping it for %.1f s at a time until it answers",
                    self.cooldown,
                )
            self._open_until = time.monotonic() + self.cooldown

    def succeeded(self) -> None:
        if self._open_until:
            with self._lock:
                self._open_until = 0.0
            BREAKER_OPEN.set(0)
            logger.warning("cache reachable again")


class CircuitOpen(redis.ConnectionError):
    """Raised instead of calling a Redis that failed moments ago."""


class HideSkips(logging.Filter):
    """Drops the log records of calls the open breaker skipped."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(getattr(error, "__cause__", None), CircuitOpen)


def _guarded(breaker: CircuitBreaker, call: Any, *args: Any, **kwargs: Any) -> Any:
    if not breaker.allow():
        raise CircuitOpen("the cache failed moments ago: skipped (circuit open)")
    try:
        result = call(*args, **kwargs)
    except FAILURES:
        breaker.failed()
        raise
    breaker.succeeded()
    return result


class BreakerPipeline(Pipeline):
    breaker: CircuitBreaker

    def execute(self, raise_on_error: bool = True) -> list[Any]:
        return list(_guarded(self.breaker, super().execute, raise_on_error))


class BreakerRedis(redis.Redis):
    """``redis.Redis`` whose commands and pipelines go through the pool's breaker.

    Every client of one connection pool (django-redis makes one per thread) shares the
    pool's breaker: the state is about the server, not the thread.
    """

    def __init__(self, *args: Any, breaker_cooldown: float = 5.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        pool = self.connection_pool
        with _registry_lock:
            breaker = getattr(pool, "_promptadmin_breaker", None)
            if breaker is None:
                breaker = CircuitBreaker(breaker_cooldown)
                pool._promptadmin_breaker = breaker  # type: ignore[attr-defined]
        self.breaker: CircuitBreaker = breaker

    def execute_command(self, *args: Any, **options: Any) -> Any:
        return _guarded(self.breaker, super().execute_command, *args, **options)

    def pipeline(self, transaction: bool = True, shard_hint: Any = None) -> Pipeline:
        pipe = BreakerPipeline(
            self.connection_pool, self.response_callbacks, transaction, shard_hint
        )
        pipe.breaker = self.breaker
        return pipe


_registry_lock = threading.Lock()
