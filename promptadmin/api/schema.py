"""OpenAPI additions: the API-key security scheme, closed input objects, the order of
operations (the calls a game makes first)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import (
    OpenApiAuthenticationExtension,
    OpenApiSerializerExtension,
)

# What a game server calls, in the order /api/docs/ lists it (the sections themselves
# follow SPECTACULAR_SETTINGS["TAGS"]); every other path follows, alphabetically.
GAME_CALLS = ("/api/v1/assemble", "/api/v1/preview", "/api/v1/prompts/", "/api/v1/conversations/")
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def operation_order(endpoint: tuple[str, str, str, Any]) -> tuple[int, str, int]:
    """The sort key of one operation (drf-spectacular's ``SORT_OPERATIONS``)."""
    path, _regex, method, _view = endpoint
    rank = next(
        (index for index, prefix in enumerate(GAME_CALLS) if path.startswith(prefix)),
        len(GAME_CALLS),
    )
    return rank, path, METHODS.index(method) if method in METHODS else len(METHODS)


class ApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = "promptadmin.api.authentication.ApiKeyAuthentication"
    name = "ApiKeyAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "`Api-Key <key>`. Create keys with `manage.py create_api_key`; "
            "scope `read` assembles, previews and reads, `write` also changes content.",
        }


class StrictSerializerSchema(OpenApiSerializerExtension):
    """Input serializers refuse unknown fields; say so in the schema."""

    target_class = "promptadmin.api.serializers.common.StrictSerializer"
    match_subclasses = True

    def map_serializer(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        schema: dict[str, Any] = auto_schema._map_serializer(
            self.target, direction, bypass_extensions=True
        )
        schema["additionalProperties"] = False
        return schema
