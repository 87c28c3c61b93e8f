"""A render request is read by the one parser (assembler.request.parse_render_params):
the serializer describes exactly what it reads, and its refusals are the documented 400."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from assembler.request import (
    DEFAULT_TEMPLATE,
    INT32,
    MAX_NAME,
    MAX_TEXT,
    RENDER_FIELDS,
    RENDER_FORMATS,
    parse_render_params,
)
from promptadmin.api.serializers.prompts import RenderSerializer
from scripts import bench_api

PARSER = "/api/v1/prompts/verifier/parser/render"


def test_the_schema_describes_the_fields_the_parser_reads() -> None:
    fields = RenderSerializer().fields
    assert tuple(fields) == RENDER_FIELDS
    assert fields["template"].max_length == MAX_NAME
    assert fields["template"].default == DEFAULT_TEMPLATE
    assert fields["version"].max_value == INT32
    assert fields["user_instructions"].max_length == MAX_TEXT
    assert tuple(fields["format"].choices) == RENDER_FORMATS


@pytest.mark.parametrize(
    "body",
    [
        json.loads(json.dumps(bench_api.RENDER_BODY)),
        {"task_type": "parsing", "variables": {"subject": "essays", "question": "Why?"}},
        {"version": 2, "format": "text", "interface": "manual", "user_instructions": ""},
        {"task_type": "", "label": "staging", "template": "short", "instruction_context": {}},
    ],
)
def test_requests_as_pipelines_send_them_are_read(body: dict[str, Any]) -> None:
    params = parse_render_params(body)
    assert params.variables == body.get("variables", {})


@pytest.mark.django_db
def test_a_refusal_is_the_documented_400_naming_every_field(reader: APIClient) -> None:
    call_command("seed_prompts", stdout=StringIO())
    response = reader.post(
        PARSER,
        {"label": "a", "version": 0, "template": "", "colour": "red", "variables": [1]},
        format="json",
    )
    assert response.status_code == 400
    assert response.json() == {
        "type": "validation_error",
        "errors": [
            {
                "code": "unknown_field",
                "detail": f"Unknown field; the fields are: {', '.join(RENDER_FIELDS)}.",
                "attr": "colour",
            },
            {
                "code": "min_value",
                "detail": "Ensure this value is greater than or equal to 1.",
                "attr": "version",
            },
            {"code": "blank", "detail": "This field may not be blank.", "attr": "template"},
            {
                "code": "not_a_dict",
                "detail": 'Expected a dictionary of items but got type "list".',
                "attr": "variables",
            },
        ],
    }
