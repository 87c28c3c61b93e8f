"""Legacy imports and the review of deprecated segments (admins and ``admin`` keys only).

Every write calls one service in ``promptadmin.content.services`` (import_jobs,
deprecated), as the studio and the management commands do, and commits only once its
answer is rendered (``RenderBeforeCommit``): a client that sees an error can retry.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema
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
from promptadmin.api.serializers.common import validated
from promptadmin.api.serializers.content import SegmentOutputSerializer
from promptadmin.content.legacy import format_from_name
from promptadmin.content.models import DEPRECATED_SCOPES, ImportJob, Segment
from promptadmin.content.services import deprecated, import_jobs
from promptadmin.core.uploads import announced_too_large, limit_upload

TAGS = ["deprecated content"]
ERRORS = {
    400: ValidationErrorResponseSerializer,
    403: OpenApiResponse(ClientErrorResponseSerializer, description="Not an admin or admin key."),
}


class ImportView(RenderBeforeCommit):
    """Upload an export of a legacy ``prompt_segments`` table, imported in the background."""

    permission_classes = [CanMigrate]
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        tags=TAGS,
        request={"multipart/form-data": s.ImportInputSerializer},
        responses={
            202: OpenApiResponse(
                s.ImportAcceptedSerializer,
                description="Stored and queued: follow `url` (`GET /api/v1/imports/{id}`) "
                "for the progress and, once done, the report (all or nothing, as ever).",
            ),
            400: ERRORS[400],
            403: ERRORS[403],
            413: OpenApiResponse(
                ClientErrorResponseSerializer,
                description="`too_large`: the file is over `IMPORT_MAX_BYTES` (200 MB by "
                "default); refused before it is read when Content-Length says so.",
            ),
        },
        summary="Import a legacy export (as a job)",
        description="Until imports ran as jobs this answered the report itself (200, 201, or "
        "400 with the report); the report is now the job's, and any import, a dry run "
        "included, answers 202 at once.",
    )
    def post(self, request: Request) -> Response:
        limit = settings.IMPORT_MAX_BYTES
        if announced_too_large(request._request, limit):
            return _too_large(limit)
        handler = limit_upload(request._request, "file", limit)
        body = s.ImportInputSerializer(data=request.data)
        if handler.exceeded:
            return _too_large(limit)
        body.is_valid(raise_exception=True)
        upload = body.validated_data["file"]
        fmt = body.validated_data.get("format") or format_from_name(upload.name or "")
        if fmt is None:
            raise ValidationError(
                {"format": ["Cannot tell the format from the file name: give json or csv."]}
            )
        try:
            job = import_jobs.import_job_create(
                actor=actor_of(request),
                upload=upload,
                name=upload.name or "",
                fmt=fmt,
                refs=body.validated_data.get("refs"),
                dry_run=body.validated_data["dry_run"],
                skip_invalid=body.validated_data["skip_invalid"],
            )
        except DjangoValidationError as exc:
            if exc.error_dict and any(
                e.code == "too_large" for errors in exc.error_dict.values() for e in errors
            ):
                return _too_large(limit)
            raise
        url = request.build_absolute_uri(reverse("api-import", args=[job.pk]))
        data = {"id": job.pk, "status": job.status, "url": url}
        return Response(data, status=status.HTTP_202_ACCEPTED, headers={"Location": url})


def _too_large(limit: int) -> Response:
    detail = f"The file is over {limit} bytes, the most an import takes (IMPORT_MAX_BYTES)."
    error = {"code": "too_large", "detail": detail, "attr": "file"}
    return Response(
        {"type": "client_error", "errors": [error]},
        status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
    )


class ImportJobView(APIView):
    """An import job: its status, progress and, once done, its report."""

    permission_classes = [CanMigrate]

    @extend_schema(
        tags=TAGS,
        responses={
            200: s.ImportJobSerializer,
            403: ERRORS[403],
            404: OpenApiResponse(ClientErrorResponseSerializer, description="No such job."),
        },
        summary="An import's status, progress and report",
    )
    def get(self, request: Request, pk: int) -> Response:
        job = get_object_or_404(ImportJob, pk=pk)
        url = request.build_absolute_uri(reverse("api-import", args=[job.pk]))
        return Response(s.ImportJobSerializer(_job(job, url)).data)


def _job(job: ImportJob, url: str) -> dict[str, Any]:
    return {
        "id": job.pk,
        "status": job.status,
        "url": url,
        "file": job.file_name,
        "format": job.format,
        "dry_run": job.dry_run,
        "skip_invalid": job.skip_invalid,
        "progress": import_jobs.progress_of(job),
        "report": job.report,
        "error": job.error or None,
        "created": job.created_at,
        "started": job.started_at,
        "finished": job.finished_at,
    }


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
        filters = validated(s.DeprecatedFilterSerializer, request.query_params.dict())
        paginator = self.pagination_class()
        rows = paginator.paginate_queryset(
            deprecated.deprecated_segments(**filters), request, view=self
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
        data = validated(s.CopyInputSerializer, request.data)
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
        body = validated(s.DismissInputSerializer, request.data)
        return _render(
            deprecated.deprecated_dismiss(
                actor=actor_of(request), segment=source, reason=body["reason"]
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
        data = validated(s.BulkInputSerializer, request.data)
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
