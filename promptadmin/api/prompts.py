"""Registered prompts: fetch by label or version, render, create versions, move labels;
interfaces, adapter instructions and the format lint.

Reads (fetch, render, lint) need the read scope; changes need a write key or the author
role. Every change calls one service of :mod:`promptadmin.prompts.services`, and commits
only once its answer is rendered (:class:`RenderBeforeCommit`).
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from assembler.format_lint import lint_prompt
from assembler.request import RenderParams, parse_render_params
from promptadmin.api.authentication import actor_of
from promptadmin.api.errors import ClientErrorResponseSerializer
from promptadmin.api.hotpath import Answer, HotView
from promptadmin.api.permissions import CanRead, ReadOrWrite
from promptadmin.api.preconditions import (
    ETAG,
    IF_MATCH,
    PRECONDITION_ERRORS,
    expected_updated_at,
    none_match,
    updated_at_etag,
    with_etag,
)
from promptadmin.api.responses import RenderBeforeCommit
from promptadmin.api.serializers import prompts as s
from promptadmin.api.serializers.common import validated
from promptadmin.prompts.models import (
    LABEL_HELP,
    LABEL_RE,
    LATEST,
    NAME_HELP,
    NAME_RE,
    AdapterInstruction,
    Interface,
    LabelEvent,
    Prompt,
)
from promptadmin.prompts.selectors import (
    ResolvedPrompt,
    fetch_and_render,
    fetch_prompt,
    lint_resolved,
    prompts_with_labels,
)
from promptadmin.prompts.services import interfaces as interface_services
from promptadmin.prompts.services import prompts as prompt_services

NAME_IN_PATH = r"[a-z0-9][a-z0-9_.-]{0,63}"
TAGS = ["prompts"]


def _error(description: str) -> OpenApiResponse:
    return OpenApiResponse(ClientErrorResponseSerializer, description=description)


NOT_FOUND = {404: _error("No such prompt, label, version or object; the error names it.")}
PROTECTED = (
    "Setting, moving or removing a protected label (`PROTECTED_PROMPT_LABELS`, by default "
    "`production`: what a game fetches when it names no label) needs the admin role or an "
    "admin key; anyone else gets 403 and nothing changes."
)
TASK_TYPE = OpenApiParameter(
    "task_type",
    OpenApiTypes.STR,
    description="The task type; empty or absent: the default prompt of (component, agent).",
)


def query_name(request: Request, field: str) -> str | None:
    """A component, agent or task type from the query: None when absent or empty, 400
    when it could not name anything."""
    return param_name(request.query_params, field)


def param_name(params: Any, field: str) -> str | None:
    """:func:`query_name` from query parameters (DRF's or Django's)."""
    value = params.get(field, "")
    if value and not NAME_RE.fullmatch(value):
        raise ValidationError({field: [NAME_HELP]})
    return value or None


def query_task_type(request: Request, data: dict[str, Any] | None = None) -> str | None:
    """The task type from the body (``null``/``""``: default) or else the query."""
    if data is not None and data.get("task_type") is not None:
        value = data["task_type"]
        if value and (not isinstance(value, str) or not NAME_RE.fullmatch(value)):
            raise ValidationError({"task_type": [NAME_HELP]})
        return value or None
    return query_name(request, "task_type")


def prompt_at(component: str, agent: str, task_type: str | None) -> Prompt:
    """The prompt at exactly this address (no fallback), or 404 naming it."""
    prompt = Prompt.objects.filter(
        component=component, agent=agent, task_type=task_type or ""
    ).first()
    if prompt is None:
        raise NotFound(
            f"No prompt for component '{component}', agent '{agent}' and "
            f"{'task type ' + repr(task_type) if task_type else 'the default task type'}."
        )
    return prompt


def selection(params: Any) -> tuple[str | None, int | None]:
    """``label`` or ``version`` from query parameters or a parsed body (400 when both or
    when malformed)."""
    label = params.get("label")
    version = params.get("version")
    if label is not None and version is not None:
        raise ValidationError({"version": ["Give a label or a version, not both."]})
    if label is not None and not LABEL_RE.fullmatch(str(label)):
        raise ValidationError({"label": [LABEL_HELP]})
    if version is not None and not isinstance(version, int):
        if not (isinstance(version, str) and version.isdigit() and len(version) <= 9):
            raise ValidationError({"version": ["Expected a version number (1 or more)."]})
        version = int(version)
    if version is not None and version < 1:
        raise ValidationError({"version": ["Expected a version number (1 or more)."]})
    return label, version


def fetched(resolved: ResolvedPrompt, if_none_match: str) -> Answer:
    """The prompt with its strong ETag; 304 when the client already holds it (weak
    comparison, as RFC 9110 asks of If-None-Match)."""
    if none_match(if_none_match, resolved.etag):
        return Answer(None, status.HTTP_304_NOT_MODIFIED, {"ETag": resolved.etag})
    return Answer(resolved.to_dict(), headers={"ETag": resolved.etag})


class PromptListView(RenderBeforeCommit, generics.GenericAPIView):
    permission_classes = [ReadOrWrite]

    def get_queryset(self) -> QuerySet[Prompt]:
        prompts = prompts_with_labels()
        params = self.request.query_params
        for field in ("component", "agent"):
            value = query_name(self.request, field)
            if value:
                prompts = prompts.filter(**{field: value})
        if "task_type" in params:
            prompts = prompts.filter(task_type=query_name(self.request, "task_type") or "")
        label = params.get("label")
        if label and not LABEL_RE.fullmatch(label):
            raise ValidationError({"label": [LABEL_HELP]})
        if label == LATEST:
            # Never stored: every prompt with a version has it (as on the Langfuse list).
            prompts = prompts.filter(latest_version__isnull=False)
        elif label:
            prompts = prompts.filter(labels__name=label).distinct()
        return prompts

    @extend_schema(
        operation_id="prompts_list",
        tags=TAGS,
        parameters=[
            OpenApiParameter("component", OpenApiTypes.STR),
            OpenApiParameter("agent", OpenApiTypes.STR),
            OpenApiParameter("task_type", OpenApiTypes.STR, description="Empty: default prompts."),
            OpenApiParameter(
                "label",
                OpenApiTypes.STR,
                description="Prompts with this label; latest: every prompt with a version.",
            ),
        ],
        responses=s.PromptSummarySerializer(many=True),
        summary="List registered prompts with their labels",
    )
    def get(self, request: Request) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response([s.PromptSummarySerializer.of(p) for p in page or []])

    @extend_schema(
        operation_id="prompts_create",
        tags=TAGS,
        request=s.PromptCreateSerializer,
        responses={201: s.PromptSummarySerializer},
        summary="Create a prompt at (component, agent, task type or default)",
    )
    def post(self, request: Request) -> Response:
        data = validated(s.PromptCreateSerializer, request.data)
        data["task_type"] = data["task_type"] or None
        prompt = prompt_services.prompt_create(actor=actor_of(request), **data)
        return Response(s.PromptSummarySerializer.of(prompt), status=status.HTTP_201_CREATED)


class PromptFetchView(HotView):
    permission_classes = [CanRead]
    hot_method = "GET"
    hot_query = frozenset({"task_type", "label", "version"})

    @extend_schema(
        operation_id="prompts_fetch",
        tags=TAGS,
        parameters=[
            TASK_TYPE,
            OpenApiParameter("label", OpenApiTypes.STR, description="Default: production."),
            OpenApiParameter("version", OpenApiTypes.INT),
            OpenApiParameter("If-None-Match", OpenApiTypes.STR, OpenApiParameter.HEADER),
            ETAG,
        ],
        responses={200: s.FetchedPromptSerializer, 304: None, **NOT_FOUND},
        summary="Fetch a prompt version by label (default production) or version",
    )
    def get(self, request: Request, component: str, agent: str) -> Response:
        return self.hot(request, None, component=component, agent=agent).response()

    def hot(self, request: HttpRequest, data: Any, **kwargs: Any) -> Answer:
        params = request.GET  # DRF's query_params are these
        label, version = selection(params)
        resolved = fetch_prompt(
            component=kwargs["component"],
            agent=kwargs["agent"],
            task_type=param_name(params, "task_type"),
            label=label,
            version=version,
        )
        return fetched(resolved, request.headers.get("If-None-Match", ""))


class VersionCreateView(RenderBeforeCommit, APIView):
    permission_classes = [ReadOrWrite]

    @extend_schema(
        operation_id="prompts_versions_create",
        tags=TAGS,
        request=s.VersionCreateSerializer,
        responses={201: s.VersionCreatedSerializer, **NOT_FOUND},
        summary="Create the next version (optionally setting labels on it)",
        description=PROTECTED,
    )
    def post(self, request: Request, component: str, agent: str) -> Response:
        data = validated(s.VersionCreateSerializer, request.data)
        prompt = prompt_at(component, agent, data.pop("task_type") or None)
        version = prompt_services.prompt_version_create(
            actor=actor_of(request), prompt=prompt, **data
        )
        resolved = fetch_prompt(
            component=component,
            agent=agent,
            task_type=prompt.task_type_or_none,
            version=version.number,
        )
        findings = lint_resolved(resolved)
        body = {**resolved.to_dict(), "findings": [finding.to_dict() for finding in findings]}
        return Response(body, status=status.HTTP_201_CREATED, headers={"ETag": resolved.etag})


class LabelView(RenderBeforeCommit, APIView):
    permission_classes = [ReadOrWrite]

    @extend_schema(
        operation_id="prompts_labels_set",
        tags=TAGS,
        request=s.LabelSetSerializer,
        responses={200: s.LabelSerializer, **NOT_FOUND},
        summary="Set a label on a version, or move it there (audited)",
        description=PROTECTED,
    )
    def put(self, request: Request, component: str, agent: str, label: str) -> Response:
        body = request.data.dict() if hasattr(request.data, "dict") else request.data
        if not isinstance(body, dict):
            raise ValidationError({"non_field_errors": ["Expected a JSON object."]})
        # task_type and version may come in the query instead; any other field is refused.
        merged = dict(body)
        merged.setdefault("task_type", request.query_params.get("task_type") or None)
        if "version" in request.query_params:
            merged.setdefault("version", _int_or_raw(request.query_params["version"]))
        data = validated(s.LabelSetSerializer, merged)
        prompt = prompt_at(component, agent, data["task_type"] or None)
        row = prompt_services.prompt_label_set(
            actor=actor_of(request),
            prompt=prompt,
            name=label,
            version=data["version"],
        )
        return Response(s.LabelSerializer.of(row))

    @extend_schema(
        operation_id="prompts_labels_remove",
        tags=TAGS,
        parameters=[TASK_TYPE],
        responses={204: None, **NOT_FOUND},
        summary="Remove a label (audited)",
        description=PROTECTED,
    )
    def delete(self, request: Request, component: str, agent: str, label: str) -> Response:
        data = request.data if isinstance(request.data, dict) else {}
        prompt = prompt_at(component, agent, query_task_type(request, data))
        prompt_services.prompt_label_remove(actor=actor_of(request), prompt=prompt, name=label)
        return Response(status=status.HTTP_204_NO_CONTENT)


def _int_or_raw(value: str | None) -> Any:
    if value is not None and value.isdigit() and len(value) <= 9:
        return int(value)
    return value


class LabelHistoryView(generics.GenericAPIView):
    permission_classes = [CanRead]

    @extend_schema(
        operation_id="prompts_labels_history",
        tags=TAGS,
        parameters=[TASK_TYPE],
        responses={200: s.LabelEventSerializer(many=True), **NOT_FOUND},
        summary="Every label set, move and removal, newest first",
    )
    def get(self, request: Request, component: str, agent: str) -> Response:
        prompt = prompt_at(component, agent, query_task_type(request))
        events = LabelEvent.objects.filter(prompt=prompt).select_related("user")
        page = self.paginate_queryset(events)
        return self.get_paginated_response(
            [s.LabelEventSerializer.of(event) for event in page or []]
        )


class RenderView(HotView):
    permission_classes = [CanRead]

    @extend_schema(
        operation_id="prompts_render",
        tags=TAGS,
        request=s.RenderSerializer,
        responses={200: s.RenderedSerializer, **NOT_FOUND},
        summary="Render a version with variables and an interface's adapter instructions",
    )
    def post(self, request: Request, component: str, agent: str) -> Response:
        return Response(rendered(parse_render_params(request.data), component, agent))

    def hot(self, request: HttpRequest, data: Any, **kwargs: Any) -> Answer:
        return Answer(rendered(parse_render_params(data), **kwargs))


def rendered(params: RenderParams, component: str, agent: str) -> dict[str, Any]:
    """The body of a render of ``params``."""
    result = fetch_and_render(
        component=component,
        agent=agent,
        task_type=params.task_type or None,
        label=params.label,
        version=params.version,
        template=params.template,
        variables=params.variables,
        interface=params.interface,
        user_instructions=params.user_instructions,
        instruction_context=params.instruction_context,
    )
    resolved = result.resolved
    body: dict[str, Any] = {
        "version": resolved.version,
        "task_type_used": resolved.task_type_used,
    }
    if params.format == "text":
        body.update(system=result.system, user=result.user, tokens=result.tokens)
    else:
        body["messages"] = list(result.messages)
    body["unused_variables"] = list(result.unused_variables)
    body["findings"] = [finding.to_dict() for finding in result.findings]
    return body


class LintView(APIView):
    permission_classes = [CanRead]

    @extend_schema(
        operation_id="prompts_lint",
        tags=TAGS,
        request=s.LintSerializer,
        responses={200: s.LintResultSerializer, **NOT_FOUND},
        summary="Lint a template, a version's templates, a whole version, or a stored version",
    )
    def post(self, request: Request) -> Response:
        data = validated(s.LintSerializer, request.data)
        if "component" in data:
            resolved = fetch_prompt(
                component=data["component"],
                agent=data["agent"],
                task_type=data.get("task_type") or None,
                label=data.get("label"),
                version=data.get("version"),
            )
            findings = lint_resolved(resolved)
            return Response(
                {
                    "findings": [finding.to_dict() for finding in findings],
                    "version": resolved.version,
                    "task_type_used": resolved.task_type_used,
                }
            )
        findings = lint_prompt(
            syntax=data["syntax"],
            system=data["system"],
            user_templates=data["user_templates"],
            variables=data["variables"],
            expected_system=data["expected_system"],
        )
        return Response({"findings": [finding.to_dict() for finding in findings]})


# -- interfaces and adapter instructions ----------------------------------------------------


def _interface_answer(obj: Interface, status_code: int = status.HTTP_200_OK) -> Response:
    return with_etag(s.InterfaceOutputSerializer(obj).data, updated_at_etag(obj), status_code)


def _adapter_answer(obj: AdapterInstruction, status_code: int = status.HTTP_200_OK) -> Response:
    data = s.AdapterInstructionOutputSerializer(obj).data
    return with_etag(data, updated_at_etag(obj), status_code)


INTERFACES = ["interfaces"]


class InterfaceListView(RenderBeforeCommit, generics.GenericAPIView):
    permission_classes = [ReadOrWrite]
    queryset = Interface.objects.order_by("name")

    @extend_schema(
        operation_id="interfaces_list",
        tags=INTERFACES,
        responses=s.InterfaceOutputSerializer(many=True),
    )
    def get(self, request: Request) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(s.InterfaceOutputSerializer(page, many=True).data)

    @extend_schema(
        operation_id="interfaces_create",
        tags=INTERFACES,
        request=s.InterfaceSerializer,
        responses={201: s.InterfaceOutputSerializer},
        parameters=[ETAG],
    )
    def post(self, request: Request) -> Response:
        data = validated(s.InterfaceSerializer, request.data)
        obj = interface_services.interface_create(actor=actor_of(request), **data)
        return _interface_answer(obj, status.HTTP_201_CREATED)


class InterfaceDetailView(RenderBeforeCommit, APIView):
    permission_classes = [ReadOrWrite]

    @extend_schema(
        operation_id="interfaces_retrieve",
        tags=INTERFACES,
        responses={200: s.InterfaceOutputSerializer, **NOT_FOUND},
        parameters=[ETAG],
    )
    def get(self, request: Request, name: str) -> Response:
        return _interface_answer(get_object_or_404(Interface, name=name))

    @extend_schema(
        operation_id="interfaces_update",
        tags=INTERFACES,
        request=s.InterfaceSerializer(partial=True),
        responses={200: s.InterfaceOutputSerializer, **NOT_FOUND, **PRECONDITION_ERRORS},
        parameters=[IF_MATCH, ETAG],
    )
    def patch(self, request: Request, name: str) -> Response:
        data = validated(s.InterfaceSerializer, request.data, partial=True)
        obj = get_object_or_404(Interface, name=name)
        obj = interface_services.interface_update(
            actor=actor_of(request),
            interface=obj,
            expected_updated_at=expected_updated_at(request, obj),
            **data,
        )
        return _interface_answer(obj)

    @extend_schema(
        operation_id="interfaces_destroy",
        tags=INTERFACES,
        responses={
            204: None,
            **NOT_FOUND,
            **PRECONDITION_ERRORS,
            409: _error("Adapter instructions still use the interface."),
        },
        parameters=[IF_MATCH],
    )
    def delete(self, request: Request, name: str) -> Response:
        obj = get_object_or_404(Interface, name=name)
        interface_services.interface_delete(
            actor=actor_of(request),
            interface=obj,
            expected_updated_at=expected_updated_at(request, obj),
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


def _interface_named(name: str) -> Interface:
    interface = Interface.objects.filter(name=name).first()
    if interface is None:
        raise ValidationError({"interface": [f"No interface named '{name}'."]})
    return interface


def _adapter_input(request: Request, *, partial: bool) -> dict[str, Any]:
    data = validated(s.AdapterInstructionSerializer, request.data, partial=partial)
    if "interface" in data:
        data["interface"] = _interface_named(data["interface"])
    return data


ADAPTERS = AdapterInstruction.objects.select_related("interface").order_by(
    "interface__name", "task", "order", "id"
)


class AdapterInstructionListView(RenderBeforeCommit, generics.GenericAPIView):
    permission_classes = [ReadOrWrite]
    queryset = ADAPTERS

    @extend_schema(
        operation_id="adapter_instructions_list",
        tags=INTERFACES,
        parameters=[
            OpenApiParameter("interface", OpenApiTypes.STR),
            OpenApiParameter("task", OpenApiTypes.STR),
        ],
        responses=s.AdapterInstructionOutputSerializer(many=True),
    )
    def get(self, request: Request) -> Response:
        rows = self.get_queryset()
        interface, task = query_name(request, "interface"), query_name(request, "task")
        if interface:
            rows = rows.filter(interface__name=interface)
        if task:
            rows = rows.filter(task=task)
        page = self.paginate_queryset(rows)
        data = s.AdapterInstructionOutputSerializer(page, many=True).data
        return self.get_paginated_response(data)

    @extend_schema(
        operation_id="adapter_instructions_create",
        tags=INTERFACES,
        request=s.AdapterInstructionSerializer,
        responses={201: s.AdapterInstructionOutputSerializer},
        parameters=[ETAG],
    )
    def post(self, request: Request) -> Response:
        obj = interface_services.adapter_instruction_create(
            actor=actor_of(request), **_adapter_input(request, partial=False)
        )
        return _adapter_answer(obj, status.HTTP_201_CREATED)


class AdapterInstructionDetailView(RenderBeforeCommit, APIView):
    permission_classes = [ReadOrWrite]

    @extend_schema(
        operation_id="adapter_instructions_retrieve",
        tags=INTERFACES,
        responses={200: s.AdapterInstructionOutputSerializer, **NOT_FOUND},
        parameters=[ETAG],
    )
    def get(self, request: Request, pk: int) -> Response:
        return _adapter_answer(get_object_or_404(ADAPTERS, pk=pk))

    @extend_schema(
        operation_id="adapter_instructions_update",
        tags=INTERFACES,
        request=s.AdapterInstructionSerializer(partial=True),
        responses={200: s.AdapterInstructionOutputSerializer, **NOT_FOUND, **PRECONDITION_ERRORS},
        parameters=[IF_MATCH, ETAG],
    )
    def patch(self, request: Request, pk: int) -> Response:
        data = _adapter_input(request, partial=True)
        obj = get_object_or_404(ADAPTERS, pk=pk)
        obj = interface_services.adapter_instruction_update(
            actor=actor_of(request),
            instruction=obj,
            expected_updated_at=expected_updated_at(request, obj),
            **data,
        )
        return _adapter_answer(obj)

    @extend_schema(
        operation_id="adapter_instructions_destroy",
        tags=INTERFACES,
        responses={
            204: None,
            **NOT_FOUND,
            **PRECONDITION_ERRORS,
            409: _error("Never: nothing points at an adapter instruction."),
        },
        parameters=[IF_MATCH],
    )
    def delete(self, request: Request, pk: int) -> Response:
        obj = get_object_or_404(ADAPTERS, pk=pk)
        interface_services.adapter_instruction_delete(
            actor=actor_of(request),
            instruction=obj,
            expected_updated_at=expected_updated_at(request, obj),
        )
        return Response(status=status.HTTP_204_NO_CONTENT)
