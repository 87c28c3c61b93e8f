"""Assembly endpoints (the hot path) and the caller's identity."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from promptadmin.api import serializers as s
from promptadmin.api.errors import ClientErrorResponseSerializer
from promptadmin.api.permissions import CanRead
from promptadmin.assembly import assemble_prompt, preview_prompt
from promptadmin.models import ApiKey
from promptadmin.roles import can_edit, role_of

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
OVER_BUDGET = OpenApiResponse(
    ClientErrorResponseSerializer,
    description="`strict` is set and the protected layers (core, ruleset) alone exceed the "
    "token budget; the error names the layers and their tokens.",
)


class AssembleView(APIView):
    permission_classes = [CanRead]

    @extend_schema(
        operation_id="assemble",
        tags=["assembly"],
        request=s.AssembleInputSerializer,
        responses={200: s.AssembleOutputSerializer, 422: OVER_BUDGET},
        examples=[A_TURN],
        summary="Assemble the prompt for a turn",
    )
    def post(self, request: Request) -> Response:
        result = assemble_prompt(s.AssembleInputSerializer.parse(request.data))
        # Meta.to_dict() is the assembler's own JSON form; AssembleOutputSerializer documents
        # it, and the schema tests check that responses conform.
        return Response({"prompt": result.prompt, "meta": result.meta.to_dict()})


class PreviewView(APIView):
    permission_classes = [CanRead]

    @extend_schema(
        operation_id="preview",
        tags=["assembly"],
        request=s.PreviewInputSerializer,
        responses={200: s.PreviewOutputSerializer, 422: OVER_BUDGET},
        examples=[A_TURN],
        summary="Assemble as /assemble would, and list every segment with its fate",
    )
    def post(self, request: Request) -> Response:
        params, include_inactive = s.PreviewInputSerializer.parse_preview(request.data)
        preview = preview_prompt(params, include_inactive=include_inactive)
        result = preview.result
        return Response(
            {"prompt": result.prompt, "meta": result.meta.to_dict(), "segments": preview.segments}
        )


class MeView(APIView):
    """The cheapest authenticated endpoint: who the caller is and what it may do."""

    permission_classes = [CanRead]

    @extend_schema(operation_id="me", tags=["auth"], responses={200: s.CallerSerializer})
    def get(self, request: Request) -> Response:
        key = request.auth if isinstance(request.auth, ApiKey) else None
        if key is not None:
            caller = {
                "kind": "api_key",
                "name": key.name,
                "scope": key.scope,
                "role": None,
                "can_write": key.can_write,
            }
        else:
            role = role_of(request.user)
            caller = {
                "kind": "user",
                "name": request.user.get_username(),
                "scope": None,
                "role": role.label if role else None,
                "can_write": can_edit(request.user),
            }
        return Response(s.CallerSerializer(caller).data)
