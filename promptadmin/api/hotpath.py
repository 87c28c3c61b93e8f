"""The hottest calls, answered without DRF's request cycle when a request is plain.

Games assemble on every turn and pipelines fetch and render prompts on every call. DRF's
cycle around a view (wrapping the request, negotiating the renderer, running the
authentication and permission classes, building, finalizing and rendering a Response)
costs more CPU than assembling a turn from a release. A :class:`HotView` answers a
*plain* request itself, with the same view code and the same bytes:

- credentials in ``Authorization: Api-Key <key>`` (Basic on the Langfuse-compatible
  API), and a key that verifies (any key may read, and these calls only read);
- no query parameter but those the view declares, and none that looks like a key;
- no ``Accept`` header, or one that takes JSON as is (``*/*``, ``application/json``);
- for a body, ``Content-Type: application/json`` (UTF-8) and JSON that the view's fast
  validation accepts (``promptadmin.api.fastpath``).

Everything else goes through DRF exactly as before: a session, Basic credentials, a bad
or revoked key, ``Accept: application/json; indent=2``, a rate limit when one is
configured, a body that needs full validation, and every error (the view declines, and
DRF answers, so errors are worded in one place; so does an unexpected failure, which DRF
meets again and answers as ever). tests/promptadmin/api/test_hotpath.py
holds the two paths to the same status, headers and body.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from assembler.storable import loads
from promptadmin.api.authentication import KEY_SHAPE, KEYWORD, verified_key
from promptadmin.api.renderers import JSONRenderer

PLAIN_ACCEPT = frozenset({"", "*/*", "application/json"})
JSON_TYPES = frozenset({"application/json", "application/json; charset=utf-8"})

# Off in the tests that hold both paths to the same answers.
enabled = True

_render = JSONRenderer().render


class Answer:
    """What a hot view answers: a body (None: none, as for a 304), a status, headers."""

    __slots__ = ("body", "headers", "status")

    def __init__(self, body: Any, status: int = 200, headers: dict[str, str] | None = None):
        self.body = body
        self.status = status
        self.headers = headers or {}

    def response(self) -> Response:
        """The same answer through DRF (the view's own handler)."""
        return Response(self.body, status=self.status, headers=self.headers)


class HotView(APIView):
    """An APIView whose plain requests skip DRF's cycle (see the module's docstring)."""

    hot_method = "POST"
    hot_query: frozenset[str] = frozenset()

    def hot_key(self, authorization: str) -> str | None:
        """The API key in a well-formed ``Authorization`` header of the kind this view
        authenticates, else None."""
        keyword, _, key = authorization.partition(" ")
        return key.strip() if keyword.lower() == KEYWORD.lower() else None

    def hot(self, request: HttpRequest, data: Any, **kwargs: Any) -> Answer | None:
        """The answer to a plain request whose body is ``data`` (None for a GET), or None
        to leave the request to DRF."""
        raise NotImplementedError

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if enabled and request.method == self.hot_method and not args:
            response = self._answer(request, kwargs)
            if response is not None:
                return response
        return super().dispatch(request, *args, **kwargs)

    def _answer(self, request: HttpRequest, kwargs: dict[str, Any]) -> HttpResponse | None:
        meta = request.META
        if api_settings.DEFAULT_THROTTLE_CLASSES:
            return None  # a rate limit counts every call: DRF's throttles do that
        if meta.get("HTTP_ACCEPT", "").strip().lower() not in PLAIN_ACCEPT:
            return None
        if not _plain_query(request, self.hot_query):
            return None
        key = self.hot_key(meta.get("HTTP_AUTHORIZATION", ""))
        if key is None:
            return None
        try:
            verified_key(key)
        except AuthenticationFailed:
            return None
        data = None
        if self.hot_method == "POST":
            if meta.get("CONTENT_TYPE", "").lower() not in JSON_TYPES:
                return None
            # request.body refuses a body over Django's upload limit (an HTML 400), where
            # DRF reads the stream and answers as ever.
            limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
            if limit is not None and int(meta.get("CONTENT_LENGTH") or 0) > limit:
                return None
            # A key holding a lone surrogate needs no look here: the fast paths take only
            # keys they know, and DRF's parser refuses it.
            try:
                data = loads(request.body.decode("utf-8"))
            except (ValueError, RecursionError):  # bad JSON or UTF-8: DRF words it
                return None
        try:
            answer = self.hot(request, data, **kwargs)
        except Exception:  # every error is DRF's to answer (and log), as it always was
            return None
        if answer is None:
            return None
        if answer.body is None:
            response = HttpResponse(status=answer.status)
            del response["Content-Type"]
        else:
            response = HttpResponse(
                _render(answer.body), status=answer.status, content_type="application/json"
            )
        for name, value in {**self.default_response_headers, **answer.headers}.items():
            response[name] = value
        return response


def _plain_query(request: HttpRequest, allowed: frozenset[str]) -> bool:
    if not request.META.get("QUERY_STRING"):
        return True
    params = request.GET
    if not params.keys() <= allowed:
        return False
    # A key in the URL is refused by DRF (promptadmin.api.authentication).
    return not any(KEY_SHAPE.search(value) for values in params.lists() for value in values[1])
