"""The registered-prompt API: fetch with fallback, labels, ETags, render, lint, interfaces."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from promptadmin.prompts.models import Prompt
from promptadmin.prompts.services.interfaces import adapter_instruction_create, interface_create
from promptadmin.prompts.services.prompts import prompt_create, prompt_version_create
from tests.promptadmin.api.conftest import (
    cache_calls,
    codes,
    errors,
    key_client,
    person,
    session_client,
)

pytestmark = pytest.mark.django_db

JUDGE = "/api/v1/prompts/verifier/judge/"


def make_prompt(task_type: str | None = None, **fields: Any) -> Prompt:
    return prompt_create(
        actor=None, component="verifier", agent="judge", task_type=task_type, **fields
    )


def make_version(prompt: Prompt, labels: tuple[str, ...] = (), **fields: Any) -> Any:
    fields.setdefault("system", "You grade {{ subject }}.")
    fields.setdefault("user_templates", {"default": "Question: {{ question }}\n\nAnswer:"})
    return prompt_version_create(actor=None, prompt=prompt, labels=labels, **fields)


@pytest.fixture
def judge() -> Prompt:
    """verifier/judge: default prompt with v1 (production) and v2 (staging), plus a rubric
    task type with v1 (production)."""
    default = make_prompt()
    make_version(default, ("production",), commit_message="first")
    make_version(default, ("staging",), system="You strictly grade {{ subject }}.")
    rubric = make_prompt("rubric")
    make_version(rubric, ("production",), system="You grade {{ subject }} by the rubric.")
    return default


def test_the_contract_example_creates_a_prompt_and_a_labelled_version(writer: APIClient) -> None:
    created = writer.post(
        "/api/v1/prompts/",
        {"component": "verifier", "agent": "judge", "task_type": None,
         "description": "Grades answers.", "expected_system": None},
        format="json",
    )  # fmt: skip
    assert created.status_code == 201, created.json()
    assert created.json()["task_type"] is None
    version = writer.post(
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


def test_fetch_defaults_to_production_and_names_the_task_type_used(
    reader: APIClient, judge: Prompt
) -> None:
    default = reader.get(JUDGE)
    assert default.status_code == 200
    body = default.json()
    assert (body["version"], body["task_type_used"], body["labels"]) == (1, None, ["production"])
    assert set(body) >= {
        "component", "agent", "task_type_used", "version", "labels", "syntax", "system",
        "user_templates", "variables", "task", "config", "content_hash",
    }  # fmt: skip
    rubric = reader.get(JUDGE, {"task_type": "rubric", "label": "production"}).json()
    assert rubric["task_type_used"] == "rubric"
    assert rubric["system"] == "You grade {{ subject }} by the rubric."


def test_a_task_type_without_its_own_prompt_falls_back_to_the_default(
    reader: APIClient, judge: Prompt
) -> None:
    body = reader.get(JUDGE, {"task_type": "abstention", "label": "staging"}).json()
    assert (body["task_type_used"], body["version"]) == (None, 2)


def test_an_empty_task_type_in_the_query_means_the_default(
    reader: APIClient, judge: Prompt
) -> None:
    assert reader.get(JUDGE, {"task_type": ""}).json()["task_type_used"] is None


def test_an_unknown_label_is_404_and_never_another_label(reader: APIClient, judge: Prompt) -> None:
    response = reader.get(JUDGE, {"label": "canary"})
    assert response.status_code == 404
    assert "no label 'canary'" in errors(response)[None]
    # The rubric prompt has no staging: no fallback to the default's staging.
    assert reader.get(JUDGE, {"task_type": "rubric", "label": "staging"}).status_code == 404


def test_label_and_version_together_are_refused(reader: APIClient, judge: Prompt) -> None:
    response = reader.get(JUDGE, {"label": "production", "version": "1"})
    assert response.status_code == 400
    assert "version" in errors(response)


def test_latest_is_always_the_newest_version(
    reader: APIClient, writer: APIClient, judge: Prompt, django_capture_on_commit_callbacks: Any
) -> None:
    assert reader.get(JUDGE, {"label": "latest"}).json()["version"] == 2
    assert reader.get(JUDGE, {"version": "2"}).json()["labels"] == ["staging", "latest"]
    with django_capture_on_commit_callbacks(execute=True):
        make_version(judge, system="You grade {{ subject }} kindly.")
    assert reader.get(JUDGE, {"label": "latest"}).json()["version"] == 3
    refused = writer.put(f"{JUDGE}labels/latest", {"version": 1}, format="json")
    assert refused.status_code == 400
    assert "latest" in errors(refused)["label"]


def test_fetch_sends_a_strong_etag_and_answers_304_when_unchanged(
    reader: APIClient, judge: Prompt
) -> None:
    first = reader.get(JUDGE)
    etag = first.headers["ETag"]
    assert etag.startswith('"') and not etag.startswith("W/")
    again = reader.get(JUDGE, HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304
    assert again.content == b""
    assert reader.get(JUDGE, HTTP_IF_NONE_MATCH='"other"').status_code == 200


def basic_client(read_key: str) -> APIClient:
    import base64

    basic = base64.b64encode(f"{read_key.partition('.')[0]}:{read_key}".encode()).decode()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Basic {basic}")
    return client


LANGFUSE_JUDGE = "/api/public/v2/prompts/verifier%2Fjudge"


@pytest.mark.parametrize("hot", [True, False], ids=["hot path", "drf"])
@pytest.mark.parametrize("api", ["native", "langfuse"])
def test_if_none_match_uses_the_weak_comparison_a_list_and_star(
    read_key: str, judge: Prompt, monkeypatch: pytest.MonkeyPatch, api: str, hot: bool
) -> None:
    from promptadmin.api import hotpath

    monkeypatch.setattr(hotpath, "enabled", hot)
    client, url = (
        (key_client(read_key), JUDGE)
        if api == "native"
        else (basic_client(read_key), LANGFUSE_JUDGE)
    )
    etag = client.get(url).headers["ETag"]
    # RFC 9110 13.1.2: If-None-Match compares weakly; a proxy that compresses a response
    # weakens its tag, and the client still holds the same representation.
    for header in (etag, f"W/{etag}", f'"other", W/{etag}', "*"):
        again = client.get(url, HTTP_IF_NONE_MATCH=header)
        assert (again.status_code, again.headers["ETag"]) == (304, etag), header
    for header in ('"other"', 'W/"other"', etag.strip('"'), f'{etag[:-2]}x"'):
        assert client.get(url, HTTP_IF_NONE_MATCH=header).status_code == 200, header


def test_a_promotion_is_seen_by_the_next_fetch(
    reader: APIClient, writer: APIClient, judge: Prompt, django_capture_on_commit_callbacks: Any
) -> None:
    before = reader.get(JUDGE)
    assert before.json()["version"] == 1
    with django_capture_on_commit_callbacks(execute=True):
        moved = writer.put(
            f"{JUDGE}labels/production", {"task_type": None, "version": 2}, format="json"
        )
    assert moved.json() == {"label": "production", "version": 2}
    after = reader.get(JUDGE, HTTP_IF_NONE_MATCH=before.headers["ETag"])
    assert after.status_code == 200
    assert after.json()["version"] == 2


def test_a_warm_fetch_makes_no_query(
    reader: APIClient, judge: Prompt, django_assert_max_num_queries: Any
) -> None:
    reader.get(JUDGE)
    # One query: the API key (re-read on every request, so revocation is immediate).
    with django_assert_max_num_queries(1):
        assert reader.get(JUDGE).status_code == 200


def test_a_cold_fetch_makes_a_bounded_number_of_queries(
    reader: APIClient, judge: Prompt, django_assert_max_num_queries: Any
) -> None:
    with django_assert_max_num_queries(5):
        assert reader.get(JUDGE, {"task_type": "rubric"}).status_code == 200


def test_a_warm_langfuse_fetch_makes_no_query_and_one_cache_round_trip(
    read_key: str,
    judge: Prompt,
    django_assert_num_queries: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client = basic_client(read_key)
    expected = client.get(LANGFUSE_JUDGE).json()
    calls = cache_calls(monkeypatch)
    with django_assert_num_queries(0):  # the API key is kept in memory
        assert client.get(LANGFUSE_JUDGE).json() == expected
    assert calls == ["get_many"]


def test_a_cold_langfuse_fetch_makes_a_bounded_number_of_queries(
    read_key: str, judge: Prompt, django_assert_max_num_queries: Any
) -> None:
    # The key, the prompt (with its fallback), the newest number, the version, its labels.
    with django_assert_max_num_queries(5):
        assert basic_client(read_key).get(f"{LANGFUSE_JUDGE}%2Frubric").status_code == 200


def test_the_label_history_makes_the_same_few_queries_however_long_it_is(
    reader: APIClient, judge: Prompt, django_assert_max_num_queries: Any
) -> None:
    from promptadmin.prompts.services.prompts import prompt_label_move

    assert reader.get(f"{JUDGE}labels/history").json()["count"] == 2
    authors = [person("author") for _ in range(3)]
    for n in range(12):
        prompt_label_move(actor=authors[n % 3], prompt=judge, name="production", version=2 - n % 2)
    # The prompt, the count for the page, the events with their authors (the key is known).
    with django_assert_max_num_queries(3):
        history = reader.get(f"{JUDGE}labels/history").json()
    assert history["count"] == 14
    assert {event["actor"] for event in history["results"][:12]} == {
        author.get_username() for author in authors
    }


def test_labels_are_removed_and_every_change_is_in_the_history(
    writer: APIClient, reader: APIClient, judge: Prompt
) -> None:
    assert writer.put(f"{JUDGE}labels/production", {"version": 2}, format="json").status_code == 200
    assert writer.delete(f"{JUDGE}labels/staging?task_type=").status_code == 204
    assert reader.get(JUDGE, {"label": "staging"}).status_code == 404
    assert writer.delete(f"{JUDGE}labels/staging").status_code == 404
    history = reader.get(f"{JUDGE}labels/history").json()["results"]
    assert [(e["label"], e["action"], e["from_version"], e["to_version"]) for e in history] == [
        ("staging", "removed", 2, None),
        ("production", "moved", 1, 2),
        ("staging", "set", None, 2),
        ("production", "set", None, 1),
    ]
    assert history[0]["actor"].startswith("API key 'content-pipeline' (")


def test_setting_a_label_to_an_unknown_version_names_the_version(
    writer: APIClient, judge: Prompt
) -> None:
    response = writer.put(f"{JUDGE}labels/staging", {"version": 9}, format="json")
    assert response.status_code == 400
    assert "no version 9" in errors(response)["version"]


def test_label_names_follow_the_rule(writer: APIClient, judge: Prompt) -> None:
    assert writer.put(f"{JUDGE}labels/Prod", {"version": 1}, format="json").status_code == 404
    long = "a" * 37
    assert writer.put(f"{JUDGE}labels/{long}", {"version": 1}, format="json").status_code == 404
    response = writer.post(
        f"{JUDGE}versions/",
        {"user_templates": {"default": "x"}, "labels": ["Bad Label"]},
        format="json",
    )
    assert response.status_code == 400
    assert "labels" in errors(response)


def test_reads_need_the_read_scope_and_changes_the_write_scope(
    reader: APIClient, judge: Prompt
) -> None:
    response = reader.put(f"{JUDGE}labels/staging", {"version": 1}, format="json")
    assert response.status_code == 403
    viewer = session_client(person("viewer"))
    assert viewer.get(JUDGE).status_code == 200
    assert viewer.delete(f"{JUDGE}labels/staging").status_code == 403
    author = session_client(person("author"))
    assert author.put(f"{JUDGE}labels/staging", {"version": 1}, format="json").status_code == 200
    assert APIClient().get(JUDGE).status_code in (401, 403)


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


def post_raw(client: APIClient, url: str, body: Any) -> Any:
    """POST ``body`` as JSON that Python writes but strict encoders refuse (NaN, lone
    surrogates), as a hostile client would send it."""
    return client.post(url, json.dumps(body), content_type="application/json")


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
    "label set": ("put", f"{JUDGE}labels/production", {"version": 2}),
    "interface create": ("post", "/api/v1/interfaces/", {"name": "manual"}),
    "adapter create": (
        "post", "/api/v1/adapter-instructions/", {"interface": "langchain", "task": "parsing"},
    ),
    "langfuse create": (
        "post", "/api/public/v2/prompts", {"name": "verifier/judge", "prompt": "x"},
    ),
    "langfuse labels": (
        "patch", f"{LANGFUSE_JUDGE}/versions/2", {"newLabels": ["production"]},
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


# -- render ----------------------------------------------------------------------------------


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


# -- lint, interfaces, list -------------------------------------------------------------------


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


def test_interfaces_and_adapter_instructions_are_managed_with_the_write_scope(
    writer: APIClient, reader: APIClient
) -> None:
    created = writer.post(
        "/api/v1/interfaces/",
        {"name": "claude_tool", "supports_system_prompt": True, "supports_structured_output": True},
        format="json",
    )
    assert created.status_code == 201
    assert reader.post("/api/v1/interfaces/", {"name": "x"}, format="json").status_code == 403
    adapter = writer.post(
        "/api/v1/adapter-instructions/",
        {"interface": "claude_tool", "task": "parsing", "order": 1,
         "system_addition": "Use the tool.", "user_addition": "", "active": True},
        format="json",
    )  # fmt: skip
    assert adapter.status_code == 201, adapter.json()
    url = f"/api/v1/adapter-instructions/{adapter.json()['id']}"
    stale = writer.patch(url, {"active": False}, format="json", HTTP_IF_MATCH='"old"')
    assert stale.status_code == 412
    changed = writer.patch(
        url, {"active": False}, format="json", HTTP_IF_MATCH=adapter.headers["ETag"]
    )
    assert changed.json()["active"] is False
    in_use = writer.delete("/api/v1/interfaces/claude_tool", HTTP_IF_MATCH=created.headers["ETag"])
    assert in_use.status_code == 409
    bad = writer.post(
        "/api/v1/adapter-instructions/",
        {"interface": "nope", "task": "parsing", "system_addition": "{{ a.b }}"},
        format="json",
    )
    assert bad.status_code == 400
    assert set(errors(bad)) == {"interface"}
    bad_template = writer.post(
        "/api/v1/adapter-instructions/",
        {"interface": "claude_tool", "task": "parsing", "system_addition": "{{ a.b }}"},
        format="json",
    )
    assert "attribute access" in errors(bad_template)["system_addition"]


def test_the_prompt_list_filters_and_shows_labels(
    reader: APIClient, judge: Prompt, django_assert_max_num_queries: Any
) -> None:
    for n in range(5):
        make_version(make_prompt(f"task{n}"), ("production",))
    with django_assert_max_num_queries(5):
        body = reader.get("/api/v1/prompts/", {"component": "verifier"}).json()
    assert body["count"] == 7
    first = body["results"][0]
    assert (first["task_type"], first["labels"], first["latest_version"]) == (
        None,
        {"production": 1, "staging": 2},
        2,
    )
    staged = reader.get("/api/v1/prompts/", {"label": "staging"}).json()
    assert [p["task_type"] for p in staged["results"]] == [None]
    defaults = reader.get("/api/v1/prompts/", {"task_type": ""}).json()
    assert defaults["count"] == 1


def test_the_prompt_list_treats_latest_as_having_a_version_as_the_langfuse_list_does(
    reader: APIClient, read_key: str, judge: Prompt
) -> None:
    make_prompt("empty")  # no version yet: nothing is latest
    listed = reader.get("/api/v1/prompts/", {"label": "latest"}).json()
    assert [(p["task_type"], p["latest_version"]) for p in listed["results"]] == [
        (None, 2),
        ("rubric", 1),
    ]
    langfuse = basic_client(read_key).get("/api/public/v2/prompts", {"label": "latest"}).json()
    assert [p["name"] for p in langfuse["data"]] == ["verifier/judge", "verifier/judge/rubric"]


def test_the_prompt_list_filters_by_agent(reader: APIClient, judge: Prompt) -> None:
    prompt_create(actor=None, component="verifier", agent="parser")
    prompt_create(actor=None, component="summarizer", agent="judge")
    listed = reader.get("/api/v1/prompts/", {"agent": "judge"}).json()
    assert [(p["component"], p["task_type"]) for p in listed["results"]] == [
        ("summarizer", None),
        ("verifier", None),
        ("verifier", "rubric"),
    ]
    both = reader.get("/api/v1/prompts/", {"agent": "parser", "component": "verifier"}).json()
    assert [(p["agent"], p["latest_version"]) for p in both["results"]] == [("parser", None)]


def test_creating_the_same_prompt_twice_names_the_address(writer: APIClient, judge: Prompt) -> None:
    response = writer.post(
        "/api/v1/prompts/", {"component": "verifier", "agent": "judge"}, format="json"
    )
    assert response.status_code == 400
    assert "already exists" in errors(response)["task_type"]
    assert codes(response)


def test_the_langfuse_path_sends_its_own_etag_and_answers_304(read_key: str, judge: Prompt) -> None:
    import base64

    basic = base64.b64encode(f"{read_key.partition('.')[0]}:{read_key}".encode()).decode()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Basic {basic}")
    url = "/api/public/v2/prompts/verifier%2Fjudge?label=production"
    first = client.get(url)
    assert first.status_code == 200
    assert first.json()["type"] == "chat"
    assert first.headers["ETag"].startswith('"lf-')
    assert client.get(url, HTTP_IF_NONE_MATCH=first.headers["ETag"]).status_code == 304
    native = client.get(JUDGE)
    assert native.status_code == 401  # Basic is only for /api/public/


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/prompts/?task_type=%00",
        "/api/v1/prompts/?component=a%00",
        "/api/v1/prompts/?label=%00",
        "/api/v1/prompts/verifier/judge/?task_type=%00",
        "/api/v1/adapter-instructions/?task=%00",
    ],
)
def test_query_parameters_that_cannot_name_anything_are_a_400(
    reader: APIClient, judge: Prompt, url: str
) -> None:
    response = reader.get(url)
    assert response.status_code == 400
    assert errors(response)


def test_the_langfuse_path_answers_404_for_a_label_that_cannot_exist(
    read_key: str, judge: Prompt
) -> None:
    import base64

    basic = base64.b64encode(f"{read_key.partition('.')[0]}:{read_key}".encode()).decode()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Basic {basic}")
    assert client.get("/api/public/v2/prompts/verifier%2Fjudge?label=%00").status_code == 404
    assert client.get("/api/public/v2/prompts?label=%00").json()["data"] == []


def test_setting_a_label_refuses_unknown_fields_and_takes_the_version_from_the_query(
    writer: APIClient, judge: Prompt
) -> None:
    response = writer.put(f"{JUDGE}labels/canary", {"version": 1, "extra": 42}, format="json")
    assert response.status_code == 400
    assert "extra" in errors(response)
    assert writer.put(f"{JUDGE}labels/canary?version=2").json() == {"label": "canary", "version": 2}
    missing = writer.put(f"{JUDGE}labels/canary", {}, format="json")
    assert "version" in errors(missing)
