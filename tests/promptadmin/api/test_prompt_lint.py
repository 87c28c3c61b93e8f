"""Linting a prompt through the API, given or stored."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from promptadmin.prompts.models import Prompt
from promptadmin.prompts.services.prompts import prompt_create
from tests.promptadmin.api.conftest import (
    codes,
    errors,
)
from tests.promptadmin.api.prompts import (
    make_version,
)

pytestmark = pytest.mark.django_db


def test_lint_returns_findings_with_code_level_message_template_and_position(
    reader: APIClient,
) -> None:
    response = reader.post(
        "/api/v1/lint",
        {"syntax": "curly", "system": "You grade.",
         "user_templates": {
             "default": "You are a grader.\nContext:\n[2] x\nQuestion: {{ q }}\nAnswer:"
         },
         "variables": ["q"], "expected_system": "You grade!"},
        format="json",
    )  # fmt: skip
    assert response.status_code == 200
    findings = response.json()["findings"]
    assert {f["code"] for f in findings} == {
        "system_mismatch",
        "system_text_in_user",
        "citation_order",
    }
    assert set(findings[0]) == {"code", "level", "message", "template", "position"}


@pytest.fixture
def expecting() -> Prompt:
    """verifier/checker expects the system text "You check." and has v1 (production) that
    keeps it, v2 (staging) that does not."""
    prompt = prompt_create(
        actor=None, component="verifier", agent="checker", expected_system="You check."
    )
    make_version(prompt, ("production",), system="You check.", user_templates={"default": "x"})
    # A version made before the expectation changed can differ; stored, it is linted anew.
    Prompt.objects.filter(pk=prompt.pk).update(expected_system=None)
    make_version(prompt, ("staging",), system="You check twice.", user_templates={"default": "x"})
    Prompt.objects.filter(pk=prompt.pk).update(expected_system="You check.")
    return prompt


def lint(client: APIClient, **body: Any) -> Any:
    return client.post("/api/v1/lint", body, format="json")


def test_lint_names_a_stored_version_and_checks_it_against_its_prompts_expected_system(
    reader: APIClient, expecting: Prompt
) -> None:
    production = lint(reader, component="verifier", agent="checker")
    assert production.status_code == 200, production.json()
    assert production.json() == {"findings": [], "version": 1, "task_type_used": None}
    for ref in ({"label": "staging"}, {"version": 2}, {"label": "latest"}):
        staged = lint(reader, component="verifier", agent="checker", **ref).json()
        assert staged["version"] == 2
        assert [f["code"] for f in staged["findings"]] == ["system_mismatch"], ref


def test_lint_of_a_stored_version_falls_back_to_the_default_prompt_as_a_fetch_does(
    reader: APIClient, judge: Prompt
) -> None:
    body = lint(reader, component="verifier", agent="judge", task_type="rubric").json()
    assert (body["task_type_used"], body["version"]) == ("rubric", 1)
    body = lint(reader, component="verifier", agent="judge", task_type="nothing").json()
    assert (body["task_type_used"], body["version"]) == (None, 1)


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"component": "verifier", "agent": "checker", "label": "canary"}, 404, None),
        ({"component": "verifier", "agent": "checker", "version": 9}, 404, None),
        ({"component": "nobody", "agent": "here"}, 404, None),
        ({"component": "verifier"}, 400, "agent"),
        ({"agent": "checker", "version": 1}, 400, "component"),
        ({"component": "verifier", "agent": "checker", "label": "staging", "version": 2}, 400,
         "version"),
        ({"component": "verifier", "agent": "checker", "system": "x"}, 400, "system"),
        ({"component": "Verifier", "agent": "checker"}, 400, "component"),
        ({"component": "verifier", "agent": "checker", "label": "Bad Label"}, 400, "label"),
        ({"component": "verifier", "agent": "checker", "version": 0}, 400, "version"),
        ({"component": "verifier\x00", "agent": "checker"}, 400, "component"),
    ],
)  # fmt: skip
def test_lint_of_a_stored_version_names_what_is_wrong_with_the_reference(
    reader: APIClient, expecting: Prompt, body: dict[str, Any], status: int, field: str | None
) -> None:
    response = lint(reader, **body)
    assert response.status_code == status, response.json()
    assert field in errors(response), errors(response)
    # Named for what is wrong with it, never refused as a field the endpoint does not take.
    assert "unknown_field" not in codes(response), errors(response)
