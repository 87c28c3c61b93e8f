"""The Langfuse-compatible prompt API under ``/api/public/``: point the official Langfuse SDK
at promptadmin (``base_url`` and keys changed, nothing else).

- Authentication is HTTP Basic: the public key is a promptadmin API key's prefix and the
  secret key is the whole API key; its scope applies as everywhere.
- A registered prompt's name is ``component/agent/task_type``, or ``component/agent``
  for the default; the SDK sends ``/`` as ``%2F``, which the server decodes, so a name
  with ``/`` never 404s for that reason.
- A version with a system text, or user templates other than ``default``, is a ``chat``
  prompt: the system message, then the ``default`` user template as a user message. A
  version with only a ``default`` template and no system text is a ``text`` prompt.
  ``config`` is the version's config plus ``user_templates`` (all of them; a create may
  send more templates there, agreeing with the prompt's own, and no version stores a
  config key of that name, which this would hide). Templates in
  the ``format`` syntax are served converted to ``{{ }}``, so the SDK's ``compile()``
  fills them.
- Errors answer ``{"error": ..., "message": ...}`` as Langfuse does.

These endpoints are left out of the OpenAPI schema: their contract is Langfuse's.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.db import transaction
from django.db.models import Max, Prefetch
from django.http import HttpRequest
from django.urls import path, re_path
from drf_spectacular.utils import extend_schema
from rest_framework import authentication, exceptions, status
from rest_framework.request import Request
from rest_framework.response import Response

from assembler.request import DEFAULT_TEMPLATE
from assembler.storable import printable
from assembler.templates import TemplateConversionError, to_curly
from promptadmin.api.authentication import actor_of, verified_key
from promptadmin.api.errors import Conflict
from promptadmin.api.hotpath import Answer, HotView
from promptadmin.api.permissions import CanRead, ReadOrWrite
from promptadmin.api.preconditions import none_match
from promptadmin.api.responses import RenderBeforeCommit
from promptadmin.content.models import ApiKey
from promptadmin.prompts.errors import PromptLookupError
from promptadmin.prompts.models import (
    LABEL_HELP,
    LABEL_RE,
    LATEST,
    Label,
    Prompt,
    parse_langfuse_name,
)
from promptadmin.prompts.selectors import ResolvedPrompt, fetch_prompt
from promptadmin.prompts.services import prompts as prompt_services
from promptadmin.prompts.services.prompts import CONFIG_RESERVED

PROJECT = {
    "id": "promptadmin",
    "name": "promptadmin",
    "organization": {"id": "promptadmin", "name": "promptadmin"},
    "metadata": {},
}
MAX_LIMIT = 100
PROMPT_TYPES = ("text", "chat")
_VERSION_PATH = re.compile(r"^(?P<name>.+)/versions/(?P<version>[0-9]{1,9})$")


def basic_secret(authorization: str) -> str | None:
    """The API key in Basic credentials (None: not Basic); AuthenticationFailed when they
    are malformed or the public key is not the API key's prefix."""
    keyword, _, encoded = authorization.partition(" ")
    if keyword.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        raise exceptions.AuthenticationFailed("Malformed Basic credentials.") from None
    public, _, secret = decoded.partition(":")
    if not secret or secret.partition(".")[0] != public:
        raise exceptions.AuthenticationFailed(
            "Invalid keys: the public key is the API key's prefix (before the '.'), the "
            "secret key is the whole API key."
        )
    return secret


class BasicKeyAuthentication(authentication.BaseAuthentication):
    """``Authorization: Basic base64(public:secret)`` with public = key prefix, secret = key."""

    def authenticate(self, request: Request) -> tuple[Any, ApiKey] | None:
        secret = basic_secret(request.META.get("HTTP_AUTHORIZATION", ""))
        return None if secret is None else (AnonymousUser(), verified_key(secret))

    def authenticate_header(self, request: Request) -> str:
        return 'Basic realm="promptadmin"'


class LangfuseView(RenderBeforeCommit):
    """Langfuse's error shape; a write commits only once its answer is rendered."""

    authentication_classes = [BasicKeyAuthentication]

    def handle_exception(self, exc: Exception) -> Response:
        response = super().handle_exception(exc)
        data = response.data
        if isinstance(data, dict) and "errors" in data:
            messages = [
                f"{error['attr']}: {error['detail']}" if error.get("attr") else error["detail"]
                for error in data["errors"]
            ]
            kind = {
                401: "UnauthorizedError",
                403: "AccessDeniedError",
                404: "LangfuseNotFoundError",
            }.get(response.status_code, "InvalidRequestError")
            response.data = {"error": kind, "message": " ".join(messages)}
        return response


NAME_RULE = (
    "A prompt name is 'component/agent' or 'component/agent/task_type', each part "
    "lowercase letters, digits, '_', '.' or '-'."
)


def langfuse_prompt(resolved: ResolvedPrompt) -> dict[str, Any]:
    """A fetched version in the wire format the Langfuse SDK validates."""
    try:
        system = to_curly(resolved.system, resolved.syntax)
        templates = {
            name: to_curly(text, resolved.syntax) for name, text in resolved.user_templates.items()
        }
    except TemplateConversionError as error:
        # The version exists but has no faithful Langfuse form: the client's request is
        # fine, the resource's state is what stands in the way (409, never a 500).
        raise Conflict(
            f"Version {resolved.version} of {resolved.langfuse_name} cannot be served in "
            f"Langfuse's {{{{ }}}} syntax: {error}. Use the native API (/api/v1/prompts/).",
            code="not_curly_convertible",
        ) from None
    if CONFIG_RESERVED in resolved.config:
        # The services refuse such a key, but a stored version may hold one: serving it
        # would silently hide it behind the templates.
        raise Conflict(
            f"Version {resolved.version} of {resolved.langfuse_name} has a config key "
            f"'{CONFIG_RESERVED}', where Langfuse's form puts the user templates. Use the "
            "native API (/api/v1/prompts/).",
            code="config_key_reserved",
        )
    body: dict[str, Any] = {
        "name": resolved.langfuse_name,
        "version": resolved.version,
        "config": {**resolved.config, CONFIG_RESERVED: templates},
        "labels": list(resolved.labels),
        "tags": [],
        "commitMessage": resolved.commit_message or None,
    }
    if not system and set(templates) == {DEFAULT_TEMPLATE}:
        return {"type": "text", "prompt": templates[DEFAULT_TEMPLATE], **body}
    messages = [{"role": "system", "content": system}] if system else []
    if DEFAULT_TEMPLATE in templates:
        messages.append({"role": "user", "content": templates[DEFAULT_TEMPLATE]})
    return {"type": "chat", "prompt": messages, **body}


def _one(params: Any, name: str) -> str | None:
    value = params.get(name)
    return value if value not in (None, "") else None


def _fetch(name: str, label: str | None, version: int | None) -> ResolvedPrompt:
    address = parse_langfuse_name(name)
    if address is None:
        raise exceptions.NotFound(f"No prompt named '{name}'. {NAME_RULE}")
    component, agent, task_type = address
    if label is not None and version is not None:
        raise exceptions.ValidationError("Give a label or a version, not both.")
    if label is not None and not LABEL_RE.fullmatch(label):
        raise exceptions.NotFound(f"No label {label!r}: {LABEL_HELP}")
    try:
        return fetch_prompt(
            component=component,
            agent=agent,
            task_type=task_type,
            label=label,
            version=version,
        )
    except PromptLookupError as error:
        raise exceptions.NotFound(error.message) from None


class ProjectsView(LangfuseView):
    permission_classes = [CanRead]

    @extend_schema(exclude=True)
    def get(self, request: Request) -> Response:
        return Response({"data": [PROJECT]})


class PromptsView(LangfuseView):
    permission_classes = [ReadOrWrite]

    @extend_schema(exclude=True)
    def get(self, request: Request) -> Response:
        params = request.query_params
        page = _positive(params.get("page"), "page", 1)
        limit = min(_positive(params.get("limit"), "limit", 50), MAX_LIMIT)
        prompts = Prompt.objects.annotate(newest=Max("versions__number")).filter(
            newest__isnull=False
        )
        name = _one(params, "name")
        if name is not None:
            address = parse_langfuse_name(name)
            if address is None:
                prompts = prompts.none()
            else:
                prompts = prompts.filter(
                    component=address[0], agent=address[1], task_type=address[2] or ""
                )
        label = _one(params, "label")
        if label is not None and not LABEL_RE.fullmatch(label):
            prompts = prompts.none()
        elif label is not None and label != LATEST:
            prompts = prompts.filter(labels__name=label)
        if _one(params, "tag") is not None:
            prompts = prompts.none()  # promptadmin keeps no tags
        total = prompts.count()
        rows = prompts.order_by("component", "agent", "task_type").prefetch_related(
            Prefetch("labels", queryset=Label.objects.order_by("name")),
            "versions",
        )[(page - 1) * limit : page * limit]
        data = []
        for prompt in rows:
            versions = sorted((v for v in prompt.versions.all()), key=lambda v: v.number)
            newest = versions[-1]
            data.append(
                {
                    "name": prompt.langfuse_name,
                    "type": "chat"
                    if newest.system or set(newest.user_templates) != {"default"}
                    else "text",
                    "versions": [v.number for v in versions],
                    "labels": sorted({label.name for label in prompt.labels.all()} | {LATEST}),
                    "tags": [],
                    "lastUpdatedAt": newest.created_at.isoformat().replace("+00:00", "Z"),
                    "lastConfig": newest.config,
                }
            )
        meta = {
            "page": page,
            "limit": limit,
            "totalItems": total,
            "totalPages": math.ceil(total / limit),
        }
        return Response({"data": data, "meta": meta})

    @extend_schema(exclude=True)
    def post(self, request: Request) -> Response:
        data = request.data if isinstance(request.data, dict) else None
        if data is None:
            raise exceptions.ValidationError("Expected a JSON object.")
        name = data.get("name")
        address = parse_langfuse_name(name) if isinstance(name, str) else None
        if address is None:
            raise exceptions.ValidationError({"name": [NAME_RULE]})
        system, templates = _templates(data)
        config = data.get("config") or {}
        if not isinstance(config, dict):
            raise exceptions.ValidationError({"config": ["Expected a JSON object."]})
        config = dict(config)
        # The form this API serves: the version's user templates, the prompt's included.
        # Never stored as config; and never contradicting the prompt, which would lose one.
        extra = config.pop(CONFIG_RESERVED, None)
        if extra is not None:
            templates = {**_extra_templates(extra, templates), **templates}
        labels = data.get("labels") or []
        if not isinstance(labels, list):
            raise exceptions.ValidationError({"labels": ["Expected a list of label names."]})
        if data.get("tags"):
            raise exceptions.ValidationError({"tags": ["promptadmin keeps no tags; send none."]})
        commit = data.get("commitMessage") or ""
        actor = actor_of(request)
        component, agent, task_type = address
        with transaction.atomic():
            prompt = Prompt.objects.filter(
                component=component, agent=agent, task_type=task_type or ""
            ).first() or prompt_services.prompt_create(
                actor=actor, component=component, agent=agent, task_type=task_type
            )
            version = prompt_services.prompt_version_create(
                actor=actor,
                prompt=prompt,
                syntax="curly",
                system=system,
                user_templates=templates,
                config=config,
                commit_message=commit,
                labels=[label for label in labels if label != LATEST],
            )
        resolved = _fetch(name, None, version.number)
        return Response(langfuse_prompt(resolved), status=status.HTTP_201_CREATED)


def _extra_templates(extra: Any, templates: dict[str, str]) -> dict[str, str]:
    """``config.user_templates`` of a create request, checked against the prompt's own."""
    field = f"config.{CONFIG_RESERVED}"
    if not isinstance(extra, dict):
        raise exceptions.ValidationError({field: ["Expected an object of name to template."]})
    for name, text in extra.items():
        if not isinstance(text, str):
            raise exceptions.ValidationError({field: [f"{name!r}: expected text."]})
        if name in templates and templates[name] != text:
            raise exceptions.ValidationError(
                {field: [f"{name!r} differs from the prompt's own {name!r} template; send one."]}
            )
    return extra


def _templates(data: dict[str, Any]) -> tuple[str, dict[str, str]]:
    """The system text and user templates of a Langfuse create request."""
    prompt = data.get("prompt")
    kind = data.get("type", "text")
    if kind not in PROMPT_TYPES:
        raise exceptions.ValidationError(
            {"type": [f"Expected 'text' or 'chat', not {printable(str(kind))[:40]!r}."]}
        )
    if kind == "text":
        if not isinstance(prompt, str):
            raise exceptions.ValidationError({"prompt": ["A text prompt is a string."]})
        return "", {DEFAULT_TEMPLATE: prompt}
    if not isinstance(prompt, list):
        raise exceptions.ValidationError({"prompt": ["A chat prompt is a list of messages."]})
    if not prompt:
        raise exceptions.ValidationError(
            {"prompt": ["A chat prompt needs at least one message (a system or a user one)."]}
        )
    system = ""
    templates: dict[str, str] = {}
    for index, message in enumerate(prompt):
        role = message.get("role") if isinstance(message, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if role == "system" and index == 0 and isinstance(content, str):
            system = content
        elif role == "user" and not templates and isinstance(content, str):
            templates[DEFAULT_TEMPLATE] = content
        else:
            raise exceptions.ValidationError(
                {
                    f"prompt.{index}": [
                        "A registered prompt is an optional first system message and at most "
                        "one user message (the 'default' template; others go in "
                        "config.user_templates); placeholders are not supported."
                    ]
                }
            )
    return system, templates


def _positive(value: str | None, name: str, default: int) -> int:
    if value in (None, ""):
        return default
    if not value.isdigit() or len(value) > 9 or int(value) < 1:
        raise exceptions.ValidationError({name: ["Expected a positive integer."]})
    return int(value)


class PromptView(LangfuseView, HotView):
    """``GET v2/prompts/{name}`` and ``PATCH v2/prompts/{name}/versions/{version}``: one
    view, so a name can never be mistaken for a version path."""

    permission_classes = [ReadOrWrite]
    hot_method = "GET"
    hot_query = frozenset({"label", "version"})

    @extend_schema(exclude=True)
    def get(self, request: Request, rest: str) -> Response:
        return self.hot(request, None, rest=rest).response()

    def hot_key(self, authorization: str) -> str | None:
        try:
            return basic_secret(authorization)
        except exceptions.AuthenticationFailed:
            return None  # BasicKeyAuthentication words it

    def hot(self, request: HttpRequest, data: Any, **kwargs: Any) -> Answer:
        params = request.GET  # DRF's query_params are these
        version = _one(params, "version")
        number = None if version is None else _positive(version, "version", 1)
        resolved = _fetch(kwargs["rest"], _one(params, "label"), number)
        # Its own tag: the same version has another body here than on the native API.
        etag = f'"lf-{resolved.etag.strip(chr(34))}"'
        if none_match(request.headers.get("If-None-Match", ""), etag):
            return Answer(None, status.HTTP_304_NOT_MODIFIED, {"ETag": etag})
        return Answer(langfuse_prompt(resolved), headers={"ETag": etag})

    @extend_schema(exclude=True)
    def patch(self, request: Request, rest: str) -> Response:
        match = _VERSION_PATH.match(rest)
        if match is None:
            raise exceptions.NotFound("PATCH /api/public/v2/prompts/{name}/versions/{version}.")
        name, number = match["name"], int(match["version"])
        address = parse_langfuse_name(name)
        if address is None:
            raise exceptions.NotFound(f"No prompt named '{name}'. {NAME_RULE}")
        data = request.data if isinstance(request.data, dict) else {}
        labels = data.get("newLabels")
        if not isinstance(labels, list):
            raise exceptions.ValidationError({"newLabels": ["Expected a list of label names."]})
        component, agent, task_type = address
        prompt = Prompt.objects.filter(
            component=component, agent=agent, task_type=task_type or ""
        ).first()
        if prompt is None:
            raise exceptions.NotFound(f"No prompt named '{name}'.")
        actor = actor_of(request)
        with transaction.atomic():
            for label in dict.fromkeys(labels):
                prompt_services.prompt_label_set(
                    actor=actor, prompt=prompt, name=label, version=number
                )
        return Response(langfuse_prompt(_fetch(name, None, number)))


urlpatterns = [
    path("projects", ProjectsView.as_view(), name="langfuse-projects"),
    path("v2/prompts", PromptsView.as_view(), name="langfuse-prompts"),
    re_path(r"^v2/prompts/(?P<rest>.+)$", PromptView.as_view(), name="langfuse-prompt"),
]
