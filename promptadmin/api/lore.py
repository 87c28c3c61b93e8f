"""Lore endpoints: entries by id (with ETags and If-Match like segments), their history
and restore, the test of a text, and SillyTavern World Info import and export.

Reads need any key or a signed-in person; writes a write key or an author. Every write
calls one service in :mod:`promptadmin.lore.services`.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from assembler.lore import LoreError
from promptadmin.api.authentication import actor_of
from promptadmin.api.content import PAGE_PARAMETERS, ByIdViewSet, Writes, restore_schema
from promptadmin.api.errors import ClientErrorResponseSerializer, ValidationErrorResponseSerializer
from promptadmin.api.permissions import CanRead, CanWrite
from promptadmin.api.preconditions import (
    ETAG,
    IF_MATCH,
    PRECONDITION_ERRORS,
    etag,
    with_etag,
)
from promptadmin.api.responses import RenderBeforeCommit
from promptadmin.api.serializers import lore as s
from promptadmin.api.serializers.common import validated
from promptadmin.content.models import World, is_slug
from promptadmin.lore import selectors, services, worldinfo
from promptadmin.lore.models import LoreEntry

TAGS = ["lore"]
BAD_INPUT = {400: ValidationErrorResponseSerializer}


def _world(slug: str | None, field: str = "world") -> World | None:
    if slug is None:
        return None
    world = World.objects.filter(slug=slug).first() if is_slug(slug) else None
    if world is None:
        raise ValidationError({field: [f"No world with slug '{slug}'."]})
    return world


@extend_schema_view(
    list=extend_schema(
        tags=TAGS,
        parameters=[s.LoreFilterSerializer],
        responses={200: s.LoreOutputSerializer(many=True), **BAD_INPUT},
        summary="Lore entries, most important first",
    ),
    retrieve=extend_schema(tags=TAGS, responses=s.LoreOutputSerializer, parameters=[ETAG]),
    create=extend_schema(
        tags=TAGS,
        request=s.LoreInputSerializer,
        responses={201: s.LoreOutputSerializer, **BAD_INPUT},
        parameters=[ETAG],
    ),
    update=extend_schema(
        tags=TAGS,
        request=s.LoreInputSerializer,
        responses={200: s.LoreOutputSerializer, **BAD_INPUT, **PRECONDITION_ERRORS},
        parameters=[IF_MATCH, ETAG],
    ),
    partial_update=extend_schema(
        tags=TAGS,
        request=s.LoreInputSerializer,
        responses={200: s.LoreOutputSerializer, **BAD_INPUT, **PRECONDITION_ERRORS},
        parameters=[IF_MATCH, ETAG],
    ),
    destroy=extend_schema(
        tags=TAGS, responses={204: None, **PRECONDITION_ERRORS}, parameters=[IF_MATCH]
    ),
)
class LoreViewSet(ByIdViewSet):
    """Lore entries by id; filter by world, group, active flag and text."""

    model = LoreEntry
    writes = Writes(
        "entry",
        services.lore_entry_create,
        services.lore_entry_update,
        services.lore_entry_delete,
        services.lore_entry_restore,
    )

    def get_queryset(self) -> QuerySet[LoreEntry]:
        return LoreEntry.objects.select_related("world").order_by("-priority", "id")

    def render(self, entry: LoreEntry, status_code: int = status.HTTP_200_OK) -> Response:
        return with_etag(s.LoreOutputSerializer(entry).data, etag(entry), status_code)

    def parse(
        self, request: Request, current: LoreEntry | None, *, partial: bool = False
    ) -> dict[str, Any]:
        body = s.LoreInputSerializer(data=request.data, partial=partial)
        body.is_valid(raise_exception=True)
        data = body.service_fields()
        if "world" in data:
            data["world"] = _world(data["world"])
        return data

    def list(self, request: Request) -> Response:
        # A plain dict, not the QueryDict: DRF reads a blank query value as "not given".
        data = validated(s.LoreFilterSerializer, request.query_params.dict())
        found = selectors.lore_list(
            world=data.get("world"),
            every_world=bool(data.get("every_world")),
            group=data.get("group"),
            active=data.get("active"),
            search=data.get("search"),
        )
        page = self.paginate_queryset(found)
        return self.get_paginated_response(s.LoreOutputSerializer(page, many=True).data)

    @extend_schema(tags=TAGS, responses=s.LoreHistoryPageSerializer, parameters=PAGE_PARAMETERS)
    @action(detail=True, methods=["get"])
    def history(self, request: Request, pk: str) -> Response:
        entry = get_object_or_404(LoreEntry, pk=pk)
        records = entry.history.select_related("history_user", "world").order_by("-history_id")  # type: ignore[attr-defined]
        page = self.paginate_queryset(records)
        return self.get_paginated_response(s.LoreRevisionSerializer(page, many=True).data)

    @restore_schema(
        TAGS, s.LoreRestoreSerializer, s.LoreOutputSerializer, {**BAD_INPUT, **PRECONDITION_ERRORS}
    )
    @action(detail=True, methods=["post"])
    def restore(self, request: Request, pk: str) -> Response:
        return self.restore_to(request, pk, s.LoreRestoreSerializer)


class LoreTestView(APIView):
    """Which entries a text triggers in a world, and why, without assembling."""

    permission_classes = [CanRead]

    @extend_schema(
        tags=TAGS,
        operation_id="lore_test",
        request=s.LoreTestInputSerializer,
        responses={200: s.LoreTestOutputSerializer, **BAD_INPUT},
        summary="Which lore entries a text triggers, and why",
    )
    def post(self, request: Request) -> Response:
        body = validated(s.LoreTestInputSerializer, request.data)
        world = _world(body["world"])
        slug = world.slug if world is not None else None
        try:
            activations = selectors.lore_test(slug, body["text"])
        except LoreError as error:
            raise ValidationError({error.field: [str(error)]}) from None
        return Response({"world": slug, "entries": [a.to_dict() for a in activations]})


class LoreImportView(RenderBeforeCommit):
    """Import a SillyTavern World Info file into a world."""

    permission_classes = [CanWrite]
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        tags=TAGS,
        operation_id="lore_import",
        request={"multipart/form-data": s.LoreImportInputSerializer},
        responses={
            200: OpenApiResponse(
                s.LoreImportReportSerializer,
                description="What each entry of the file became (or would, with dry_run).",
            ),
            **BAD_INPUT,
            403: OpenApiResponse(ClientErrorResponseSerializer, description="Not an author."),
        },
        summary="Import a SillyTavern World Info file into a world",
    )
    def post(self, request: Request) -> Response:
        body = validated(s.LoreImportInputSerializer, request.data)
        world = _world(body["world"])
        assert world is not None
        data = worldinfo.read(body["file"].read())
        report = services.lorebook_import(
            actor=actor_of(request), world=world, data=data, dry_run=body["dry_run"]
        )
        return Response(report.to_dict())


class LoreExportView(APIView):
    """A world's own lore entries as a SillyTavern World Info file."""

    permission_classes = [CanRead]

    @extend_schema(
        tags=TAGS,
        operation_id="lore_export",
        parameters=[s.LoreExportFilterSerializer],
        responses={
            (200, "application/json"): OpenApiResponse(
                {"type": "object", "properties": {"entries": {"type": "object"}}},
                description="A World Info file: `entries` by uid.",
            ),
            **BAD_INPUT,
        },
        summary="Export a world's lore as a SillyTavern World Info file",
    )
    def get(self, request: Request) -> Response:
        query = validated(s.LoreExportFilterSerializer, request.query_params.dict())
        world = _world(query["world"])
        assert world is not None
        rows = LoreEntry.objects.filter(world=world).order_by("id")
        response = Response(worldinfo.export(rows))
        response["Content-Disposition"] = f'attachment; filename="{world.slug}-lore.json"'
        return response
