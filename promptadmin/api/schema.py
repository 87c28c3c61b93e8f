"""OpenAPI additions: the API-key security scheme, closed input objects."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import (
    OpenApiAuthenticationExtension,
    OpenApiSerializerExtension,
)


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
