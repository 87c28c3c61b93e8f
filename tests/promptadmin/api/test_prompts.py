"""Registered prompts through the API: creating prompts and versions, and what is refused."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from promptadmin.prompts.models import Prompt
from promptadmin.prompts.services.interfaces import interface_create
from tests.promptadmin.api.conftest import (
    errors,
    key_client,
)
from tests.promptadmin.api.prompts import JUDGE, LANGFUSE_JUDGE, basic_client, post_raw

pytestmark = pytest.mark.django_db


def test_the_contract_example_creates_a_prompt_and_a_labelled_version(ops: APIClient) -> None:
    # An admin key: the example sets production, a protected label.
    created = ops.post(
        "/api/v1/prompts/",
        {"component": "verifier", "agent": "judge", "task_type": None,
         "description": "Grades answers.", "expected_system": None},
        format="json",
    )  # fmt: skip
    assert created.status_code == 201, created.json()
    assert created.json()["task_type"] is None
    version = ops.post(
        f"{JUDGE}versions/",
        {"task_type": None, "syntax": "curly", "system": "You grade {{ subject }}.",
         "user_templates": {"default": "Question: {{ question }}\n\nAnswer:"},
         "variables": ["subject", "question"], "task": "parsing", "config": {},
         "commit_message": "first", "labels": ["production"]},
        format="json",
    )  # fmt: skip
    assert version.status_code == 201, version.json()
    body = version.json()
    assert body["version"] == 1
    assert body["labels"] == ["production", "latest"]
    assert body["findings"] == []


def test_a_version_with_template_errors_is_refused_naming_the_template(
    writer: APIClient, judge: Prompt
) -> None:
    response = writer.post(
        f"{JUDGE}versions/",
        {"system": "You grade {{ user.name }}.", "user_templates": {"default": "{{ q[0] }}"},
         "variables": []},
        format="json",
    )  # fmt: skip
    assert response.status_code == 400
    found = errors(response)
    assert "attribute access" in found["system"]
    assert "indexing" in found["user_templates"]


def test_a_format_spec_placeholder_is_refused(writer: APIClient, judge: Prompt) -> None:
    response = writer.post(
        f"{JUDGE}versions/",
        {"syntax": "format", "system": "{score:>10}", "user_templates": {"default": "x"}},
        format="json",
    )
    assert response.status_code == 400
    assert "format specs" in errors(response)["system"]


def test_undeclared_variables_are_refused_and_unused_ones_reported(
    writer: APIClient, judge: Prompt
) -> None:
    refused = writer.post(
        f"{JUDGE}versions/",
        {"user_templates": {"default": "{{ q }}"}, "system": "", "variables": []},
        format="json",
    )
    assert refused.status_code == 400
    assert "'q'" in errors(refused)["variables"]
    accepted = writer.post(
        f"{JUDGE}versions/",
        {"user_templates": {"default": "{{ q }}"}, "system": "", "variables": ["q", "extra"]},
        format="json",
    )
    assert accepted.status_code == 201
    assert [f["code"] for f in accepted.json()["findings"]] == ["unused_variable"]


def test_a_user_template_may_not_be_called_system(writer: APIClient, judge: Prompt) -> None:
    response = writer.post(f"{JUDGE}versions/", {"user_templates": {"system": "x"}}, format="json")
    assert response.status_code == 400
    assert "system template" in errors(response)["user_templates"]


NESTED_33_DEEP: dict[str, Any] = {"a": 1}


for _ in range(32):
    NESTED_33_DEEP = {"a": NESTED_33_DEEP}


@pytest.mark.parametrize(
    ("field", "value", "message"),  # field None: the whole body is refused
    [
        ("system", "a\x00b", "Null"),
        ("system", "\ud800", "Surrogate"),
        (None, {"x": float("nan")}, "NaN"),
        ("config", {"x": 2**70}, "64 bits"),
        ("config", NESTED_33_DEEP, "nest"),
        ("user_templates", {"default": "x" * 200_001}, "200000"),
    ],
)
def test_hostile_version_input_gets_a_clear_error(
    writer: APIClient, judge: Prompt, field: str, value: Any, message: str
) -> None:
    body = {"user_templates": {"default": "x"}, field or "config": value}
    response = post_raw(writer, f"{JUDGE}versions/", body)
    assert response.status_code == 400, response.content
    found = errors(response)
    assert any(
        (attr == field or (attr and field and attr.startswith(field))) and message in detail
        for attr, detail in found.items()
    ), found


def test_user_templates_is_refused_as_a_config_key_naming_it(
    writer: APIClient, judge: Prompt
) -> None:
    # The Langfuse API serves the templates as config.user_templates: a version's own key
    # of that name would be hidden there, so none is ever stored.
    response = writer.post(
        f"{JUDGE}versions/",
        {"user_templates": {"default": "x"}, "config": {"user_templates": {"a": "b"}}},
        format="json",
    )
    assert response.status_code == 400
    assert "Langfuse" in errors(response)["config.user_templates"]
    assert judge.versions.count() == 2


def test_the_langfuse_create_refuses_config_user_templates_that_contradict_the_prompt(
    write_key: str, judge: Prompt
) -> None:
    client = basic_client(write_key)
    body = {
        "name": "verifier/judge",
        "type": "chat",
        "prompt": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}],
    }
    for extra in ({"default": "another"}, {"short": 3}, "text"):
        response = client.post(
            "/api/public/v2/prompts",
            {**body, "config": {"user_templates": extra}},
            format="json",
        )
        assert response.status_code == 400, extra
        assert response.json()["message"].startswith("config.user_templates: "), extra
    assert judge.versions.count() == 2
    # The form the Langfuse API serves posts back as it is: the same default, more templates.
    same = {"default": "U", "short": "{{ q }}"}
    created = client.post(
        "/api/public/v2/prompts", {**body, "config": {"user_templates": same}}, format="json"
    )
    assert created.status_code == 201, created.json()
    assert created.json()["config"] == {"user_templates": same}
    assert judge.versions.get(number=3).config == {}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"name": "a/b", "type": "image", "prompt": "x"}, "type: Expected 'text' or 'chat'"),
        ({"name": "a/b", "type": None, "prompt": "x"}, "type: Expected 'text' or 'chat'"),
        ({"name": "a/b", "type": "chat", "prompt": []}, "prompt: A chat prompt needs at least"),
        ({"name": "a/b", "type": "chat", "prompt": "x"}, "prompt: A chat prompt is a list"),
        ({"name": "a/b", "type": "text", "prompt": [{"role": "user", "content": "x"}]}, "prompt:"),
    ],
)
def test_the_langfuse_create_refuses_an_unknown_type_and_an_empty_chat_prompt(
    write_key: str, body: dict[str, Any], message: str
) -> None:
    response = basic_client(write_key).post("/api/public/v2/prompts", body, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["error"] == "InvalidRequestError"
    assert response.json()["message"].startswith(message)
    assert not Prompt.objects.filter(component="a").exists()


def test_a_version_stored_with_a_user_templates_config_key_is_a_409_on_the_langfuse_api(
    read_key: str, judge: Prompt
) -> None:
    from promptadmin.prompts.models import PromptVersion

    PromptVersion.objects.create(
        prompt=judge, number=3, user_templates={"default": "x"},
        config={"user_templates": "kept"}, content_hash="h",
    )  # fmt: skip
    response = basic_client(read_key).get(LANGFUSE_JUDGE, {"version": "3"})
    assert response.status_code == 409
    assert "/api/v1/prompts/" in response.json()["message"]


def test_versions_are_immutable_and_a_labelled_version_cannot_be_deleted(judge: Prompt) -> None:
    from promptadmin.core.errors import InUseError
    from promptadmin.prompts.services.prompts import prompt_version_delete

    version = judge.versions.get(number=1)
    version.system = "changed"
    with pytest.raises(TypeError):
        version.save()
    with pytest.raises(InUseError, match="production"):
        prompt_version_delete(actor=None, version=version)


def prompt_state() -> dict[str, Any]:
    from promptadmin.prompts.models import (
        AdapterInstruction,
        Interface,
        Label,
        LabelEvent,
        PromptVersion,
    )

    return {
        "prompts": list(Prompt.objects.values_list("component", "agent", "task_type")),
        "versions": list(PromptVersion.objects.values_list("prompt_id", "number")),
        "labels": sorted(Label.objects.values_list("prompt_id", "name", "version_id")),
        "events": LabelEvent.objects.count(),
        "interfaces": list(Interface.objects.values_list("name", "supports_system_prompt")),
        "adapters": list(AdapterInstruction.objects.values_list("task", "order")),
    }


WRITES = {
    "prompt create": ("post", "/api/v1/prompts/", {"component": "new", "agent": "one"}),
    "version create": ("post", f"{JUDGE}versions/", {"user_templates": {"default": "x"}}),
    "label set": ("put", f"{JUDGE}labels/staging", {"version": 1}),
    "interface create": ("post", "/api/v1/interfaces/", {"name": "manual"}),
    "adapter create": (
        "post", "/api/v1/adapter-instructions/", {"interface": "langchain", "task": "parsing"},
    ),
    "langfuse create": (
        "post", "/api/public/v2/prompts", {"name": "verifier/judge", "prompt": "x"},
    ),
    "langfuse labels": (
        "patch", f"{LANGFUSE_JUDGE}/versions/1", {"newLabels": ["staging"]},
    ),
}  # fmt: skip


@pytest.mark.parametrize("write", WRITES.values(), ids=WRITES.keys())
def test_a_write_whose_answer_cannot_be_rendered_is_not_committed(
    write_key: str, judge: Prompt, monkeypatch: pytest.MonkeyPatch, write: tuple[str, str, Any]
) -> None:
    from promptadmin.api.renderers import JSONRenderer

    interface_create(actor=None, name="langchain")
    before = prompt_state()
    render = JSONRenderer.render

    def unrenderable(self: Any, data: Any, *args: Any, **kwargs: Any) -> bytes:
        if data is None:
            return render(self, data, *args, **kwargs)
        raise TypeError("cannot render this answer")

    monkeypatch.setattr(JSONRenderer, "render", unrenderable)
    method, url, body = write
    client = basic_client(write_key) if url.startswith("/api/public/") else key_client(write_key)
    response = getattr(client, method)(url, body, format="json")
    assert response.status_code == 500
    # The client saw an error: a retry must not find the change made (or make it twice).
    assert prompt_state() == before
