"""What operators measure: Prometheus metrics, and who may read them at ``/metrics``.

Requests by route (the URL pattern's name, never the raw path, so that the number of
series stays bounded) and status, with a latency histogram; the content cache's hits and
misses; the cache circuit breaker's state; Celery work queued, done and failed by task
name.

Under gunicorn every worker is a process of its own: with ``PROMETHEUS_MULTIPROC_DIR``
set (a directory shared by the web workers and, on the same host or volume, the Celery
workers; emptied before the server starts, see ``gunicorn.conf.py``) each process writes
its values there and ``/metrics`` adds them up, whichever worker answers. Without it (the
development server, tests) the values are this process's.

``/metrics`` (``promptadmin.core.views.metrics``) answers a loopback client, an address
in ``METRICS_ALLOWED_ADDRESSES``, or a request carrying ``Authorization: Bearer
<METRICS_TOKEN>``; anyone else gets a 403.
"""

from __future__ import annotations

import os
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client import multiprocess as prometheus_multiprocess

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

REQUESTS = Counter(
    "promptadmin_http_requests",
    "HTTP requests answered, by route (URL pattern name), method and status code.",
    ["route", "method", "status"],
)
LATENCY = Histogram(
    "promptadmin_http_request_duration_seconds",
    "Time to answer an HTTP request, by route (URL pattern name) and method.",
    ["route", "method"],
    buckets=LATENCY_BUCKETS,
)
CACHE = Counter(
    "promptadmin_cache_lookups",
    "Lookups of cached assembly content: hits in this process's memory, hits in the shared "
    "cache (Redis), and misses (loaded from the database).",
    ["result"],
)
BREAKER_OPEN = Gauge(
    "promptadmin_cache_breaker_open",
    "1 while the shared cache's circuit breaker is open (Redis skipped), else 0; the "
    "highest over the live processes.",
    multiprocess_mode="livemax",
)
BREAKER_OPENED = Counter(
    "promptadmin_cache_breaker_openings",
    "Times the shared cache's circuit breaker opened (Redis stopped answering).",
)
TASKS = Counter(
    "promptadmin_tasks",
    "Celery tasks by task name and state: queued, done, failed, retried.",
    ["task", "state"],
)


def route_of(request: HttpRequest) -> str:
    """The name of the URL pattern that answered, namespaced (``studio:segment_list``);
    ``static`` for static files, ``unmatched`` for any other path."""
    match = getattr(request, "resolver_match", None)
    if match is not None and match.view_name:
        return str(match.view_name)
    if request.path.startswith(f"/{settings.STATIC_URL.lstrip('/')}"):
        return "static"
    return "unmatched"


# The series of each (route, method, status): prometheus_client's labels() lookup costs
# microseconds a request, a dict lookup here a fraction of one. Bounded: routes are the
# URL patterns' names.
_series: dict[tuple[str, str, int], tuple[Any, Any]] = {}


def observe_request(request: HttpRequest, status: int, seconds: float) -> None:
    route = route_of(request)
    method = request.method if request.method in METHODS else "other"
    series = _series.get((route, method, status))
    if series is None:
        series = _series[(route, method, status)] = (
            REQUESTS.labels(route, method, str(status)),
            LATENCY.labels(route, method),
        )
    series[0].inc()
    series[1].observe(seconds)


def registry() -> Any:
    """What ``/metrics`` writes: every process's values under gunicorn, else this one's."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        collected = CollectorRegistry()
        prometheus_multiprocess.MultiProcessCollector(collected)  # type: ignore[no-untyped-call]
        return collected
    return REGISTRY
