"""Playtest endpoints: queue a run (a write key or an author), read runs (any key).

With playtests off (no ``PLAYTEST_BASE_URL``), every endpoint answers 409
``playtests_off`` saying how to turn them on (a 5xx would read as the server's fault, and
clients would retry it).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import exceptions, status
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse

from promptadmin.api.authentication import actor_of
from promptadmin.api.errors import ClientErrorResponseSerializer
from promptadmin.api.pagination import PageNumberPagination
from promptadmin.api.permissions import ReadOrWrite
from promptadmin.api.serializers import playtests as s
from promptadmin.api.serializers.common import validated
from promptadmin.playtests import selectors, services
from promptadmin.playtests.endpoint import OFF, enabled
from promptadmin.playtests.models import PlaytestRun

TAGS = ["playtests"]


class PlaytestsOff(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "playtests_off"
    default_detail = OFF


OFF_RESPONSE = {
    409: OpenApiResponse(ClientErrorResponseSerializer, description=f"`playtests_off`: {OFF}")
}


def _on() -> None:
    if not enabled():
        raise PlaytestsOff()


class PlaytestListView(GenericAPIView[PlaytestRun]):
    permission_classes = [ReadOrWrite]
    pagination_class = PageNumberPagination
    serializer_class = s.PlaytestSerializer

    def get_queryset(self) -> Any:
        return selectors.runs()

    @extend_schema(
        operation_id="playtests_list",
        tags=TAGS,
        responses={200: s.PlaytestSerializer(many=True), **OFF_RESPONSE},
        summary="Playtest runs, newest first (paginated)",
    )
    def get(self, request: Request) -> Response:
        _on()
        page = self.paginate_queryset(self.get_queryset())
        assert page is not None
        return self.get_paginated_response([selectors.detail(run) for run in page])

    @extend_schema(
        operation_id="playtests_create",
        tags=TAGS,
        request=s.PlaytestInputSerializer,
        responses={
            202: OpenApiResponse(
                s.PlaytestQueuedSerializer, description="Queued: follow `url` for the replies."
            ),
            **OFF_RESPONSE,
        },
        examples=[
            OpenApiExample(
                "The change against production",
                request_only=True,
                value={"scenarios": "all", "release": "working", "compare_to": "production"},
            )
        ],
        summary="Playtest scenarios against the model; refused over PLAYTEST_MAX_CALLS",
    )
    def post(self, request: Request) -> Response:
        _on()
        data = validated(s.PlaytestInputSerializer, request.data)
        run = services.playtest_create(actor=actor_of(request), **data)
        url = reverse("api-playtest", args=[run.pk], request=request)
        run.refresh_from_db(fields=["status"])
        return Response(
            {"id": run.pk, "status": run.status, "url": url}, status=status.HTTP_202_ACCEPTED
        )


class PlaytestDetailView(GenericAPIView[PlaytestRun]):
    permission_classes = [ReadOrWrite]

    @extend_schema(
        operation_id="playtests_read",
        tags=TAGS,
        responses={
            200: s.PlaytestSerializer,
            404: OpenApiResponse(ClientErrorResponseSerializer, description="No such run."),
            **OFF_RESPONSE,
        },
        summary="A playtest run: its status and the replies so far, with verdicts",
    )
    def get(self, request: Request, pk: int) -> Response:
        _on()
        run = selectors.runs().filter(pk=pk).first()
        if run is None:
            raise exceptions.NotFound(f"No playtest {pk}.")
        return Response(selectors.detail(run))
