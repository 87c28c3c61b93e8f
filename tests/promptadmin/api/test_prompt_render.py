"""Rendering a registered prompt: adapter additions, user instructions, errors."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from assembler.format_lint import EMPTY_VALUE
from promptadmin.prompts.models import Prompt
from promptadmin.prompts.services.interfaces import adapter_instruction_create, interface_create
from tests.promptadmin.api.conftest import (
    cache_calls,
    errors,
)
from tests.promptadmin.api.prompts import (
    JUDGE,
    make_prompt,
    make_version,
    post_raw,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def interfaces() -> None:
    langchain = interface_create(actor=None, name="langchain")
    interface_create(actor=None, name="manual", supports_system_prompt=False)
    adapter_instruction_create(
        actor=None, interface=langchain, task="parsing", order=1,
        system_addition="Reply with JSON matching {{ json_schema }}.",
        user_addition="Return only the JSON object.",
    )  # fmt: skip


@pytest.fixture
def parsing(judge: Prompt) -> Prompt:
    prompt = make_prompt("parsing")
    make_version(
        prompt, ("production",), task="parsing", system="You parse {{ subject }}.",
        user_templates={"default": "Text: {{ question }}", "short": "{{ question }}"},
    )  # fmt: skip
    make_version(
        prompt, ("staging",), syntax="format", task="parsing",
        system='You parse {subject} into {{"answer": ...}}.',
        user_templates={"default": "Text: {question}"},
    )  # fmt: skip
    return prompt


def render(client: APIClient, **body: Any) -> Any:
    body.setdefault("task_type", "parsing")
    body.setdefault("variables", {"subject": "essays", "question": "Why?"})
    return client.post(f"{JUDGE}render", body, format="json")


def test_render_appends_adapter_additions_and_user_instructions_and_counts_tokens(
    reader: APIClient, parsing: Prompt, interfaces: None
) -> None:
    response = render(
        reader, interface="langchain", user_instructions="Be brief.",
        instruction_context={"json_schema": {"type": "object"}},
    )  # fmt: skip
    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["version"], body["task_type_used"]) == (1, "parsing")
    system, user = body["messages"]
    assert system["role"] == "system"
    assert system["content"] == (
        'You parse essays.\n\nReply with JSON matching {"type": "object"}.\n\nBe brief.'
    )
    assert user == {
        "role": "user",
        "content": "Text: Why?\n\nReturn only the JSON object.",
        "tokens": user["tokens"],
    }
    assert system["tokens"] > 5 and user["tokens"] > 3


def test_adapter_additions_render_empty_without_their_context_keys(
    reader: APIClient, parsing: Prompt, interfaces: None
) -> None:
    body = render(reader, interface="langchain").json()
    assert body["messages"][0]["content"] == "You parse essays.\n\nReply with JSON matching ."


def test_without_system_prompt_support_one_user_message_holds_both(
    reader: APIClient, parsing: Prompt, interfaces: None
) -> None:
    body = render(reader, interface="manual", user_instructions="Be brief.").json()
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert body["messages"][0]["content"] == "You parse essays.\n\nBe brief.\n\nText: Why?"


def test_render_in_the_format_syntax_and_as_raw_texts(
    reader: APIClient, parsing: Prompt, interfaces: None
) -> None:
    body = render(reader, label="staging", format="text", interface="manual").json()
    assert body["system"] == 'You parse essays into {"answer": ...}.'
    assert body["user"] == "Text: Why?"
    assert set(body["tokens"]) == {"system", "user"}
    assert "messages" not in body


def test_a_warm_render_makes_no_query_and_one_cache_round_trip(
    reader: APIClient,
    parsing: Prompt,
    interfaces: None,
    django_assert_num_queries: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    body = {"interface": "langchain", "instruction_context": {"json_schema": {}}}
    expected = render(reader, **body).json()
    calls = cache_calls(monkeypatch)
    with django_assert_num_queries(0):  # the API key is kept in memory too
        assert render(reader, **body).json() == expected
    # The keys' and the prompts' generations, read at once, the latter used for both the
    # version and the adapter instructions (process memory holds both).
    assert calls == ["get_many"]


def test_render_names_every_missing_variable(reader: APIClient, parsing: Prompt) -> None:
    response = render(reader, variables={"extra": 1})
    assert response.status_code == 400
    assert errors(response)["variables"] == "Missing variables: subject, question."


def test_render_reports_unused_variables(reader: APIClient, parsing: Prompt) -> None:
    body = render(reader, variables={"subject": "a", "question": "b", "mood": "c"}).json()
    assert body["unused_variables"] == ["mood"]


def test_render_names_an_unknown_template_and_an_unknown_interface(
    reader: APIClient, parsing: Prompt, interfaces: None
) -> None:
    template = render(reader, template="long")
    assert template.status_code == 400
    assert "default, short" in errors(template)["template"]
    interface = render(reader, interface="telepathy")
    assert interface.status_code == 400
    assert "langchain, manual" in errors(interface)["interface"]
    both = render(reader, label="production", version=1)
    assert both.status_code == 400


def test_render_refuses_values_that_cannot_be_sent(reader: APIClient, parsing: Prompt) -> None:
    response = post_raw(
        reader,
        f"{JUDGE}render",
        {"task_type": "parsing", "variables": {"subject": "\ud800", "question": "b"}},
    )
    assert response.status_code == 400
    assert "variables" in errors(response)


def test_a_render_warns_of_a_value_rendered_empty_where_text_is_expected(
    reader: APIClient, parsing: Prompt, interfaces: None
) -> None:
    body = render(reader, interface="langchain").json()
    [finding] = body["findings"]
    assert finding["code"] == EMPTY_VALUE and finding["level"] == "warning"
    assert finding["template"] == "adapter:langchain:system"
    assert "renders 'json_schema' empty" in finding["message"]
    variables = {"subject": "essays", "question": ""}
    found = render(reader, interface="langchain", variables=variables).json()["findings"]
    assert [f["template"] for f in found] == ["default", "adapter:langchain:system"]
    assert found[0]["message"].startswith("The user template 'default' renders 'question' empty")
    full = render(reader, interface="langchain", instruction_context={"json_schema": "{}"})
    assert full.json()["findings"] == []
