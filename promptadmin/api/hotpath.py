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
- for a body, ``Content-Type: application/json`` (UTF-8) within Django's upload limit,
  holding JSON that decodes.

Whether a request is plain is decided before the view's work starts; anything else goes
through DRF exactly as before (a session, Basic credentials, a bad or revoked key,
``Accept: application/json; indent=2``, a rate limit when one is configured, a body DRF's
parser words the refusal of). A plain request is answered here whatever happens next: its
input is read once (by the one request parser, :mod:`assembler.request`), and an error the
view raises is answered by the view's own exception handling, as DRF would answer it, so a
failing request runs its view once. tests/promptadmin/api/test_hotpath.py holds the two
paths to the same status, headers and body (``settings.API_HOT_PATH`` off sends every
request through DRF).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from assembler.storable import loads, refuse_unencodable_keys
from promptadmin.api.authentication import KEY_SHAPE, KEYWORD, verified_key
from promptadmin.api.renderers import JSONRenderer

PLAIN_ACCEPT = frozenset({"", "*/*", "application/json"})
JSON_TYPES = frozenset({"application/json", "application/json; charset=utf-8"})

_render = JSONRenderer().render
_NOT_PLAIN: Any = object()


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

    def hot(self, request: HttpRequest, data: Any, **kwargs: Any) -> Answer:
        """The answer to a plain request whose body is ``data`` (None for a GET); an
        error is raised as the view's handler raises it."""
        raise NotImplementedError

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if request.method == self.hot_method and not args and settings.API_HOT_PATH:
            data = self._plain(request)
            if data is not _NOT_PLAIN:
                return self._serve(request, data, kwargs)
        return super().dispatch(request, *args, **kwargs)

    def _plain(self, request: HttpRequest) -> Any:
        """The body of a plain request (None without one), else ``_NOT_PLAIN``."""
        meta = request.META
        if api_settings.DEFAULT_THROTTLE_CLASSES:
            return _NOT_PLAIN  # a rate limit counts every call: DRF's throttles do that
        if meta.get("HTTP_ACCEPT", "").strip().lower() not in PLAIN_ACCEPT:
            return _NOT_PLAIN
        if not _plain_query(request, self.hot_query):
            return _NOT_PLAIN
        key = self.hot_key(meta.get("HTTP_AUTHORIZATION", ""))
        if key is None:
            return _NOT_PLAIN
        try:
            verified_key(key)
        except AuthenticationFailed:
            return _NOT_PLAIN
        if self.hot_method != "POST":
            return None
        if meta.get("CONTENT_TYPE", "").lower() not in JSON_TYPES:
            return _NOT_PLAIN
        # request.body refuses a body over Django's upload limit (an HTML 400), where DRF
        # reads the stream and answers as ever.
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if limit is not None and int(meta.get("CONTENT_LENGTH") or 0) > limit:
            return _NOT_PLAIN
        try:
            text = request.body.decode("utf-8")
            data = loads(text)
            refuse_unencodable_keys(data, text)
        except (ValueError, RecursionError):  # bad JSON, UTF-8 or key: DRF's parser words it
            return _NOT_PLAIN
        return data

    def _serve(self, request: HttpRequest, data: Any, kwargs: dict[str, Any]) -> HttpResponseBase:
        try:
            answer = self.hot(request, data, **kwargs)
        except Exception as exc:  # answered as the view answers it; never run again
            return self._failed(request, exc, kwargs)
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

    def _failed(
        self, request: HttpRequest, exc: Exception, kwargs: dict[str, Any]
    ) -> HttpResponseBase:
        """What DRF answers when the view raises ``exc``: the view's exception handling
        and the same finishing, set up as DRF's dispatch sets them up (the request was
        plain: its credentials and renderer are settled)."""
        self.args, self.kwargs = (), kwargs
        drf_request = self.initialize_request(request, **kwargs)
        self.request = drf_request
        self.headers = self.default_response_headers
        self.format_kwarg = self.get_format_suffix(**kwargs)
        drf_request.accepted_renderer, drf_request.accepted_media_type = (
            self.perform_content_negotiation(drf_request)
        )
        response = self.handle_exception(exc)
        return self.finalize_response(drf_request, response, **kwargs)


def _plain_query(request: HttpRequest, allowed: frozenset[str]) -> bool:
    if not request.META.get("QUERY_STRING"):
        return True
    params = request.GET
    if not params.keys() <= allowed:
        return False
    # A key in the URL is refused by DRF (promptadmin.api.authentication).
    return not any(KEY_SHAPE.search(value) for values in params.lists() for value in values[1])
