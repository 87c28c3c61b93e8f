"""Conversation pages: list and detail for every role, summarize now for authors, the
history layer in the preview."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
from django.test import Client, override_settings
from django.utils import timezone

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


def test_authors_ask_for_a_summary_now(author: Client) -> None:
    with mock.patch("promptadmin.conversations.tasks.enqueue_summary"):
        # Under the threshold, with messages old enough to summarize.
        services.conversation_append(actor=None, key="run:9", messages=talk(6), history_budget=400)
        response = author.post("/conversations/run:9/summarize/", follow=True)
    assert response.status_code == 200
    summary = Summary.objects.get()
    assert summary.status == SummaryStatus.PENDING
    assert f"Summary #{summary.pk} asked for" in response.content.decode()
    assert b"pending" in response.content
    assert summary.requester == "author-person"
    assert b" by author-person" in response.content


def test_asking_for_a_summary_with_nothing_to_summarize_says_so_and_records_nothing(
    author: Client, conversation: None
) -> None:
    with mock.patch("promptadmin.conversations.tasks.enqueue_summary") as enqueue:
        response = author.post("/conversations/run:7/summarize/", follow=True)
    assert response.status_code == 200
    page = response.content.decode()
    assert "Nothing to summarize" in page
    assert "recent enough to be shown verbatim" in page
    assert not Summary.objects.exists()
    enqueue.assert_not_called()


def test_a_conversation_with_nothing_old_enough_to_summarize_says_so_without_an_error(
    viewer: Client, django_capture_on_commit_callbacks: Any
) -> None:
    huge = {"role": "user", "content": "word " * 400}
    with django_capture_on_commit_callbacks(execute=True):
        services.conversation_append(actor=None, key="run:12", messages=[huge], history_budget=100)
    page = viewer.get("/conversations/run:12/").content.decode()
    assert "Nothing was old enough to summarize" in page
    assert "after the next user message" in page
    assert "badge-error" not in page and not Summary.objects.exists()


def test_summaries_show_status_backend_tokens_and_errors(viewer: Client) -> None:
    from promptadmin.conversations.tasks import summarize_conversation

    services.conversation_append(actor=None, key="run:9", messages=talk(6), history_budget=400)
    with mock.patch("promptadmin.conversations.tasks.enqueue_summary"):
        summary_id = services.summary_request(actor=None, key="run:9")
    summarize_conversation.apply(args=[summary_id], throw=False)
    Summary.objects.create(
        conversation=Summary.objects.get().conversation,
        requested_through=6,
        status=SummaryStatus.FAILED,
        error="RuntimeError: the worker broke",
        created_at=timezone.now(),
    )
    page = viewer.get("/conversations/run:9/").content.decode()
    done = Summary.objects.get(status=SummaryStatus.DONE)
    assert "extractive" in page and f">{done.token_count}<" in page
    assert "failed" in page and "RuntimeError: the worker broke" in page
    assert done.drawn_from
    assert "Sentences taken from messages #" + ", #".join(map(str, done.drawn_from)) in page


@override_settings(SUMMARIZER_MAX_INPUT_TOKENS=64, SUMMARIZER_BASE_URL="")
def test_a_message_summarized_from_its_beginning_only_is_pointed_out(viewer: Client) -> None:
    huge = "The envoy listed every tithe of the valley, one by one. " * 40
    messages = [
        {"role": "user", "content": huge},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "Go on."},
    ]
    with mock.patch("promptadmin.conversations.tasks.enqueue_summary"):
        services.conversation_append(
            actor=None, key="run:10", messages=messages, history_budget=200
        )
    from promptadmin.conversations.tasks import summarize_conversation

    summarize_conversation.apply(args=[Summary.objects.get().pk], throw=False)
    page = viewer.get("/conversations/run:10/").content.decode()
    assert "message #1 read from its beginning only" in page


def test_a_summary_names_the_prompt_version_the_endpoint_was_told(viewer: Client) -> None:
    from promptadmin.conversations.tasks import summarize_conversation

    with mock.patch("promptadmin.conversations.tasks.enqueue_summary"):
        services.conversation_append(actor=None, key="run:11", messages=talk(8), history_budget=200)
    summary = Summary.objects.get()
    summarize_conversation.apply(args=[summary.pk], throw=False)
    Summary.objects.filter(pk=summary.pk).update(
        backend="openai", prompt_name="conversations/summarizer", prompt_version=3
    )
    page = viewer.get("/conversations/run:11/").content.decode()
    assert "told conversations/summarizer v3" in page


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
