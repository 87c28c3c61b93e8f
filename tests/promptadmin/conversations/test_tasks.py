"""The summarization task: it makes the summary, never twice for one range (repeated
deliveries, two workers at once), comes back later to a summary another worker is running,
takes over a summary whose worker is gone, and falls back to the extractive summarizer when
the endpoint keeps failing, saying so."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
from celery.exceptions import Retry
from django.conf import settings
from django.db import connection
from django.db.models.functions import Now
from django.test import override_settings
from django.utils import timezone

from assembler.summarize import DEFAULT_INSTRUCTIONS
from promptadmin.celery import app as celery_app
from promptadmin.conversations import queue, services, summarizer
from promptadmin.conversations.models import Conversation, Summary, SummaryStatus
from promptadmin.conversations.queue import stale_after
from promptadmin.conversations.selectors import conversation_history
from promptadmin.conversations.tasks import (
    retry_countdown,
    summarize_conversation,
    sweep_stuck_summaries,
)
from tests.promptadmin.conversations.fake_llm import Reply, fake_llm
from tests.promptadmin.conversations.fixtures import CountingSummarizer, talk, wait_for

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


def running(summary: Summary, lease_left: float) -> None:
    """As if a worker claimed ``summary`` and last renewed its lease to run out in
    ``lease_left`` seconds (in the past when negative: that worker is gone)."""
    Summary.objects.filter(pk=summary.pk).update(
        status=SummaryStatus.RUNNING,
        attempts=1,
        task_id="first",
        started_at=Now() - timedelta(seconds=60),
        lease_until=Now() + timedelta(seconds=lease_left),
    )


@pytest.mark.parametrize("lease_left", [1, 29])
def test_a_claim_on_a_summary_whose_workers_lease_is_alive_is_busy_and_touches_nothing(
    lease_left: int,
) -> None:
    summary = pending_summary()
    running(summary, lease_left)
    claim = queue.summary_claim(summary_id=summary.pk, task_id="second")
    assert isinstance(claim, queue.Busy)
    summary.refresh_from_db()
    assert claim.lease_until == summary.lease_until
    assert summary.status == SummaryStatus.RUNNING
    assert summary.attempts == 1 and summary.task_id == "first"


@pytest.fixture
def from_a_broker() -> Iterator[mock.MagicMock]:
    """The task runs as a worker runs a delivery (not in-process); ``retry`` is recorded
    instead of sending the task back to the broker."""
    summarize_conversation.push_request(id="second", retries=0, is_eager=False)
    try:
        with mock.patch.object(summarize_conversation, "retry", side_effect=Retry) as retry:
            yield retry
    finally:
        summarize_conversation.pop_request()


def test_a_delivery_while_another_worker_holds_it_ends_without_waiting_for_it(
    counting: CountingSummarizer, from_a_broker: mock.MagicMock
) -> None:
    # Nothing to wait for: should that worker die, its lease runs out and the sweep
    # sends the task again.
    summary = pending_summary()
    running(summary, 20)
    assert summarize_conversation.run(summary.pk) == "busy"
    from_a_broker.assert_not_called()
    assert counting.calls == []
    summary.refresh_from_db()
    assert summary.status == SummaryStatus.RUNNING and summary.attempts == 1


def test_a_delivery_in_process_while_another_worker_runs_it_does_nothing(
    counting: CountingSummarizer,
) -> None:
    summary = pending_summary()
    running(summary, 20)
    assert run(summary) == "busy"
    assert counting.calls == []
    summary.refresh_from_db()
    assert summary.status == SummaryStatus.RUNNING and summary.attempts == 1


@override_settings(CELERY_TASK_TIME_LIMIT=30)
@pytest.mark.parametrize("how", ["lease ran out", "claimed before leases, past the time limit"])
def test_a_summary_whose_worker_is_gone_is_taken_over(
    counting: CountingSummarizer, how: str
) -> None:
    summary = pending_summary()
    if how == "lease ran out":
        running(summary, -1)
    else:
        Summary.objects.filter(pk=summary.pk).update(
            status=SummaryStatus.RUNNING,
            attempts=1,
            started_at=timezone.now() - timedelta(seconds=31),
        )
    assert run(summary) == "done"
    summary.refresh_from_db()
    assert summary.status == SummaryStatus.DONE and summary.attempts == 2
    assert len(counting.calls) == 1


@override_settings(CELERY_TASK_TIME_LIMIT=30)
def test_a_summary_stuck_running_whose_task_was_lost_is_made_when_asked_again(
    counting: CountingSummarizer, in_process: None, django_capture_on_commit_callbacks: Any
) -> None:
    # Killed at the hard time limit, its delivery acknowledged: no task will come.
    summary = pending_summary()
    running(summary, -1)
    with django_capture_on_commit_callbacks(execute=True):
        services.summary_request(actor=None, key="talk")
    summary.refresh_from_db()
    assert summary.status == SummaryStatus.DONE and summary.attempts == 2
    assert len(counting.calls) == 1
    assert not Conversation.objects.get().summary_pending


def test_a_worker_that_lost_its_claim_stores_nothing(counting: CountingSummarizer) -> None:
    summary = pending_summary()
    claim = queue.summary_claim(summary_id=summary.pk, task_id="old")
    assert isinstance(claim, queue.Claim)
    # Another worker takes over (the first looked gone) and finishes first.
    Summary.objects.filter(pk=summary.pk).update(lease_until=Now() - timedelta(seconds=1))
    assert run(summary, task_id="new") == "done"
    stored = queue.summary_complete(
        claim=claim,
        covers_through=1,
        builds_on_id=None,
        content="late",
        token_count=1,
        backend="x",
        model="x",
    )
    assert not stored.stored
    assert Summary.objects.get().content != "late"


@pytest.mark.django_db(transaction=True)
def test_two_workers_at_once_claim_the_summary_once(delay: Any) -> None:
    summary = pending_summary(key="race")
    barrier = threading.Barrier(2)
    claims: list[Any] = []

    def worker(name: str) -> None:
        try:
            barrier.wait()
            claims.append(queue.summary_claim(summary_id=summary.pk, task_id=name))
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(type(claim).__name__ for claim in claims) == ["Busy", "Claim"]


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


def huge_user_message(key: str = "solo") -> None:
    """A conversation of one user message over the threshold of its budget by itself: the
    current exchange, always shown verbatim, so nothing is old enough to summarize."""
    services.conversation_append(
        actor=None,
        key=key,
        messages=[{"role": "user", "content": "word " * 400}],
        history_budget=100,
    )


def test_nothing_to_summarize_leaves_no_summary_and_is_noted_on_the_conversation() -> None:
    huge_user_message()
    summary = Summary.objects.get()
    assert run(summary) == "nothing_to_summarize"
    # Nothing failed: there was nothing to do yet. No row is left to show as an error.
    assert not Summary.objects.exists()
    conversation = Conversation.objects.get()
    assert not conversation.summary_pending
    assert conversation.nothing_to_summarize_through == 1
    assert run(summary) == "nothing_to_do"  # a repeated delivery finds it gone


def test_replies_to_a_huge_user_message_ask_for_no_summary_until_the_user_speaks_again(
    counting: CountingSummarizer, django_capture_on_commit_callbacks: Any
) -> None:
    from promptadmin.conversations import tasks

    def append(role: str, content: str) -> services.AppendResult:
        with django_capture_on_commit_callbacks(execute=True):
            return services.conversation_append(
                actor=None, key="solo", messages=[{"role": role, "content": content}]
            )

    with mock.patch.object(tasks, "enqueue_summary", wraps=tasks.enqueue_summary) as enqueue:
        with django_capture_on_commit_callbacks(execute=True):
            huge_user_message()
        for n in range(5):
            assert not append("assistant", f"Reply {n}.").summary_pending
        # One task, for the first append; it found nothing, and recorded no failure.
        assert enqueue.call_count == 1
        assert not Summary.objects.exists() and counting.calls == []
        # Now the huge message is no longer the newest user message, and it is older than
        # the recent messages kept verbatim: it is summarized after all.
        append("user", "Go on.")
    assert enqueue.call_count == 2
    summary = Summary.objects.get()
    assert summary.status == SummaryStatus.DONE and summary.covers_through == 1
    assert counting.calls == [1]
    conversation = Conversation.objects.get()
    assert conversation.nothing_to_summarize_through is None
    assert not conversation.summary_pending


def test_a_user_message_sent_while_nothing_was_found_to_summarize_asks_again_at_once(
    delay: mock.MagicMock,
) -> None:
    huge_user_message()
    summary = Summary.objects.get()
    claim = queue.summary_claim(summary_id=summary.pk, task_id="t")
    assert isinstance(claim, queue.Claim)
    # The user speaks while the summary, asked for through message 1 only, is made: the
    # append asks for nothing (one is running), so finding nothing must not be the end.
    services.conversation_append(
        actor=None, key="solo", messages=[{"role": "user", "content": "Go on."}]
    )
    made = summarizer.summary_make(claim=claim, allow_fallback=True)
    assert made.outcome == "nothing_to_summarize"
    again = Summary.objects.get()
    assert again.status == SummaryStatus.PENDING and again.requested_through == 2
    assert made.next_summary == again.pk  # for the task to send
    conversation = Conversation.objects.get()
    assert conversation.summary_pending
    assert conversation.nothing_to_summarize_through is None


def test_a_summary_made_forgets_that_nothing_could_be_summarized(
    counting: CountingSummarizer,
) -> None:
    summary = pending_summary()
    # As if an earlier summary had found nothing: one made since starts afresh.
    Conversation.objects.update(nothing_to_summarize_through=2)
    assert run(summary) == "done"
    assert Conversation.objects.get().nothing_to_summarize_through is None


def test_with_a_budget_grown_since_it_was_asked_for_replies_alone_bring_a_summary(
    delay: mock.MagicMock, django_capture_on_commit_callbacks: Any
) -> None:
    summary = pending_summary(n=4, budget=200)
    services.conversation_append(
        actor=None,
        key="talk",
        messages=[{"role": "assistant", "content": "Noted."}],
        history_budget=1000,
    )
    # Every message now fits the larger part kept verbatim: nothing to summarize, but not
    # because of the newest user message, so replies alone can change that.
    assert run(summary) == "nothing_to_summarize"
    assert Conversation.objects.get().nothing_to_summarize_through is None
    assert not Summary.objects.exists()
    replies = [{**message, "role": "assistant"} for message in talk(11, start=4)]
    with django_capture_on_commit_callbacks(execute=True):
        result = services.conversation_append(actor=None, key="talk", messages=replies)
    assert result.summary_pending
    again = Summary.objects.get()
    delay.assert_called_once_with(again.pk)
    assert run(again, task_id="task-2") == "done"


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
    assert summary.drawn_from is None  # the endpoint writes its own sentences


def test_an_extractive_summary_records_the_messages_it_drew_from_across_its_range(
    extractive_only: None, delay: mock.MagicMock
) -> None:
    services.conversation_append(actor=None, key="long", messages=talk(60), history_budget=2000)
    summary = Summary.objects.get()
    assert run(summary) == "done"
    summary.refresh_from_db()
    covers = summary.covers_through
    assert summary.backend == "extractive" and covers >= 30
    drawn = summary.drawn_from
    assert drawn == sorted(set(drawn)) and drawn[0] >= 1 and drawn[-1] <= covers
    assert drawn[0] <= covers // 3 and drawn[-1] > 2 * covers // 3
    assert any(covers // 3 < position <= 2 * covers // 3 for position in drawn)
    # Each line names its message (talk() counts from 0: message n is at position n + 1).
    named = [
        int(line.split("Message ")[1].split(":")[0]) + 1 for line in summary.content.splitlines()
    ]
    assert sorted(set(named)) == drawn


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


def test_from_a_broker_a_failing_endpoint_is_retried_later_with_backoff_and_jitter(
    from_a_broker: mock.MagicMock,
) -> None:
    # In a worker the retry goes back through the broker after a growing, random wait;
    # the summary is pending again meanwhile, and the endpoint was asked once.
    with (
        fake_llm() as llm,
        endpoint(llm.url, task_retries=2),
        override_settings(SUMMARIZER_RETRY_BACKOFF=5),
    ):
        llm.default = Reply(status=503)
        summary = pending_summary()
        with pytest.raises(Retry):
            summarize_conversation.run(summary.pk)
    from_a_broker.assert_called_once()
    assert 0 <= from_a_broker.call_args.kwargs["countdown"] <= 5
    assert len(llm.requests) == 1
    summary.refresh_from_db()
    assert summary.status == SummaryStatus.PENDING and "http_503" in summary.error


def test_retry_waits_grow_exponentially_and_are_jittered() -> None:
    with override_settings(SUMMARIZER_RETRY_BACKOFF=5):
        waits = {retries: [retry_countdown(retries) for _ in range(200)] for retries in range(4)}
    for retries, drawn in waits.items():
        assert all(0 <= wait <= 5 * 2**retries for wait in drawn)
        assert len(set(drawn)) > 150  # random, so workers that failed together spread out
    assert max(waits[3]) > 5 * 2**2  # later retries may wait longer than earlier ones can


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_a_request_the_endpoint_refuses_falls_back_at_once_saying_why(status: int) -> None:
    # A bad key or an unknown model will not be fixed by asking again: no retry.
    with fake_llm() as llm, endpoint(llm.url, task_retries=3):
        llm.default = Reply(status=status)
        summary = pending_summary()
        assert run(summary) == "done"
    summary.refresh_from_db()
    assert summary.status == SummaryStatus.DONE and summary.backend == "extractive"
    assert summary.error.startswith(
        f"fell back to the extractive summarizer after: openai: http_{status}: "
    )
    assert summary.attempts == 1 and len(llm.requests) == 1


@pytest.mark.parametrize(
    ("lease_left", "skew", "outcome"),
    [(10, 3600, "Busy"), (-1, -3600, "Claim")],
    ids=["alive-clock-ahead", "gone-clock-behind"],
)
def test_a_worker_judges_whether_a_lease_ran_out_by_the_databases_clock(
    lease_left: int, skew: int, outcome: str
) -> None:
    # A worker whose clock runs ahead must not take over a run whose worker is alive; one
    # whose clock runs behind must still take over one whose worker is gone.
    summary = pending_summary()
    running(summary, lease_left)
    skewed = timezone.now() + timedelta(seconds=skew)
    with mock.patch.object(timezone, "now", return_value=skewed):
        claim = queue.summary_claim(summary_id=summary.pk, task_id="second")
    assert type(claim).__name__ == outcome
    if isinstance(claim, queue.Claim):
        summary.refresh_from_db()
        # The new start and lease are the database's time too, not this worker's.
        assert summary.started_at is not None and summary.lease_until is not None
        assert abs((summary.started_at - (skewed - timedelta(seconds=skew))).total_seconds()) < 60
        assert summary.lease_until - summary.started_at == timedelta(
            seconds=settings.SUMMARIZER_LEASE_SECONDS
        )


@override_settings(
    SUMMARIZER_RETRY_BACKOFF=5, CELERY_TASK_TIME_LIMIT=600, CELERY_VISIBILITY_TIMEOUT=900
)
def test_a_retry_never_waits_so_long_that_the_broker_hands_the_task_out_again() -> None:
    # Redis gives an unacknowledged task to another worker after the visibility timeout;
    # a retry waits its countdown and then runs up to the time limit, unacknowledged all
    # along. Many task retries must not push it past that point.
    for retries in (6, 10, 5000):
        waits = [retry_countdown(retries) for _ in range(100)]
        assert all(0 <= wait <= 900 - 600 for wait in waits)
        assert max(waits) > 150  # still spread out, up to the ceiling


@pytest.mark.postgres  # the summary runs on another thread, with its own connection
@pytest.mark.django_db(transaction=True)
def test_without_a_broker_an_append_never_waits_for_the_summarizer(in_process: None) -> None:
    # `make run`: no broker, tasks in this process. The endpoint holds its answer until
    # released; the append has answered by then.
    held = threading.Event()
    try:
        with (
            fake_llm(Reply(hold=held)) as llm,
            endpoint(llm.url, timeout=30),
            override_settings(SUMMARIZER_IN_BACKGROUND=True),
        ):
            result = services.conversation_append(
                actor=None, key="embedded", messages=talk(8), history_budget=200
            )
            assert result.summary_pending
            assert llm.received.wait(30), "the summarizer was never asked"
            assert llm.answered == 0  # still held: the append did not wait for it
            summary = Summary.objects.get()
            assert summary.status == SummaryStatus.RUNNING
            held.set()
            wait_for(done("embedded"), 30, "the summary made in the background")
        summary.refresh_from_db()
        assert summary.backend == "openai" and summary.attempts == 1
        assert not Conversation.objects.get().summary_pending
    finally:
        held.set()


def done(key: str) -> Any:
    return lambda: Summary.objects.filter(conversation__key=key, status=SummaryStatus.DONE).exists()


def summarizer_version(system: str, *, labels: tuple[str, ...] = ("production",)) -> None:
    """A new version of the registered summarizer prompt (the prompt made on first use),
    committed so that fetches see it."""
    from promptadmin.prompts.models import Prompt
    from promptadmin.prompts.services.prompts import prompt_create, prompt_version_create

    prompt = Prompt.objects.filter(component="conversations", agent="summarizer").first()
    if prompt is None:
        prompt = prompt_create(actor=None, component="conversations", agent="summarizer")
    prompt_version_create(
        actor=None, prompt=prompt, system=system, user_templates={}, labels=labels
    )


def system_sent(llm: Any) -> str:
    message = llm.requests[-1]["messages"][0]
    assert message["role"] == "system"
    return str(message["content"])


def test_the_summarizer_takes_its_instructions_from_the_registered_prompts_production_version(
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        summarizer_version("Summarize the voyage as a ship's log.")
    with fake_llm() as llm, endpoint(llm.url):
        first = pending_summary(key="log")
        assert run(first) == "done"
        assert system_sent(llm).startswith("Summarize the voyage as a ship's log.\n\n")
        # A new version labelled production changes what the next summary is told.
        with django_capture_on_commit_callbacks(execute=True):
            summarizer_version("Summarize the voyage as a bard's song.")
        second = pending_summary(key="song")
        assert run(second, task_id="task-2") == "done"
        assert system_sent(llm).startswith("Summarize the voyage as a bard's song.\n\n")
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.prompt_name, first.prompt_version) == ("conversations/summarizer", 1)
    assert (second.prompt_name, second.prompt_version) == ("conversations/summarizer", 2)


@pytest.mark.parametrize("registered", [False, True], ids=["no-prompt", "no-production-label"])
def test_without_a_production_summarizer_prompt_the_built_in_instructions_are_sent(
    django_capture_on_commit_callbacks: Any, registered: bool
) -> None:
    if registered:
        with django_capture_on_commit_callbacks(execute=True):
            summarizer_version("Summarize tersely.", labels=("staging",))
    with fake_llm() as llm, endpoint(llm.url):
        summary = pending_summary()
        assert run(summary) == "done"
    assert system_sent(llm).startswith(DEFAULT_INSTRUCTIONS + "\n\n")
    summary.refresh_from_db()
    assert summary.backend == "openai"
    assert (summary.prompt_name, summary.prompt_version) == ("", None)


@override_settings(SUMMARIZER_PROMPT="game/narrator/recap")
def test_the_summarizer_prompt_is_a_setting_and_a_task_type_falls_back_to_its_default(
    django_capture_on_commit_callbacks: Any,
) -> None:
    from promptadmin.prompts.services.prompts import prompt_create, prompt_version_create

    with django_capture_on_commit_callbacks(execute=True):
        prompt = prompt_create(actor=None, component="game", agent="narrator")
        prompt_version_create(
            actor=None,
            prompt=prompt,
            system="Recap the story so far.",
            user_templates={},
            labels=["production"],
        )
    with fake_llm() as llm, endpoint(llm.url):
        summary = pending_summary()
        assert run(summary) == "done"
    assert system_sent(llm).startswith("Recap the story so far.\n\n")
    summary.refresh_from_db()
    assert (summary.prompt_name, summary.prompt_version) == ("game/narrator", 1)


def test_a_summary_the_extractive_summarizer_made_names_no_prompt(
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        summarizer_version("Summarize tersely.")
    with fake_llm() as llm, endpoint(llm.url, task_retries=0):
        llm.default = Reply(status=503)
        summary = pending_summary()
        assert run(summary) == "done"
    summary.refresh_from_db()
    assert summary.backend == "extractive"
    assert (summary.prompt_name, summary.prompt_version) == ("", None)


# A worker that dies: its lease runs out, and the sweep sends the task again.


@pytest.mark.postgres  # the lease is renewed from another thread, with its own connection
@pytest.mark.django_db(transaction=True)
@override_settings(SUMMARIZER_LEASE_SECONDS=3)
def test_a_worker_renews_its_lease_while_it_runs_and_stops_when_done(
    delay: mock.MagicMock,
) -> None:
    summary = pending_summary()
    claim = queue.summary_claim(summary_id=summary.pk, task_id="t")
    assert isinstance(claim, queue.Claim)
    leases = []
    with queue.lease_kept(claim):
        for _ in range(3):
            time.sleep(1.2)  # renewed every second
            summary.refresh_from_db()
            leases.append(summary.lease_until)
    assert leases == sorted(set(leases))  # renewed each time, never back
    assert queue.summary_claim(summary_id=summary.pk, task_id="second") == queue.Busy(leases[-1])
    time.sleep(1.2)
    summary.refresh_from_db()
    assert summary.lease_until == leases[-1]  # no longer renewed once the block ended


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@override_settings(SUMMARIZER_LEASE_SECONDS=3)
def test_a_lease_is_not_renewed_for_a_claim_another_worker_took_over(
    delay: mock.MagicMock,
) -> None:
    summary = pending_summary()
    old = queue.summary_claim(summary_id=summary.pk, task_id="old")
    assert isinstance(old, queue.Claim)
    Summary.objects.filter(pk=summary.pk).update(lease_until=Now() - timedelta(seconds=1))
    new = queue.summary_claim(summary_id=summary.pk, task_id="new")
    assert isinstance(new, queue.Claim) and new.took_over
    taken = Summary.objects.get().lease_until
    with queue.lease_kept(old):
        time.sleep(1.2)
    assert Summary.objects.get().lease_until == taken


def test_the_sweep_sends_again_the_task_of_each_stuck_summary_once_per_lease(
    delay: mock.MagicMock, django_assert_num_queries: Any
) -> None:
    gone, alive, waiting, young, lost = (pending_summary(key) for key in "abcde")
    running(gone, -1)  # its worker died
    running(alive, 20)
    # Given back to be retried by a worker that never came back to it.
    Summary.objects.filter(pk=waiting.pk).update(lease_until=Now() - timedelta(seconds=1))
    # Never claimed: its task waits on the broker, or was lost with it.
    Summary.objects.filter(pk=lost.pk).update(created_at=Now() - stale_after() * 2)
    with django_assert_num_queries(4):  # the select, the update, and a savepoint around
        assert sweep_stuck_summaries() == 3
    assert sorted(delay.call_args_list) == sorted(
        mock.call(summary.pk) for summary in (gone, waiting, lost)
    )
    # Sent again: not again within a lease (nor the stale window, for the one unclaimed).
    delay.reset_mock()
    assert sweep_stuck_summaries() == 0
    Summary.objects.update(resent_at=Now() - queue.lease() - timedelta(seconds=1))
    assert sweep_stuck_summaries() == 2
    assert sorted(delay.call_args_list) == sorted(
        mock.call(summary.pk) for summary in (gone, waiting)
    )
    assert young.pk not in [call.args[0] for call in delay.call_args_list]


def test_the_sweep_costs_the_same_whatever_the_number_of_stuck_summaries(
    delay: mock.MagicMock, django_assert_num_queries: Any
) -> None:
    for key in range(20):
        running(pending_summary(f"k{key}"), -1)
    with django_assert_num_queries(4):
        assert sweep_stuck_summaries() == 20


def test_a_summary_given_back_for_a_retry_holds_a_lease_until_the_retry_and_one_more(
    delay: mock.MagicMock,
) -> None:
    summary = pending_summary()
    claim = queue.summary_claim(summary_id=summary.pk, task_id="t")
    assert isinstance(claim, queue.Claim)
    queue.summary_release(claim=claim, error="openai: timeout", retry_in=40)
    released = Summary.objects.annotate(now=Now()).get()
    assert released.status == SummaryStatus.PENDING
    expected = released.now + timedelta(seconds=40) + queue.lease()
    assert abs((released.lease_until - expected).total_seconds()) < 5
    assert sweep_stuck_summaries() == 0


def test_celery_beat_runs_the_sweep_more_often_than_once_a_minute() -> None:
    (entry,) = settings.CELERY_BEAT_SCHEDULE.values()
    assert entry["task"] == sweep_stuck_summaries.name
    assert entry["task"] in celery_app.tasks
    # A summary whose worker died is taken over within a lease and a sweep.
    assert settings.SUMMARIZER_LEASE_SECONDS + entry["schedule"] < 60
