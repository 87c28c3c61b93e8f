"""The summarization task: it makes the summary, never twice for one range (repeated
deliveries, two workers at once), takes over a summary whose worker is gone, and falls
back to the extractive summarizer when the endpoint keeps failing, saying so."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from promptadmin.conversations import services
from promptadmin.conversations.models import Conversation, Summary, SummaryStatus
from promptadmin.conversations.selectors import conversation_history
from promptadmin.conversations.tasks import summarize_conversation
from tests.promptadmin.conversations.conftest import CountingSummarizer, talk
from tests.promptadmin.conversations.fake_llm import Reply, fake_llm

pytestmark = pytest.mark.django_db


def pending_summary(key: str = "talk", n: int = 8, budget: int = 200) -> Summary:
    """A conversation over its threshold, with its pending summary (task not run)."""
    services.conversation_append(actor=None, key=key, messages=talk(n), history_budget=budget)
    return Summary.objects.get(conversation__key=key, status=SummaryStatus.PENDING)


def run(summary: Summary, task_id: str = "task-1") -> Any:
    # throw=False: retries run in-process, as they do without a broker.
    return summarize_conversation.apply(args=[summary.pk], task_id=task_id, throw=False).get()


def test_the_task_makes_the_summary_and_the_history_uses_it(counting: CountingSummarizer) -> None:
    summary = pending_summary()
    assert run(summary) == "done"
    summary.refresh_from_db()
    assert summary.status == SummaryStatus.DONE
    assert summary.backend == "counting" and summary.model == "counting-1"
    assert summary.attempts == 1 and summary.error == ""
    assert summary.token_count and summary.started_at and summary.finished_at
    assert 1 <= summary.covers_through < 8
    conversation = Conversation.objects.get()
    assert conversation.summarized_through == summary.covers_through
    assert not conversation.summary_pending
    history = conversation_history(conversation, budget=200)
    assert history.fit.mode == "summary_and_recent"
    assert history.summary == summary
    assert min(history.fit.positions) > summary.covers_through
    assert counting.calls == [summary.covers_through]


def test_a_repeated_delivery_finds_the_summary_done_and_does_nothing(
    counting: CountingSummarizer,
) -> None:
    summary = pending_summary()
    assert run(summary) == "done"
    assert run(summary) == "nothing_to_do"
    assert len(counting.calls) == 1
    assert Summary.objects.filter(status=SummaryStatus.DONE).count() == 1


def test_a_delivery_while_another_worker_runs_it_does_nothing(
    counting: CountingSummarizer,
) -> None:
    summary = pending_summary()
    Summary.objects.filter(pk=summary.pk).update(
        status=SummaryStatus.RUNNING, attempts=1, started_at=timezone.now()
    )
    assert run(summary) == "nothing_to_do"
    assert counting.calls == []
    summary.refresh_from_db()
    assert summary.status == SummaryStatus.RUNNING and summary.attempts == 1


@override_settings(CELERY_TASK_TIME_LIMIT=30)
def test_a_summary_stuck_running_past_the_time_limit_is_taken_over(
    counting: CountingSummarizer,
) -> None:
    summary = pending_summary()
    Summary.objects.filter(pk=summary.pk).update(
        status=SummaryStatus.RUNNING,
        attempts=1,
        started_at=timezone.now() - timedelta(seconds=31),
    )
    assert run(summary) == "done"
    summary.refresh_from_db()
    assert summary.status == SummaryStatus.DONE and summary.attempts == 2
    assert len(counting.calls) == 1


def test_a_worker_that_lost_its_claim_stores_nothing(counting: CountingSummarizer) -> None:
    summary = pending_summary()
    claim = services.summary_claim(summary_id=summary.pk, task_id="old")
    assert claim is not None
    # Another worker takes over (the first looked gone) and finishes first.
    Summary.objects.filter(pk=summary.pk).update(started_at=timezone.now() - timedelta(hours=1))
    assert run(summary, task_id="new") == "done"
    stored = services.summary_complete(
        claim=claim,
        covers_through=1,
        builds_on_id=None,
        content="late",
        token_count=1,
        backend="x",
        model="x",
    )
    assert stored is False
    assert Summary.objects.get().content != "late"


@pytest.mark.django_db(transaction=True)
def test_two_workers_at_once_claim_the_summary_once(delay: Any) -> None:
    summary = pending_summary(key="race")
    barrier = threading.Barrier(2)
    claims: list[Any] = []

    def worker(name: str) -> None:
        try:
            barrier.wait()
            claims.append(services.summary_claim(summary_id=summary.pk, task_id=name))
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(claim is None for claim in claims) == [False, True]


def test_summaries_build_on_the_previous_one(counting: CountingSummarizer) -> None:
    first = pending_summary()
    run(first)
    first.refresh_from_db()
    services.conversation_append(actor=None, key="talk", messages=talk(8, start=8))
    second = Summary.objects.get(status=SummaryStatus.PENDING)
    run(second, task_id="task-2")
    second.refresh_from_db()
    assert second.status == SummaryStatus.DONE
    assert second.builds_on_id == first.pk
    assert second.covers_through > first.covers_through
    assert counting.calls == [first.covers_through, second.covers_through]


def test_nothing_to_summarize_is_recorded_as_failed_with_the_reason() -> None:
    # One huge user message: it is the current exchange, always shown verbatim.
    services.conversation_append(
        actor=None,
        key="solo",
        messages=[{"role": "user", "content": "word " * 400}],
        history_budget=100,
    )
    summary = Summary.objects.get()
    assert run(summary) == "nothing_to_summarize"
    summary.refresh_from_db()
    assert summary.status == SummaryStatus.FAILED
    assert "Nothing to summarize" in summary.error
    assert not Conversation.objects.get().summary_pending


def endpoint(url: str, **extra: Any) -> Any:
    return override_settings(
        SUMMARIZER_BASE_URL=url,
        SUMMARIZER_MODEL="fake-model",
        SUMMARIZER_API_KEY="k",
        SUMMARIZER_TIMEOUT=extra.pop("timeout", 5.0),
        SUMMARIZER_MAX_RETRIES=extra.pop("max_retries", 0),
        SUMMARIZER_TASK_RETRIES=extra.pop("task_retries", 1),
        SUMMARIZER_RETRY_BACKOFF=0,
    )


def test_the_endpoint_makes_the_summary_when_it_answers() -> None:
    with fake_llm() as llm, endpoint(llm.url):
        summary = pending_summary()
        assert run(summary) == "done"
    summary.refresh_from_db()
    assert summary.backend == "openai" and summary.model == "fake-model"
    assert summary.content == "Ann hired 40 masons for the bridge over the Tarn."
    assert summary.error == ""
    assert len(llm.requests) == 1
    sent = llm.requests[0]["messages"]
    assert sent[0]["role"] == "system" and sent[1]["role"] == "user"
    assert "Message 0" in sent[1]["content"]


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (Reply(status=500), "http_500"),
        (Reply(status=503), "http_503"),
        (Reply(status=429, headers={"Retry-After": "0"}), "http_429"),
        (Reply(delay=2.0), "timeout"),
    ],
)
def test_when_the_endpoint_keeps_failing_the_task_retries_then_falls_back(
    reply: Reply, reason: str
) -> None:
    with fake_llm() as llm, endpoint(llm.url, timeout=0.5, task_retries=2):
        llm.default = reply
        summary = pending_summary()
        assert run(summary) == "done"
    summary.refresh_from_db()
    assert summary.status == SummaryStatus.DONE
    assert summary.backend == "extractive"
    assert summary.error.startswith("fell back to the extractive summarizer after: openai: ")
    assert reason in summary.error
    assert summary.attempts == 3  # the first try and two retries
    assert len(llm.requests) == 3


def test_the_client_retries_a_429_after_its_retry_after_and_succeeds() -> None:
    replies = [Reply(status=429, headers={"Retry-After": "1"}), Reply(status=503)]
    with fake_llm(*replies) as llm, endpoint(llm.url, max_retries=2, task_retries=0):
        summary = pending_summary()
        assert run(summary) == "done"
    summary.refresh_from_db()
    assert summary.backend == "openai" and summary.attempts == 1
    assert len(llm.requests) == 3
    assert llm.times[1] - llm.times[0] >= 0.9  # it waited as Retry-After asked


def test_a_refused_summary_falls_back_at_once_without_retrying() -> None:
    with fake_llm() as llm, endpoint(llm.url, task_retries=3):
        llm.default = Reply(text="   ")
        summary = pending_summary()
        assert run(summary) == "done"
    summary.refresh_from_db()
    assert summary.backend == "extractive"
    assert "empty" in summary.error
    assert len(llm.requests) == 1 and summary.attempts == 1
