"""Conversation pages: list and detail for every role, summarize now for authors, the
history layer in the preview."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
from django.test import Client

from promptadmin.conversations import services
from promptadmin.conversations.models import Summary, SummaryStatus

pytestmark = pytest.mark.django_db


def talk(n: int) -> list[dict[str, str]]:
    roles = ["user", "assistant"]
    return [
        {"role": roles[i % 2], "content": f"Message {i}: we sent {i} scouts to the Tarn. " * 3}
        for i in range(n)
    ]


@pytest.fixture
def conversation() -> None:
    with mock.patch("promptadmin.conversations.tasks.enqueue_summary"):
        services.conversation_append(
            actor=None, key="run:7", messages=talk(6), history_budget=100_000
        )


def test_viewers_see_the_list_and_the_detail(
    viewer: Client, conversation: None, django_assert_max_num_queries: Any
) -> None:
    with django_assert_max_num_queries(6):
        response = viewer.get("/conversations/")
    assert response.status_code == 200
    assert b"run:7" in response.content
    response = viewer.get("/conversations/run:7/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "Message 5" in page and "History block at its budget" in page
    assert "Summarize now" not in page  # viewers cannot ask for one


def test_an_unknown_conversation_is_404(viewer: Client) -> None:
    assert viewer.get("/conversations/nope/").status_code == 404


def test_viewers_cannot_ask_for_a_summary(viewer: Client, conversation: None) -> None:
    response = viewer.post("/conversations/run:7/summarize/")
    assert response.status_code == 403
    assert not Summary.objects.exists()


def test_authors_ask_for_a_summary_now(author: Client, conversation: None) -> None:
    with mock.patch("promptadmin.conversations.tasks.enqueue_summary"):
        response = author.post("/conversations/run:7/summarize/", follow=True)
    assert response.status_code == 200
    summary = Summary.objects.get()
    assert summary.status == SummaryStatus.PENDING
    assert f"Summary #{summary.pk} asked for" in response.content.decode()
    assert b"pending" in response.content


def test_summaries_show_status_backend_tokens_and_errors(
    viewer: Client, conversation: None
) -> None:
    services.summary_request(actor=None, key="run:7")
    from promptadmin.conversations.tasks import summarize_conversation

    summarize_conversation.apply(args=[Summary.objects.get().pk], throw=False)
    page = viewer.get("/conversations/run:7/").content.decode()
    assert "failed" in page  # a huge budget: nothing old enough to summarize
    assert "Nothing to summarize" in page


def test_the_preview_shows_the_history_layer(demo: None, viewer: Client) -> None:
    with mock.patch("promptadmin.conversations.tasks.enqueue_summary"):
        services.conversation_append(actor=None, key="run:8", messages=talk(3))
    response = viewer.get(
        "/preview/", {"entry": "drowned-bell", "first_turn": "on", "conversation": "run:8"}
    )
    page = response.content.decode()
    assert "=== HISTORY_BEGIN ===" in page
    assert "Conversation history" in page


def test_the_preview_names_an_unknown_conversation(demo: None, viewer: Client) -> None:
    response = viewer.get("/preview/", {"entry": "drowned-bell", "conversation": "nope"})
    assert "No conversation with key &#x27;nope&#x27;." in response.content.decode()
