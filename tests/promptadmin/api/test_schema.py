"""The OpenAPI contract: valid, complete, and served with offline Swagger UI."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, get_args

import jsonschema
import pytest
from django.contrib.staticfiles import finders
from django.core.management import call_command
from rest_framework.test import APIClient

from assembler.result import CHANGE_KINDS, OUTCOME_REASONS, StepAction

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def schema(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("schema") / "schema.json"
    # --validate checks against the OpenAPI 3 meta-schema; --fail-on-warn turns any gap
    # drf-spectacular notices (an untyped field, a guessed type) into a failure.
    call_command(
        "spectacular",
        "--validate",
        "--fail-on-warn",
        "--format",
        "openapi-json",
        "--file",
        str(path),
    )
    return dict(json.loads(Path(path).read_text()))


def operations(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method.upper(), path, op)
        for path, ops in schema["paths"].items()
        for method, op in ops.items()
    ]


def test_every_operation_takes_an_api_key_or_a_session(schema: dict[str, Any]) -> None:
    assert schema["components"]["securitySchemes"]["ApiKeyAuth"] == {
        "type": "apiKey",
        "in": "header",
        "name": "Authorization",
        "description": schema["components"]["securitySchemes"]["ApiKeyAuth"]["description"],
    }
    for method, path, op in operations(schema):
        assert op["security"] == [{"ApiKeyAuth": []}, {"cookieAuth": []}], (method, path)


def test_every_operation_documents_its_error_responses(schema: dict[str, Any]) -> None:
    for method, path, op in operations(schema):
        documented = set(op["responses"])
        assert {"400", "401", "403", "405", "500"} <= documented, (method, path)
        # Setting or removing a label names its whole new state (the version, or none), so
        # it needs no If-Match: concurrent moves are serialized and every one is audited.
        label_change = "/labels/{label}" in path
        release_label = path == "/api/v1/release-labels/{label}"
        if method in {"PUT", "PATCH", "DELETE"} and label_change:
            assert "404" in documented, (method, path)
        elif method in {"PUT", "DELETE"} and release_label:
            # If-Match is optional (the issue's contract sends none): 412 only when sent.
            assert {"404", "412"} <= documented and "428" not in documented, (method, path)
            assert any(p["name"] == "If-Match" and not p.get("required") for p in op["parameters"])
        elif method in {"PUT", "PATCH", "DELETE"}:
            assert {"404", "412", "428"} <= documented, (method, path)
            assert any(p["name"] == "If-Match" and p["required"] for p in op["parameters"])
        # Nothing points at a segment or a lore entry: deleting one never conflicts.
        leaf = path.startswith(("/api/v1/segments/", "/api/v1/lore/"))
        if method == "DELETE" and not leaf and not label_change:
            assert "409" in documented, (method, path)
    for path in ("/api/v1/assemble", "/api/v1/preview"):
        assert "422" in schema["paths"][path]["post"]["responses"]


def test_input_objects_are_closed(schema: dict[str, Any]) -> None:
    components = schema["components"]["schemas"]
    for name in ("AssembleInputRequest", "SegmentInputRequest", "PatchedEntryInputRequest"):
        assert components[name]["additionalProperties"] is False, name


def test_the_schema_is_served_to_anyone_and_the_docs_work_offline() -> None:
    client = APIClient()
    assert client.get("/api/v1/schema/").status_code == 200
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    html = docs.content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    assert "cdn" not in html.lower()
    assert finders.find("drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js")
    # Nothing inline, so the Content-Security-Policy (script-src 'self') lets it run.
    assert "<style" not in html and re.search(r"<script(?![^>]*\bsrc=)", html) is None
    assert "unsafe-inline" not in docs["Content-Security-Policy"]
    script = client.get("/api/docs/?script=")
    assert script.status_code == 200 and "SwaggerUIBundle" in script.content.decode()


def test_page_and_page_size_bounds_are_in_the_schema(schema: dict[str, Any]) -> None:
    for path in ("/api/v1/segments/", "/api/v1/worlds/", "/api/v1/segments/{id}/history/"):
        parameters = {p["name"]: p["schema"] for p in schema["paths"][path]["get"]["parameters"]}
        assert parameters["page_size"] == {"type": "integer", "minimum": 1, "maximum": 200}
        assert parameters["page"]["minimum"] == 1


def test_the_schemas_enums_are_the_assemblers(schema: dict[str, Any]) -> None:
    # Found by schemathesis: a put-back step ('restored') was missing from the schema.
    components = schema["components"]["schemas"]
    assert components["TruncationStepActionEnum"]["enum"] == list(get_args(StepAction))
    assert "restored" in components["TruncationStepActionEnum"]["enum"]
    # meta.outcome: what is left out, shortened and lowered, each with its reason.
    assert components["OutcomeChangeKindEnum"]["enum"] == list(CHANGE_KINDS)
    assert components["OutcomeReasonEnum"]["enum"] == list(OUTCOME_REASONS)
    meta = components["Meta"]["properties"]
    assert meta["outcome"]["allOf"][0]["$ref"] == "#/components/schemas/Outcome"


def test_every_release_and_scenario_operation_has_examples_that_conform(
    schema: dict[str, Any],
) -> None:
    # Each body an operation takes and each success it answers with content is shown by an
    # example, and the examples are what the schema says (else they mislead).
    components = schema["components"]["schemas"]
    found = 0
    for method, path, op in operations(schema):
        if "releases" not in op.get("tags", []):
            continue
        bodies = [("request", op["requestBody"]["content"])] if "requestBody" in op else []
        bodies += [
            (f"response {code}", response["content"])
            for code, response in op["responses"].items()
            if code.startswith("2") and "content" in response
        ]
        if not bodies:  # nothing to show: it takes no body and answers none
            assert "204" in op["responses"], (method, path)
        for where, content in bodies:
            media = content["application/json"]
            assert media.get("examples"), (method, path, where)
            for name, example in media["examples"].items():
                found += 1
                problems = schema_problems(example["value"], media["schema"], components)
                assert not problems, (method, path, where, name, problems)
    assert found, "no operation tagged releases"


def schema_problems(value: Any, schema: dict[str, Any], components: dict[str, Any]) -> list[str]:
    """How ``value`` breaks an OpenAPI 3.0 ``schema`` (refs into ``components``)."""

    def as_json_schema(node: Any) -> Any:
        if isinstance(node, list):
            return [as_json_schema(item) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            return as_json_schema(components[node["$ref"].rsplit("/", 1)[1]])
        converted = {key: as_json_schema(item) for key, item in node.items()}
        if converted.pop("nullable", False):
            return {"anyOf": [converted, {"type": "null"}]}
        return converted

    validator = jsonschema.Draft7Validator(
        as_json_schema(schema), format_checker=jsonschema.FormatChecker()
    )
    return [f"{list(error.path)}: {error.message}" for error in validator.iter_errors(value)]


def test_the_docs_open_on_the_calls_a_game_makes(schema: dict[str, Any]) -> None:
    """/api/docs/ lists its sections in the order of the schema's tags: assemble and
    preview, prompts and conversations first (it opened on adapter instructions)."""
    tags = [tag["name"] for tag in schema["tags"]]
    assert tags[:3] == ["assembly", "prompts", "conversations"]
    used = {tag for _m, _p, op in operations(schema) for tag in op.get("tags", [])}
    assert used <= set(tags), used - set(tags)  # none falls in after the listed ones
    paths = list(schema["paths"])
    assert paths[:2] == ["/api/v1/assemble", "/api/v1/preview"]
    ranks = [tags.index(op["tags"][0]) for _m, _p, op in operations(schema)[:12]]
    assert ranks == sorted(ranks) and ranks[0] == 0
