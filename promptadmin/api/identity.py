"""Who the caller is: the cheapest authenticated endpoint, also the benchmarks' baseline."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from promptadmin.api.permissions import CanRead
from promptadmin.api.serializers.assembly import CallerSerializer
from promptadmin.content.models import ApiKey
from promptadmin.core.roles import can_edit, role_of


class MeView(APIView):
    """The cheapest authenticated endpoint: who the caller is and what it may do."""

    permission_classes = [CanRead]

    @extend_schema(operation_id="me", tags=["auth"], responses={200: CallerSerializer})
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
        return Response(CallerSerializer(caller).data)
