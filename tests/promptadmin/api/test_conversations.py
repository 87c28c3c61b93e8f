"""The conversation endpoints: the documented contract, permissions, hostile input."""

from __future__ import annotations

from dataclasses import replace
from io import StringIO
from typing import Any
from unittest import mock

import pytest
from django.core.management import call_command
from django.test import override_settings
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from assembler.summarize import DEFAULT_INSTRUCTIONS
from promptadmin.conversations import services
from promptadmin.conversations.models import Conversation, Message, Summary, SummaryStatus
from promptadmin.core.tokens import tokenizer
from tests.promptadmin.api.conftest import errors
from tests.promptadmin.conversations.fake_llm import fake_llm
from tests.promptadmin.conversations.fixtures import talk

pytestmark = pytest.mark.django_db

BASE = "/api/v1/conversations"


def post(client: APIClient, key: str, body: Any) -> Any:
    return client.post(f"{BASE}/{key}/messages", body, format="json")


def test_appending_answers_with_the_positions(writer: APIClient, delay: mock.MagicMock) -> None:
    response = post(writer, "npc:marta@run-7", {"messages": talk(2), "history_budget": 5000})
    assert response.status_code == 201
    assert response.json() == {
        "conversation": "npc:marta@run-7",
        "positions": [1, 2],
        "summary_pending": False,
    }
    response = post(writer, "npc:marta@run-7", {"messages": talk(1, start=2)})
    assert response.json()["positions"] == [3]
    assert Conversation.objects.get().history_budget == 5000


def test_passing_the_threshold_says_a_summary_is_pending(
    writer: APIClient, delay: mock.MagicMock
) -> None:
    response = post(writer, "c", {"messages": talk(4), "history_budget": 200})
    assert response.json()["summary_pending"] is True
    assert Summary.objects.get().status == SummaryStatus.PENDING


def test_read_keys_read_history_but_cannot_append(reader: APIClient) -> None:
    response = post(reader, "c", {"messages": talk(1)})
    assert response.status_code == 403
    assert not Message.objects.exists()


@pytest.mark.parametrize(
    ("body", "attr"),
    [
        ({}, "messages"),
        ({"messages": []}, "messages"),
        ({"messages": "hi"}, "messages"),
        ({"messages": [{"role": "robot", "content": "x"}]}, "messages.0.role"),
        ({"messages": [{"role": "user", "content": 5}]}, "messages.0.content"),
        ({"messages": [{"role": "user", "content": "a\x00b"}]}, "messages.0.content"),
        ({"messages": [{"role": "user", "content": "x" * 100_001}]}, "messages.0.content"),
        ({"messages": [{"role": "user", "content": "x", "name": "a"}]}, "messages.0.name"),
        ({"messages": [{"role": "user", "content": "x"}], "history_budget": 0}, "history_budget"),
        ({"messages": [{"role": "user", "content": "x"}], "history_budget": 1.5}, "history_budget"),
        ({"messages": [{"role": "user", "content": "x"}], "extra": 1}, "extra"),
        ({"messages": [{"role": "user", "content": "x"}] * 101}, "messages"),
    ],
)
def test_bad_bodies_are_refused_naming_the_field(
    writer: APIClient, body: dict[str, Any], attr: str
) -> None:
    response = post(writer, "c", body)
    assert response.status_code == 400
    assert attr in errors(response)
    assert not Message.objects.exists()


def test_lone_surrogates_nan_and_nested_values_are_refused(writer: APIClient) -> None:
    raw = '{"messages": [{"role": "user", "content": "a\\ud800b"}]}'
    response = writer.post(f"{BASE}/c/messages", raw, content_type="application/json")
    assert response.status_code == 400
    assert "messages.0.content" in errors(response)
    nan = '{"messages": [{"role": "user", "content": "x"}], "history_budget": NaN}'
    response = writer.post(f"{BASE}/c/messages", nan, content_type="application/json")
    assert response.status_code == 400
    deep = '{"messages": [{"role": "user", "content": ' + "[" * 200 + "]" * 200 + "}]}"
    response = writer.post(f"{BASE}/c/messages", deep, content_type="application/json")
    assert response.status_code == 400
    assert "messages.0.content" in errors(response)
    assert not Message.objects.exists()


@pytest.mark.parametrize("key", ["a b", "x" * 201, "-start", "k%00"])
def test_a_bad_key_is_refused(writer: APIClient, key: str) -> None:
    response = post(writer, key, {"messages": talk(1)})
    assert response.status_code in (400, 404)
    if response.status_code == 400:
        assert "key" in errors(response)
    assert not Conversation.objects.exists()


def test_history_contract_without_a_summary(writer: APIClient, reader: APIClient) -> None:
    post(writer, "c", {"messages": talk(3), "history_budget": 5000})
    response = reader.get(f"{BASE}/c/history", {"budget": 1000})
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"mode", "text", "tokens", "summary", "messages", "summary_pending"}
    assert body["mode"] == "full"
    assert body["messages"] == [1, 2, 3]
    assert body["summary"] is None and body["summary_pending"] is False
    assert body["text"].startswith("User: Message 0")
    assert 0 < body["tokens"] <= 1000


def test_history_with_a_summary_and_recent_messages(
    writer: APIClient, reader: APIClient, counting: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        post(writer, "c", {"messages": talk(8), "history_budget": 200})
    summary = Summary.objects.get(status=SummaryStatus.DONE)
    body = reader.get(f"{BASE}/c/history").json()
    assert body["mode"] == "summary_and_recent"
    assert body["summary"] == {
        "id": summary.pk,
        "covers_through": summary.covers_through,
        "status": "done",
    }
    assert body["messages"] and min(body["messages"]) == summary.covers_through + 1
    assert body["text"].startswith("Summary of earlier conversation:\n")
    assert body["tokens"] <= 200
    # A small budget: the newest user message only, the summary left out.
    body = reader.get(f"{BASE}/c/history", {"budget": 60}).json()
    assert body["mode"] == "recent_only" and body["summary"] is None


def test_history_of_an_unknown_conversation_is_404(reader: APIClient) -> None:
    response = reader.get(f"{BASE}/nope/history")
    assert response.status_code == 404
    assert response.json()["type"] == "client_error"


@pytest.mark.parametrize(
    ("method", "url"),
    [("get", "history"), ("get", "summaries"), ("post", "summarize")],
)
@pytest.mark.parametrize("key", ["k%00", "a%20b", "x" * 201])
def test_a_key_no_conversation_can_have_is_404(
    writer: APIClient, method: str, url: str, key: str
) -> None:
    # A NUL cannot even be looked up in PostgreSQL: it must not fail the request.
    response = getattr(writer, method)(f"{BASE}/{key}/{url}")
    assert response.status_code == 404
    assert response.json()["type"] == "client_error"


@pytest.mark.parametrize("budget", ["0", "-5", "abc", "1000001", "1e3", "NaN"])
def test_a_bad_history_budget_is_refused(writer: APIClient, reader: APIClient, budget: str) -> None:
    post(writer, "c", {"messages": talk(1)})
    response = reader.get(f"{BASE}/c/history", {"budget": budget})
    assert response.status_code == 400
    assert "budget" in errors(response)


def test_summaries_list_and_summarize_now(
    writer: APIClient, reader: APIClient, counting: Any, django_capture_on_commit_callbacks: Any
) -> None:
    # Under the threshold, but with messages old enough to summarize.
    post(writer, "c", {"messages": talk(6), "history_budget": 500})
    assert reader.get(f"{BASE}/c/summaries").json() == []
    with django_capture_on_commit_callbacks(execute=True):
        response = writer.post(f"{BASE}/c/summarize")
    assert response.status_code == 202
    summary = Summary.objects.get()
    assert response.json() == {"summary": summary.pk, "summary_pending": True}
    body = reader.get(f"{BASE}/c/summaries").json()
    assert len(body) == 1
    assert set(body[0]) == {
        "id",
        "covers_through",
        "builds_on",
        "status",
        "backend",
        "model",
        "tokens",
        "attempts",
        "error",
        "created",
        "requested_by",
        "finished",
        "message_cut",
        "drawn_from",
        "previous_cut",
        "prompt",
    }
    assert body[0]["status"] == "done" and body[0]["covers_through"] == summary.covers_through
    assert body[0]["message_cut"] is None and body[0]["previous_cut"] is False
    assert body[0]["prompt"] is None  # made without an endpoint, so told no prompt
    assert body[0]["requested_by"].startswith("API key 'content-pipeline' (")
    # Made by the extractive summarizer (through the counting one), which says where from.
    assert body[0]["drawn_from"] == Summary.objects.get().drawn_from
    assert body[0]["drawn_from"] and max(body[0]["drawn_from"]) <= summary.covers_through


def test_summaries_name_the_prompt_version_the_endpoint_was_told(
    writer: APIClient, reader: APIClient, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        call_command("seed_prompts", stdout=StringIO())
    with (
        fake_llm() as llm,
        override_settings(SUMMARIZER_BASE_URL=llm.url, SUMMARIZER_MAX_RETRIES=0),
        django_capture_on_commit_callbacks(execute=True),
    ):
        post(writer, "c", {"messages": talk(8), "history_budget": 200})
    [body] = reader.get(f"{BASE}/c/summaries").json()
    assert body["backend"] == "openai"
    assert body["prompt"] == {"name": "conversations/summarizer", "version": 1}
    assert llm.requests[0]["messages"][0]["content"].startswith(DEFAULT_INSTRUCTIONS)


@override_settings(SUMMARIZER_MAX_INPUT_TOKENS=64)
def test_summaries_say_which_message_was_summarized_from_its_beginning_only(
    writer: APIClient, reader: APIClient, counting: Any, django_capture_on_commit_callbacks: Any
) -> None:
    huge = "The envoy listed every tithe of the valley, one by one. " * 40
    messages = [
        {"role": "user", "content": huge},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "Go on."},
    ]
    with django_capture_on_commit_callbacks(execute=True):
        post(writer, "c", {"messages": messages, "history_budget": 200})
    [body] = reader.get(f"{BASE}/c/summaries").json()
    assert body["status"] == "done" and body["covers_through"] == 1
    assert body["message_cut"] == 1 and body["previous_cut"] is False


def test_summarize_now_with_nothing_to_summarize_is_a_409_that_records_nothing(
    writer: APIClient, delay: mock.MagicMock
) -> None:
    # With a huge budget every message is recent enough to be shown as it is.
    post(writer, "c", {"messages": talk(6), "history_budget": 100_000})
    for _ in range(2):
        response = writer.post(f"{BASE}/c/summarize")
        assert response.status_code == 409
        body = response.json()
        assert body["type"] == "client_error"
        [error] = body["errors"]
        assert error["code"] == "nothing_to_summarize" and error["attr"] is None
        assert "recent enough to be shown verbatim" in error["detail"]
    assert not Summary.objects.exists()
    assert not Conversation.objects.get().summary_pending
    delay.assert_not_called()


def test_replies_to_a_huge_user_message_list_no_failed_summaries(
    writer: APIClient, reader: APIClient, counting: Any, django_capture_on_commit_callbacks: Any
) -> None:
    # Over the threshold by itself, the newest user message is always shown verbatim:
    # there is nothing to summarize until the user speaks again, and that is no failure.
    huge = {"role": "user", "content": "word " * 400}
    with django_capture_on_commit_callbacks(execute=True):
        post(writer, "c", {"messages": [huge], "history_budget": 100})
    for n in range(3):
        with django_capture_on_commit_callbacks(execute=True):
            body = post(writer, "c", {"messages": [{"role": "assistant", "content": f"{n}."}]})
        assert body.json()["summary_pending"] is False
    assert reader.get(f"{BASE}/c/summaries").json() == []
    with django_capture_on_commit_callbacks(execute=True):
        post(writer, "c", {"messages": [{"role": "user", "content": "Go on."}]})
    [summary] = reader.get(f"{BASE}/c/summaries").json()
    assert summary["status"] == "done" and summary["covers_through"] == 1


def test_the_schema_documents_nothing_to_summarize() -> None:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    responses = schema["paths"]["/api/v1/conversations/{key}/summarize"]["post"]["responses"]
    assert "nothing_to_summarize" in responses["409"]["description"]


def test_summarize_an_unknown_conversation_is_404(writer: APIClient) -> None:
    assert writer.post(f"{BASE}/nope/summarize").status_code == 404


def test_summarize_needs_write_access(writer: APIClient, reader: APIClient) -> None:
    post(writer, "c", {"messages": talk(1)})
    assert reader.post(f"{BASE}/c/summarize").status_code == 403


def test_history_costs_a_fixed_number_of_queries_and_one_less_for_a_state_read_before(
    writer: APIClient, reader: APIClient, django_assert_num_queries: Any
) -> None:
    post(writer, "c", {"messages": talk(100), "history_budget": 1_000_000})
    post(writer, "c", {"messages": talk(100, start=100)})
    assert reader.get("/api/v1/me").status_code == 200  # reads the key, kept from now on
    # The conversation with its summary, the messages.
    with django_assert_num_queries(2):
        first = reader.get(f"{BASE}/c/history", {"budget": 300})
    assert first.status_code == 200
    # The same conversation state and budget: the fitted block is remembered.
    with django_assert_num_queries(1):
        assert reader.get(f"{BASE}/c/history", {"budget": 300}).json() == first.json()
    # A new message is a new state: read and fitted again, and shown.
    post(writer, "c", {"messages": talk(1, start=200)})
    with django_assert_num_queries(2):
        body = reader.get(f"{BASE}/c/history", {"budget": 300}).json()
    assert body["messages"][-1] == 201
    assert body != first.json()


def test_history_tokens_are_the_exact_count_of_the_text(
    writer: APIClient, reader: APIClient, counting: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        post(writer, "c", {"messages": talk(12), "history_budget": 300})
    for budget in (300, 120, 40, 300):  # the last one remembered
        body = reader.get(f"{BASE}/c/history", {"budget": budget}).json()
        assert body["tokens"] == tokenizer().count(body["text"]) <= budget


def test_history_follows_a_new_summary_and_a_new_history_budget(
    writer: APIClient, reader: APIClient, counting: Any, django_capture_on_commit_callbacks: Any
) -> None:
    post(writer, "c", {"messages": talk(8), "history_budget": 100_000})
    before = reader.get(f"{BASE}/c/history").json()
    assert before["mode"] == "full" and before["summary_pending"] is False
    # Lowering the budget (the default of the endpoint) asks for a summary, made at once.
    with django_capture_on_commit_callbacks(execute=True):
        post(writer, "c", {"messages": talk(1, start=8), "history_budget": 200})
    after = reader.get(f"{BASE}/c/history").json()
    summary = Summary.objects.get(status=SummaryStatus.DONE)
    assert after["mode"] == "summary_and_recent" and after["summary_pending"] is False
    assert after["summary"]["id"] == summary.pk
    assert after["tokens"] <= 200
    # Asking for a summary shows as pending on the very next read, the state unchanged
    # (two more messages, under the threshold, make one old enough to summarize).
    post(writer, "c", {"messages": talk(2, start=9), "history_budget": 300})
    assert reader.get(f"{BASE}/c/history").json()["summary_pending"] is False
    assert writer.post(f"{BASE}/c/summarize").status_code == 202
    assert reader.get(f"{BASE}/c/history").json()["summary_pending"] is True


def test_history_keeps_the_newest_user_message_from_further_back_than_the_budget_reaches(
    writer: APIClient, reader: APIClient, django_assert_num_queries: Any
) -> None:
    replies = [{"role": "assistant", "content": f"Reply {n}."} for n in range(6)]
    post(writer, "c", {"messages": [{"role": "user", "content": "Ring the bell."}, *replies]})
    # A budget of 9 loads the newest 4 messages, all replies: then from the user's on.
    with django_assert_num_queries(4):
        body = reader.get(f"{BASE}/c/history", {"budget": 9}).json()
    assert body["messages"][0] == 1
    assert body["text"].startswith("User: Ring the bell.")


def test_an_append_whose_answer_cannot_be_rendered_is_not_committed(
    writer: APIClient, delay: mock.MagicMock, monkeypatch: pytest.MonkeyPatch
) -> None:
    append = services.conversation_append

    def append_unrenderable(**kwargs: Any) -> services.AppendResult:
        result = append(**kwargs)
        return replace(result, positions=[2**64])  # what the renderer cannot write

    monkeypatch.setattr(services, "conversation_append", append_unrenderable)
    response = post(writer, "c", {"messages": talk(4), "history_budget": 200})
    assert response.status_code == 500
    assert response.json()["type"] == "server_error"
    # The client saw an error: a retry must not add the messages twice.
    assert not Conversation.objects.exists() and not Message.objects.exists()
    assert not Summary.objects.exists()
    delay.assert_not_called()


def test_a_summary_request_whose_answer_cannot_be_rendered_is_not_committed(
    writer: APIClient, delay: mock.MagicMock, monkeypatch: pytest.MonkeyPatch
) -> None:
    post(writer, "c", {"messages": talk(6), "history_budget": 500})
    request = services.summary_request

    def request_unrenderable(**kwargs: Any) -> int:
        request(**kwargs)
        return 2**64

    monkeypatch.setattr(services, "summary_request", request_unrenderable)
    response = writer.post(f"{BASE}/c/summarize")
    assert response.status_code == 500
    assert not Summary.objects.exists()
    assert not Conversation.objects.get().summary_pending
    delay.assert_not_called()
