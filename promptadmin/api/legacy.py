"""Legacy imports and the review of deprecated segments (admins and ``admin`` keys only).

Every write calls one service in ``promptadmin.content.services`` (legacy_import,
deprecated), as the studio and the management commands do, and commits only once its
answer is rendered (``RenderBeforeCommit``): a client that sees an error can retry.
"""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, PolymorphicProxySerializer, extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from promptadmin.api.authentication import actor_of
from promptadmin.api.content import SegmentViewSet
from promptadmin.api.errors import ClientErrorResponseSerializer, ValidationErrorResponseSerializer
from promptadmin.api.pagination import PageNumberPagination
from promptadmin.api.permissions import CanMigrate
from promptadmin.api.preconditions import etag, with_etag
from promptadmin.api.responses import RenderBeforeCommit
from promptadmin.api.serializers import legacy as s
from promptadmin.api.serializers.content import SegmentOutputSerializer
from promptadmin.content.legacy import format_from_name
from promptadmin.content.models import DEPRECATED_SCOPES, Segment
from promptadmin.content.services import deprecated, legacy_import

TAGS = ["deprecated content"]
ERRORS = {
    400: ValidationErrorResponseSerializer,
    403: OpenApiResponse(ClientErrorResponseSerializer, description="Not an admin or admin key."),
}


class ImportView(RenderBeforeCommit):
    """Import an export of a legacy ``prompt_segments`` table (all or nothing)."""

    permission_classes = [CanMigrate]
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        tags=TAGS,
        request={"multipart/form-data": s.ImportInputSerializer},
        responses={
            200: OpenApiResponse(s.ImportReportSerializer, description="A dry run's report."),
            201: OpenApiResponse(s.ImportReportSerializer, description="Imported."),
            400: OpenApiResponse(
                PolymorphicProxySerializer(
                    component_name="ImportRefused",
                    serializers=[s.ImportReportSerializer, ValidationErrorResponseSerializer],
                    resource_type_field_name=None,
                ),
                description="An invalid row and skip_invalid false: the report, nothing "
                "written; or bad input in the error shape.",
            ),
            403: ERRORS[403],
        },
        summary="Import a legacy export",
    )
    def post(self, request: Request) -> Response:
        body = s.ImportInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        upload = body.validated_data["file"]
        fmt = body.validated_data.get("format") or format_from_name(upload.name or "")
        if fmt is None:
            raise ValidationError(
                {"format": ["Cannot tell the format from the file name: give json or csv."]}
            )
        report = legacy_import.segments_import(
            actor=actor_of(request),
            data=upload.read(),
            fmt=fmt,
            refs=body.validated_data.get("refs"),
            dry_run=body.validated_data["dry_run"],
            skip_invalid=body.validated_data["skip_invalid"],
        )
        if report.refused:
            code = status.HTTP_400_BAD_REQUEST
        elif report.dry_run:
            code = status.HTTP_200_OK
        else:
            code = status.HTTP_201_CREATED
        return Response(s.ImportReportSerializer(report.as_dict()).data, status=code)


def _render(segment: Segment, code: int = status.HTTP_200_OK) -> Response:
    context = {"suggestions": deprecated.suggestions([segment])}
    return Response(s.DeprecatedSegmentSerializer(segment, context=context).data, status=code)


def _deprecated(pk: str) -> Segment:
    return get_object_or_404(Segment, pk=pk, scope__in=DEPRECATED_SCOPES)


class DeprecatedListView(APIView):
    """Every deprecated-scope segment, filtered by old scope, review status and text."""

    permission_classes = [CanMigrate]
    pagination_class = PageNumberPagination

    @extend_schema(
        tags=TAGS,
        parameters=[s.DeprecatedFilterSerializer],
        responses={200: s.DeprecatedPageSerializer, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        filters = s.DeprecatedFilterSerializer(data=request.query_params.dict())
        filters.is_valid(raise_exception=True)
        paginator = self.pagination_class()
        rows = paginator.paginate_queryset(
            deprecated.deprecated_segments(**filters.validated_data), request, view=self
        )
        context = {"suggestions": deprecated.suggestions(rows or [])}
        data = s.DeprecatedSegmentSerializer(rows, many=True, context=context).data
        return paginator.get_paginated_response(data)


class CopyView(RenderBeforeCommit):
    permission_classes = [CanMigrate]

    @extend_schema(
        tags=TAGS,
        request=s.CopyInputSerializer,
        responses={201: SegmentOutputSerializer, **ERRORS},
        summary="Copy the text to an allowed scope (a new segment linked back)",
    )
    def post(self, request: Request, pk: str) -> Response:
        source = _deprecated(pk)
        body = s.CopyInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        data["ref"] = SegmentViewSet._ref(data["scope"], data["ref"])
        copy = deprecated.deprecated_copy(actor=actor_of(request), segment=source, **data)
        out = SegmentOutputSerializer(copy).data
        return with_etag(out, etag(copy), status.HTTP_201_CREATED)


class DismissView(RenderBeforeCommit):
    permission_classes = [CanMigrate]

    @extend_schema(
        tags=TAGS,
        request=s.DismissInputSerializer,
        responses={200: s.DeprecatedSegmentSerializer, **ERRORS},
        summary="Dismiss with a reason (nothing is deleted)",
    )
    def post(self, request: Request, pk: str) -> Response:
        source = _deprecated(pk)
        body = s.DismissInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return _render(
            deprecated.deprecated_dismiss(
                actor=actor_of(request), segment=source, reason=body.validated_data["reason"]
            )
        )


class UndoView(RenderBeforeCommit):
    permission_classes = [CanMigrate]

    @extend_schema(
        tags=TAGS,
        request=None,
        responses={200: s.DeprecatedSegmentSerializer, **ERRORS},
        summary="Put a copied or dismissed segment back to pending (copies are deactivated)",
    )
    def post(self, request: Request, pk: str) -> Response:
        source = _deprecated(pk)
        return _render(deprecated.deprecated_undo(actor=actor_of(request), segment=source))


class BulkView(RenderBeforeCommit):
    permission_classes = [CanMigrate]
    parser_classes = [JSONParser]

    @extend_schema(
        tags=TAGS,
        request=s.BulkInputSerializer,
        responses={200: s.BulkOutputSerializer, **ERRORS},
        summary="Copy, dismiss or undo many; rows the action does not apply to are skipped",
    )
    def post(self, request: Request) -> Response:
        body = s.BulkInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data: dict[str, Any] = dict(body.validated_data)
        action = data.pop("action")
        if action == deprecated.Action.DISMISS and not data.get("reason", "").strip():
            raise ValidationError({"reason": ["Say why these segments are dismissed."]})
        if "ref" in data and "scope" not in data:
            raise ValidationError({"scope": ["Give the scope the ref belongs to."]})
        if "scope" in data:
            data["ref"] = SegmentViewSet._ref(data["scope"], data.get("ref"))
        result = deprecated.deprecated_bulk(actor=actor_of(request), action=action, **data)
        if action == deprecated.Action.COPY:
            out = SegmentOutputSerializer(result.done, many=True).data
        else:
            context = {"suggestions": deprecated.suggestions(result.done)}
            out = s.DeprecatedSegmentSerializer(result.done, many=True, context=context).data
        skipped = [{"id": row.id, "reason": row.reason} for row in result.skipped]
        return Response({"action": action, "count": len(out), "results": out, "skipped": skipped})
