from __future__ import annotations

from django.apps import AppConfig


class CoreConfig(AppConfig):
    """What every domain shares: roles, actors, errors, the tokenizer, the content cache."""

    name = "promptadmin.core"
    label = "promptadmin_core"
    verbose_name = "promptadmin core"

    def ready(self) -> None:
        from django.core.servers.basehttp import WSGIRequestHandler
        from django.core.signals import request_finished, request_started

        from promptadmin.core import cache, checks, logs, tasksignals  # noqa: F401  (checks)

        request_started.connect(cache.request_started, dispatch_uid="generations-start")
        request_finished.connect(cache.request_finished, dispatch_uid="generations-end")
        request_finished.connect(logs.request_finished, dispatch_uid="request-id-end")
        tasksignals.connect()

        # Django's own server (runserver, and the live server of the browser and
        # schemathesis tests) writes a response's headers and body separately: on a
        # kept-alive connection Nagle's algorithm then holds the body until the client's
        # delayed ACK, about 40 ms per request. gunicorn is not affected.
        WSGIRequestHandler.disable_nagle_algorithm = True
