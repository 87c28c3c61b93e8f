"""Content endpoints: worlds, rulesets, NPCs, entries (by slug) and segments (by id).

Reads send a strong ETag; PUT, PATCH and DELETE need it back in If-Match (see
:mod:`promptadmin.api.preconditions`). Every write calls one service.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.db.models import Prefetch, QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from promptadmin.api.authentication import actor_of
from promptadmin.api.errors import ClientErrorResponseSerializer
from promptadmin.api.pagination import MAX_PAGE_SIZE
from promptadmin.api.permissions import ReadOrWrite
from promptadmin.api.preconditions import (
    ETAG,
    IF_MATCH,
    IF_MATCH_OPTIONAL,
    PRECONDITION_ERRORS,
    etag,
    expected_revision,
    with_etag,
)
from promptadmin.api.responses import RenderBeforeCommit
from promptadmin.api.serializers import content as s
from promptadmin.content.kinds import KINDS
from promptadmin.content.models import (
    NPC,
    SCOPE_REF_FIELD,
    Entry,
    EntryNpc,
    EntryRuleset,
    Ruleset,
    Segment,
    World,
)
from promptadmin.content.search import segment_search
from promptadmin.content.services import catalog, segments

SLUG_IN_PATH = r"[a-z0-9]+(?:[-_][a-z0-9]+)*"
# Ids beyond a 64-bit integer cannot exist; matching them would only reach the database.
ID_IN_PATH = r"[0-9]{1,18}"

# What a list's pagination documents by itself, spelt out for a paginated action.
PAGE_PARAMETERS = [
    OpenApiParameter(
        "page", {"type": "integer", "minimum": 1}, description="A page number within the results."
    ),
    OpenApiParameter(
        "page_size",
        {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE},
        description=f"Results per page: 1 to {MAX_PAGE_SIZE} (default 50).",
    ),
]


def _error(description: str) -> OpenApiResponse:
    return OpenApiResponse(ClientErrorResponseSerializer, description=description)


IN_USE = {409: _error("Content still points at the object; the error says what.")}


def _by_slug(model: type[Any], slug: str, field: str) -> Any:
    obj = model.objects.filter(slug=slug).first()
    if obj is None:
        raise ValidationError({field: [f"No {model._meta.verbose_name} with slug '{slug}'."]})
    return obj


def _rulesets(slugs: list[str]) -> list[Ruleset]:
    found = {r.slug: r for r in Ruleset.objects.filter(slug__in=slugs)}
    unknown = [slug for slug in slugs if slug not in found]
    if unknown:
        raise ValidationError({"rulesets": [f"Unknown ruleset slugs: {', '.join(unknown)}."]})
    return [found[slug] for slug in slugs]


def _cast(rows: list[dict[str, Any]]) -> list[catalog.CastMember]:
    # A PATCH validates partially, nested rows included: each row still needs its NPC.
    for index, row in enumerate(rows):
        if "npc" not in row:
            raise ValidationError({"cast": [f"Row {index + 1} names no NPC: give its slug."]})
    slugs = [row["npc"] for row in rows]
    found = {npc.slug: npc for npc in NPC.objects.filter(slug__in=slugs)}
    unknown = [slug for slug in slugs if slug not in found]
    if unknown:
        raise ValidationError({"cast": [f"Unknown NPC slugs: {', '.join(unknown)}."]})
    return [catalog.CastMember(npc=found[row["npc"]], tier=row.get("tier", 0)) for row in rows]


def catalog_schema(name: str, input_: type, output: type) -> Any:
    """The OpenAPI description of one catalog resource's six operations."""
    tags = [name]
    return extend_schema_view(
        list=extend_schema(tags=tags, responses=output(many=True)),
        retrieve=extend_schema(tags=tags, responses=output, parameters=[ETAG]),
        create=extend_schema(
            tags=tags,
            request=input_,
            responses={201: output, 409: _error("Created at the same time by someone else.")},
            parameters=[ETAG],
        ),
        update=extend_schema(
            tags=tags,
            request=input_,
            responses={200: output, **PRECONDITION_ERRORS},
            parameters=[IF_MATCH, ETAG],
        ),
        partial_update=extend_schema(
            tags=tags,
            request=input_,
            responses={200: output, **PRECONDITION_ERRORS},
            parameters=[IF_MATCH, ETAG],
        ),
        destroy=extend_schema(
            tags=tags,
            responses={204: None, **PRECONDITION_ERRORS, **IN_USE},
            parameters=[IF_MATCH],
        ),
    )


class CatalogViewSet(RenderBeforeCommit, viewsets.GenericViewSet):
    """Worlds, rulesets and NPCs: ``slug``, ``name``, ``description``."""

    model: ClassVar[type[World | Ruleset | NPC]]
    input_serializer: ClassVar[type[s.CatalogInputSerializer]] = s.CatalogInputSerializer
    output_serializer: ClassVar[type[s.CatalogOutputSerializer]] = s.CatalogOutputSerializer
    permission_classes = [ReadOrWrite]
    lookup_field = "slug"
    lookup_value_regex = SLUG_IN_PATH

    def get_queryset(self) -> QuerySet[Any]:
        return self.model.objects.order_by("slug")

    def render(self, obj: Any, status_code: int = status.HTTP_200_OK) -> Response:
        return with_etag(self.output_serializer(obj).data, etag(obj), status_code)

    def parse(self, request: Request, *, partial: bool = False) -> dict[str, Any]:
        serializer = self.input_serializer(data=request.data, partial=partial)
        serializer.is_valid(raise_exception=True)
        return dict(serializer.validated_data)

    def list(self, request: Request) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(self.output_serializer(page, many=True).data)

    def retrieve(self, request: Request, slug: str) -> Response:
        return self.render(get_object_or_404(self.get_queryset(), slug=slug))

    def create(self, request: Request) -> Response:
        data = self.parse(request)
        obj = catalog.catalog_create(actor=actor_of(request), model=self.model, **data)
        return self.render(obj, status.HTTP_201_CREATED)

    def update(self, request: Request, slug: str) -> Response:
        return self._change(request, slug, partial=False)

    def partial_update(self, request: Request, slug: str) -> Response:
        return self._change(request, slug, partial=True)

    def _change(self, request: Request, slug: str, *, partial: bool) -> Response:
        data = self.parse(request, partial=partial)
        obj = get_object_or_404(self.model, slug=slug)
        expected = expected_revision(request, obj)
        obj = catalog.catalog_update(
            actor=actor_of(request), obj=obj, expected_revision=expected, **data
        )
        return self.render(obj)

    def destroy(self, request: Request, slug: str) -> Response:
        obj = get_object_or_404(self.model, slug=slug)
        expected = expected_revision(request, obj)
        catalog.catalog_delete(actor=actor_of(request), obj=obj, expected_revision=expected)
        return Response(status=status.HTTP_204_NO_CONTENT)


@catalog_schema("worlds", s.CatalogInputSerializer, s.CatalogOutputSerializer)
class WorldViewSet(CatalogViewSet):
    model = World


@catalog_schema("rulesets", s.CatalogInputSerializer, s.CatalogOutputSerializer)
class RulesetViewSet(CatalogViewSet):
    model = Ruleset


@catalog_schema("npcs", s.CatalogInputSerializer, s.CatalogOutputSerializer)
class NpcViewSet(CatalogViewSet):
    model = NPC


@catalog_schema("entries", s.EntryInputSerializer, s.EntryOutputSerializer)
class EntryViewSet(CatalogViewSet):
    """Entries also have a ``world``, ordered ``rulesets`` (slugs) and a ``cast``."""

    model = Entry
    input_serializer = s.EntryInputSerializer
    output_serializer = s.EntryOutputSerializer

    def get_queryset(self) -> QuerySet[Any]:
        links = EntryRuleset.objects.select_related("ruleset").order_by("position")
        cast = EntryNpc.objects.select_related("npc").order_by("position")
        return (
            Entry.objects.select_related("world")
            .prefetch_related(
                Prefetch("ruleset_links", queryset=links), Prefetch("cast_links", queryset=cast)
            )
            .order_by("slug")
        )

    def parse(self, request: Request, *, partial: bool = False) -> dict[str, Any]:
        data = super().parse(request, partial=partial)
        if "world" in data:
            data["world"] = _by_slug(World, data["world"], "world")
        if "rulesets" in data:
            data["rulesets"] = _rulesets(data["rulesets"])
        if "cast" in data:
            data["cast"] = _cast(data["cast"])
        return data

    def render(self, obj: Any, status_code: int = status.HTTP_200_OK) -> Response:
        # Re-read with the world and rulesets the output names.
        return super().render(self.get_queryset().get(pk=obj.pk), status_code)

    def create(self, request: Request) -> Response:
        entry = catalog.entry_create(actor=actor_of(request), **self.parse(request))
        return self.render(entry, status.HTTP_201_CREATED)

    def _change(self, request: Request, slug: str, *, partial: bool) -> Response:
        data = self.parse(request, partial=partial)
        entry = get_object_or_404(Entry, slug=slug)
        expected = expected_revision(request, entry)
        entry = catalog.entry_update(
            actor=actor_of(request), entry=entry, expected_revision=expected, **data
        )
        return self.render(entry)


SEGMENT_TAGS = ["segments"]


@extend_schema_view(
    list=extend_schema(
        tags=SEGMENT_TAGS,
        parameters=[s.SegmentFilterSerializer],
        responses=s.SegmentOutputSerializer(many=True),
    ),
    retrieve=extend_schema(
        tags=SEGMENT_TAGS, responses=s.SegmentOutputSerializer, parameters=[ETAG]
    ),
    create=extend_schema(
        tags=SEGMENT_TAGS,
        request=s.SegmentInputSerializer,
        responses={201: s.SegmentOutputSerializer},
        parameters=[ETAG],
    ),
    update=extend_schema(
        tags=SEGMENT_TAGS,
        request=s.SegmentInputSerializer,
        responses={200: s.SegmentOutputSerializer, **PRECONDITION_ERRORS},
        parameters=[IF_MATCH, ETAG],
    ),
    partial_update=extend_schema(
        tags=SEGMENT_TAGS,
        request=s.SegmentInputSerializer,
        responses={200: s.SegmentOutputSerializer, **PRECONDITION_ERRORS},
        parameters=[IF_MATCH, ETAG],
    ),
    destroy=extend_schema(
        tags=SEGMENT_TAGS,
        responses={204: None, **PRECONDITION_ERRORS},
        parameters=[IF_MATCH],
    ),
)
class SegmentViewSet(RenderBeforeCommit, viewsets.GenericViewSet):
    """Segments by id; filter by scope, owner, active flag and text."""

    permission_classes = [ReadOrWrite]
    lookup_value_regex = ID_IN_PATH

    def get_queryset(self) -> QuerySet[Segment]:
        return Segment.objects.select_related(*KINDS).order_by("scope", "sort_order", "id")

    def render(self, segment: Segment, status_code: int = status.HTTP_200_OK) -> Response:
        data = s.SegmentOutputSerializer(segment, context=self.get_serializer_context()).data
        return with_etag(data, etag(segment), status_code)

    def parse(self, request: Request, scope: str, *, partial: bool = False) -> dict[str, Any]:
        serializer = s.SegmentInputSerializer(data=request.data, partial=partial)
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        if "ref" in data:
            data["ref"] = self._ref(data.get("scope", scope), data["ref"])
        return data

    @staticmethod
    def _ref(scope: str, slug: str | None) -> Any:
        if scope not in SCOPE_REF_FIELD:
            return None  # an unknown or deprecated scope: the service says which are allowed
        field = SCOPE_REF_FIELD[scope]
        if field is None:
            if slug is not None:
                raise ValidationError({"ref": [f"A '{scope}' segment belongs to no object: null."]})
            return None
        if slug is None:
            return None  # the service says what the scope needs
        return _by_slug(KINDS[field].model, slug, "ref")

    def list(self, request: Request) -> Response:
        # A plain dict, not the QueryDict: DRF reads a blank query value as "not given".
        filters = s.SegmentFilterSerializer(data=request.query_params.dict())
        filters.is_valid(raise_exception=True)
        page = self.paginate_queryset(self._filtered(filters.validated_data))
        data = s.SegmentOutputSerializer(page, many=True, context=self.get_serializer_context())
        return self.get_paginated_response(data.data)

    def _filtered(self, filters: dict[str, Any]) -> QuerySet[Segment]:
        queryset = self.get_queryset()
        if filters.get("scope"):
            queryset = queryset.filter(scope=filters["scope"])
        for kind in KINDS:
            if filters.get(kind):
                queryset = queryset.filter(**{f"{kind}__slug": filters[kind]})
        if filters.get("active") is not None:
            queryset = queryset.filter(active=filters["active"])
        if filters.get("search"):
            # The studio's search: every word a prefix, looked up in the full-text index.
            queryset = segment_search(queryset, filters["search"])
        return queryset

    def retrieve(self, request: Request, pk: str) -> Response:
        return self.render(get_object_or_404(self.get_queryset(), pk=pk))

    def create(self, request: Request) -> Response:
        data = self.parse(request, scope="")
        segment = segments.segment_create(actor=actor_of(request), **data)
        return self.render(segment, status.HTTP_201_CREATED)

    def update(self, request: Request, pk: str) -> Response:
        return self._change(request, pk, partial=False)

    def partial_update(self, request: Request, pk: str) -> Response:
        return self._change(request, pk, partial=True)

    def _change(self, request: Request, pk: str, *, partial: bool) -> Response:
        segment = get_object_or_404(Segment, pk=pk)
        data = self.parse(request, segment.scope, partial=partial)
        expected = expected_revision(request, segment)
        segment = segments.segment_update(
            actor=actor_of(request), segment=segment, expected_revision=expected, **data
        )
        return self.render(segment)

    def destroy(self, request: Request, pk: str) -> Response:
        segment = get_object_or_404(Segment, pk=pk)
        expected = expected_revision(request, segment)
        segments.segment_delete(
            actor=actor_of(request), segment=segment, expected_revision=expected
        )
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        tags=SEGMENT_TAGS,
        responses=s.SegmentHistoryPageSerializer,
        parameters=PAGE_PARAMETERS,
    )
    @action(detail=True, methods=["get"])
    def history(self, request: Request, pk: str) -> Response:
        segment = get_object_or_404(Segment, pk=pk)
        records = segment.history.select_related("history_user", *KINDS).order_by("-history_id")
        page = self.paginate_queryset(records)
        return self.get_paginated_response(s.SegmentRevisionSerializer(page, many=True).data)

    @extend_schema(
        tags=SEGMENT_TAGS,
        request=s.SegmentRestoreSerializer,
        responses={200: s.SegmentOutputSerializer, **PRECONDITION_ERRORS},
        parameters=[IF_MATCH_OPTIONAL, ETAG],
        summary="Bring back a revision's content and settings, as a new revision",
    )
    @action(detail=True, methods=["post"])
    def restore(self, request: Request, pk: str) -> Response:
        segment = get_object_or_404(Segment, pk=pk)
        body = s.SegmentRestoreSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        expected = expected_revision(request, segment) if "If-Match" in request.headers else None
        segment = segments.segment_restore(
            actor=actor_of(request),
            segment=segment,
            revision=body.validated_data["revision"],
            expected_revision=expected,
        )
        return self.render(segment)
