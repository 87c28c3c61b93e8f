"""Assembly endpoints: the hot path (/assemble) and the authors' view of it (/preview)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from assembler import AssemblyResult
from assembler.request import AssembleParams, parse_assemble_params, parse_preview_params
from promptadmin.api.errors import ClientErrorResponseSerializer
from promptadmin.api.hotpath import Answer, HotView
from promptadmin.api.permissions import CanRead
from promptadmin.api.serializers import assembly as s
from promptadmin.content.assembly import assemble_prompt, preview_prompt
from promptadmin.releases.serving import Served, resolve

A_TURN = OpenApiExample(
    "A turn in the demo game",
    request_only=True,
    value={
        "entry": "drowned-bell",
        "first_turn": True,
        "token_budget": 2000,
        "npcs": [{"npc": "marta-vell", "tier": 2}, "old-cobb"],
        "state": {
            "game_state": {"tide": "rising", "hour": 23},
            "player": "Aster, a salvage diver with a cracked lantern.",
            "input": "I ask Marta who rang the bell last night.",
        },
    },
)
FROM_A_RELEASE = OpenApiExample(
    "The same turn, from the release under the production label",
    request_only=True,
    # A label, a release's name or "working"; meta.release says which release served it.
    value={**A_TURN.value, "release": "production"},
)
OVER_BUDGET = OpenApiResponse(
    ClientErrorResponseSerializer,
    description="`strict` is set and the protected layers (core, ruleset) alone exceed the "
    "token budget; the error names the layers and their tokens.",
)


def assembly_schema(operation_id: str, request: type, response: type, summary: str) -> Any:
    """How an endpoint that assembles a turn's prompt is documented: the request
    /assemble takes, the same examples, and 422 when ``strict`` refuses."""
    return extend_schema(
        operation_id=operation_id,
        tags=["assembly"],
        request=request,
        responses={200: response, 422: OVER_BUDGET},
        examples=[A_TURN, FROM_A_RELEASE],
        summary=summary,
    )


class AssembleView(HotView):
    permission_classes = [CanRead]

    @assembly_schema(
        "assemble",
        s.AssembleInputSerializer,
        s.AssembleOutputSerializer,
        "Assemble the prompt for a turn",
    )
    def post(self, request: Request) -> Response:
        return Response(assembled(parse_assemble_params(request.data)))

    def hot(self, request: HttpRequest, data: Any, **kwargs: Any) -> Answer:
        return Answer(assembled(parse_assemble_params(data)))


def assembled(params: AssembleParams) -> dict[str, Any]:
    served = resolve(params.release)
    result = assemble_prompt(params, load=served.load, lore=served.lore)
    # Meta.to_dict() is the assembler's own JSON form; AssembleOutputSerializer documents
    # it, and the schema tests check that responses conform.
    return {"prompt": result.prompt, "meta": _meta(result, served)}


def _meta(result: AssemblyResult, served: Served) -> dict[str, Any]:
    """The answer's ``meta``: the assembler's own, and the release that served the content."""
    meta = result.meta.to_dict()
    meta["release"] = served.to_dict()
    return meta


class PreviewView(APIView):
    permission_classes = [CanRead]

    @assembly_schema(
        "preview",
        s.PreviewInputSerializer,
        s.PreviewOutputSerializer,
        "Assemble as /assemble would, and list every segment with its fate",
    )
    def post(self, request: Request) -> Response:
        params, include_inactive = parse_preview_params(request.data)
        served = resolve(params.release)
        preview = preview_prompt(
            params, include_inactive=include_inactive, load=served.load, lore=served.lore
        )
        result = preview.result
        meta = _meta(result, served)
        return Response({"prompt": result.prompt, "meta": meta, "segments": preview.segments})
