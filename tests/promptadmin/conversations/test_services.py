"""Appending messages and asking for summaries: positions, validation, the threshold
trigger and its database-level guards, query counts."""

from __future__ import annotations

import contextlib
import threading
from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models.functions import Now
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from promptadmin.content.services.api_keys import api_key_create
from promptadmin.conversations import queue, services, summarizer
from promptadmin.conversations.models import (
    ACTIVE_STATUSES,
    Conversation,
    Message,
    Summary,
    SummaryStatus,
)
from tests.factories import UserFactory
from tests.promptadmin.conversations.fixtures import talk

pytestmark = pytest.mark.django_db


def append(key: str, messages: list[dict[str, str]], **kwargs: Any) -> services.AppendResult:
    return services.conversation_append(actor=None, key=key, messages=messages, **kwargs)


def test_append_creates_the_conversation_and_numbers_messages_from_one() -> None:
    first = append("c-1", talk(2), history_budget=5000)
    second = append("c-1", talk(3))
    assert first.positions == [1, 2] and second.positions == [3, 4, 5]
    conversation = Conversation.objects.get(key="c-1")
    assert conversation.history_budget == 5000
    assert conversation.last_position == 5
    assert list(Message.objects.values_list("position", flat=True)) == [1, 2, 3, 4, 5]
    total = sum(m.token_count for m in Message.objects.all())
    assert conversation.unsummarized_tokens == total


def test_messages_are_stored_exactly_as_sent() -> None:
    text = "  Ünïcode, emoji 🐉 and\ttabs, kept as written.\n"
    append("c-2", [{"role": "user", "content": text}])
    assert Message.objects.get().content == text


@pytest.mark.parametrize(
    ("key", "messages", "field"),
    [
        ("", [{"role": "user", "content": "hi"}], "key"),
        ("a b", [{"role": "user", "content": "hi"}], "key"),
        ("x" * 201, [{"role": "user", "content": "hi"}], "key"),
        ("ok", [], "messages"),
        ("ok", [{"role": "robot", "content": "hi"}], "messages.0.role"),
        ("ok", [{"role": "user", "content": "a\x00b"}], "messages.0.content"),
        ("ok", [{"role": "user", "content": "a\ud800b"}], "messages.0.content"),
        ("ok", [{"role": "user", "content": "   "}], "messages.0.content"),
        ("ok", [{"role": "user", "content": "x" * 100_001}], "messages.0.content"),
        ("ok", [{"role": "user", "content": 5}], "messages.0.content"),
        ("ok", [{"role": "user", "content": "hi"}] * 101, "messages"),
    ],
)
def test_bad_input_is_refused_naming_the_field_and_stores_nothing(
    key: str, messages: list[dict[str, Any]], field: str
) -> None:
    with pytest.raises(ValidationError) as error:
        append(key, messages)
    assert field in error.value.message_dict
    assert not Message.objects.exists() and not Conversation.objects.exists()


@pytest.mark.parametrize("budget", [0, -1, 1_000_001, True, 2.5])
def test_a_history_budget_out_of_range_is_refused(budget: Any) -> None:
    with pytest.raises(ValidationError) as error:
        append("ok", talk(1), history_budget=budget)
    assert "history_budget" in error.value.message_dict


def test_no_summary_is_asked_for_below_the_threshold(delay: mock.MagicMock) -> None:
    result = append("c-3", talk(2), history_budget=10_000)
    assert not result.summary_pending
    assert not Summary.objects.exists()
    delay.assert_not_called()


def test_passing_the_threshold_enqueues_one_summary_after_commit(
    django_capture_on_commit_callbacks: Any, delay: mock.MagicMock
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        result = append("c-4", talk(4), history_budget=200)
    assert Conversation.objects.get().unsummarized_tokens > 0.8 * 200
    assert result.summary_pending
    summary = Summary.objects.get()
    assert summary.status == SummaryStatus.PENDING
    assert summary.requested_through == 4
    delay.assert_called_once_with(summary.pk)


def test_the_task_is_not_enqueued_when_the_append_rolls_back(
    django_capture_on_commit_callbacks: Any, delay: mock.MagicMock
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        try:
            with transaction.atomic():
                append("c-5", talk(4), history_budget=200)
                raise RuntimeError("rolled back")
        except RuntimeError:
            pass
    delay.assert_not_called()
    assert not Summary.objects.exists()


def test_a_newer_request_supersedes_the_pending_one_instead_of_adding_another(
    django_capture_on_commit_callbacks: Any, delay: mock.MagicMock
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        append("c-6", talk(4), history_budget=200)
        append("c-6", talk(2, start=4))
        summary_id = services.summary_request(actor=None, key="c-6")
    summary = Summary.objects.get()
    assert summary_id == summary.pk
    assert summary.requested_through == 6
    # Once for the new summary, once more when asked explicitly (a lost task is re-sent).
    assert delay.call_count == 2


def test_no_request_is_made_while_a_summary_is_running(
    django_capture_on_commit_callbacks: Any, delay: mock.MagicMock
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        append("c-7", talk(4), history_budget=200)
    Summary.objects.update(status=SummaryStatus.RUNNING, started_at=timezone.now())
    with django_capture_on_commit_callbacks(execute=True):
        assert services.summary_request(actor=None, key="c-7") is None
    summary = Summary.objects.get()
    assert summary.requested_through == 4  # the running one's range is left alone
    assert delay.call_count == 1


def test_a_summary_whose_workers_lease_ran_out_is_sent_again_by_an_append_and_a_request(
    django_capture_on_commit_callbacks: Any, delay: mock.MagicMock
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        append("c-13", talk(4), history_budget=200)
    summary = Summary.objects.get()
    # Its worker was killed, and its task is gone with it (or held by the broker).
    Summary.objects.update(
        status=SummaryStatus.RUNNING,
        attempts=1,
        started_at=Now() - timedelta(seconds=40),
        lease_until=Now() - timedelta(seconds=1),
    )
    delay.reset_mock()
    with django_capture_on_commit_callbacks() as callbacks:
        append("c-13", talk(1, start=4))
    delay.assert_not_called()  # only once the append is committed
    for callback in callbacks:
        callback()
    delay.assert_called_once_with(summary.pk)
    with django_capture_on_commit_callbacks(execute=True):
        assert services.summary_request(actor=None, key="c-13") is None
    assert delay.call_args_list == [mock.call(summary.pk)] * 2
    summary.refresh_from_db()
    assert summary.status == SummaryStatus.RUNNING  # the delivery takes it over
    assert summary.requested_through == 4 and Summary.objects.count() == 1


@override_settings(CELERY_TASK_TIME_LIMIT=30)
def test_a_summary_pending_past_the_time_limit_is_sent_again_by_the_next_append(
    django_capture_on_commit_callbacks: Any, delay: mock.MagicMock
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        append("c-14", talk(4), history_budget=200)
    summary = Summary.objects.get()
    # The broker lost its task: it has waited longer than any task may run.
    Summary.objects.update(created_at=timezone.now() - timedelta(seconds=31))
    delay.reset_mock()
    with django_capture_on_commit_callbacks(execute=True):
        append("c-14", talk(1, start=4))
    delay.assert_called_once_with(summary.pk)
    # A request sends it once, not twice (it is also the pending one it re-sends).
    delay.reset_mock()
    with django_capture_on_commit_callbacks(execute=True):
        assert services.summary_request(actor=None, key="c-14") == summary.pk
    delay.assert_called_once_with(summary.pk)


@pytest.mark.postgres  # SQLite has no row locks (no FOR UPDATE) to order
def test_storing_a_result_locks_the_conversation_before_the_summary(
    django_capture_on_commit_callbacks: Any, delay: mock.MagicMock
) -> None:
    # A request locks the conversation, then (its upsert) the active summary; storing a
    # result in the other order could deadlock with it.
    with django_capture_on_commit_callbacks(execute=True):
        append("c-15", talk(4), history_budget=200)
    summary = Summary.objects.get()
    claim = queue.summary_claim(summary_id=summary.pk, task_id="t")
    assert isinstance(claim, queue.Claim)
    with CaptureQueriesContext(connection) as queries:
        queue.summary_fail(claim=claim, error="boom")
    locks = [q["sql"] for q in queries.captured_queries if "FOR UPDATE" in q["sql"]]
    assert [("conversations_conversation" in sql) for sql in locks] == [True, False], locks


def test_the_database_refuses_a_second_active_summary_for_a_conversation() -> None:
    conversation = Conversation.objects.create(key="c-8")
    now = timezone.now()
    Summary.objects.create(conversation=conversation, requested_through=1, created_at=now)
    with pytest.raises(IntegrityError), transaction.atomic():
        Summary.objects.create(
            conversation=conversation,
            requested_through=2,
            status=SummaryStatus.RUNNING,
            created_at=now,
        )


def test_the_database_refuses_two_summaries_of_the_same_range() -> None:
    conversation = Conversation.objects.create(key="c-9")
    now = timezone.now()
    for status in (SummaryStatus.DONE, SummaryStatus.DONE):
        kwargs = dict(conversation=conversation, requested_through=3, covers_through=3)
        if Summary.objects.exists():
            with pytest.raises(IntegrityError), transaction.atomic():
                Summary.objects.create(status=status, created_at=now, **kwargs)
        else:
            Summary.objects.create(status=status, created_at=now, **kwargs)


def test_appending_costs_one_query_more_only_when_a_summary_is_asked_for(
    django_assert_num_queries: Any, delay: mock.MagicMock
) -> None:
    append("c-10", talk(1), history_budget=100_000)
    # Lock the conversation, insert the messages, update its counters; inside a savepoint.
    with django_assert_num_queries(5):
        append("c-10", talk(2, start=1))
    append("c-11", talk(1), history_budget=120)
    # The same, plus the one guarded statement that asks for a summary.
    with (
        django_assert_num_queries(6),
        mock.patch("promptadmin.conversations.tasks.summarize_conversation.delay"),
    ):
        result = append("c-11", talk(2, start=1))
    assert result.summary_pending
    # Once one is pending, appending is back to the cheap path. When the summary is stuck
    # running (the locked read finds it), the append that sends its task again records
    # when, one query more; the next ones in that window are on the cheap path again.
    with django_assert_num_queries(5):
        append("c-11", talk(1, start=3))
    Summary.objects.update(
        status=SummaryStatus.RUNNING, started_at=timezone.now() - timedelta(days=1)
    )
    with django_assert_num_queries(6):
        append("c-11", talk(1, start=4))
    with django_assert_num_queries(5):
        append("c-11", talk(1, start=5))


def test_while_nothing_can_be_summarized_replies_stay_on_the_cheap_path(
    django_assert_num_queries: Any, delay: mock.MagicMock
) -> None:
    # One user message over the threshold by itself: a summary asked for finds nothing.
    huge = [{"role": "user", "content": "word " * 400}]
    append("c-19", huge, history_budget=100)
    claim = queue.summary_claim(summary_id=Summary.objects.get().pk, task_id="t")
    assert isinstance(claim, queue.Claim)
    assert (
        summarizer.summary_make(claim=claim, allow_fallback=True).outcome == "nothing_to_summarize"
    )
    # Replies cannot change that: they ask for nothing, and cost no query more.
    for n in range(3):
        with django_assert_num_queries(5):
            result = append("c-19", [{"role": "assistant", "content": f"Reply {n}."}])
        assert not result.summary_pending
    assert not Summary.objects.exists()
    # A user message can: the same query more as any append that asks for a summary.
    with django_assert_num_queries(6):
        result = append("c-19", [{"role": "user", "content": "Go on."}])
    assert result.summary_pending
    assert Summary.objects.get().status == SummaryStatus.PENDING


@override_settings(SUMMARIZER_THRESHOLD=0.3)
def test_no_summary_is_asked_for_while_every_message_is_kept_verbatim_anyway(
    counting: Any, django_capture_on_commit_callbacks: Any
) -> None:
    # Half the budget is kept verbatim (summary_targets): a threshold below that would ask
    # for summaries of nothing.
    with django_capture_on_commit_callbacks(execute=True):
        result = append("c-20", talk(2), history_budget=300)
    conversation = Conversation.objects.get()
    assert 0.3 * 300 < conversation.unsummarized_tokens <= 300 // 2
    assert not result.summary_pending and not Summary.objects.exists()
    # Past half the budget the oldest message is out of the recent part: summarized.
    with django_capture_on_commit_callbacks(execute=True):
        append("c-20", talk(1, start=2))
    summary = Summary.objects.get()
    assert summary.status == SummaryStatus.DONE and summary.covers_through == 1


def test_a_broker_that_is_down_never_fails_the_append_and_asking_again_resends(
    django_capture_on_commit_callbacks: Any,
) -> None:
    from promptadmin.celery import app

    eager, app.conf.task_always_eager = app.conf.task_always_eager, False
    try:
        with mock.patch(
            "promptadmin.conversations.tasks.summarize_conversation.delay",
            side_effect=ConnectionError("broker down"),
        ) as send:
            with django_capture_on_commit_callbacks(execute=True):
                result = append("c-12", talk(4), history_budget=200)
            assert result.positions == [1, 2, 3, 4]
            assert Summary.objects.get().status == SummaryStatus.PENDING
            send.side_effect = None
            with django_capture_on_commit_callbacks(execute=True):
                services.summary_request(actor=None, key="c-12")
        assert send.call_count == 2
        send.assert_called_with(Summary.objects.get().pk)
    finally:
        app.conf.task_always_eager = eager


@pytest.mark.postgres  # SQLite serialises writers: no race to lose
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("existing", [False, True], ids=["new-key", "existing-key"])
def test_appends_at_once_to_one_conversation_get_contiguous_positions_and_one_summary(
    existing: bool, delay: mock.MagicMock, monkeypatch: pytest.MonkeyPatch
) -> None:
    if existing:
        append("race", talk(1), history_budget=200)
    before = Message.objects.count()
    barrier = threading.Barrier(2)
    # Widen the race: each append lingers after reading the conversation until the other
    # has read it too, which the row lock prevents (the wait then runs out, harmlessly).
    # Without the lock both would read the same last position here.
    read = threading.Barrier(2)
    locked = queue.get_or_create_locked

    def lingering(*args: Any) -> Any:
        located = locked(*args)
        with contextlib.suppress(threading.BrokenBarrierError):
            read.wait(timeout=0.5)
        return located

    monkeypatch.setattr(queue, "get_or_create_locked", lingering)
    results: list[services.AppendResult] = []
    failures: list[BaseException] = []

    def appender(start: int) -> None:
        try:
            barrier.wait()
            # Each append alone passes the threshold of the budget.
            results.append(append("race", talk(4, start=start), history_budget=200))
        except BaseException as error:  # reported below, not lost in the thread
            failures.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=appender, args=(start,)) for start in (10, 20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    positions = sorted(p for result in results for p in result.positions)
    assert positions == list(range(before + 1, before + 9))
    # Each append's messages are one run of positions, never interleaved with the other's.
    for result in results:
        assert result.positions == list(range(result.positions[0], result.positions[0] + 4))
    assert Conversation.objects.count() == 1
    conversation = Conversation.objects.get()
    assert conversation.last_position == before + 8
    stored = list(Message.objects.order_by("position").values_list("position", flat=True))
    assert stored == list(range(1, before + 9))
    assert Summary.objects.filter(status__in=ACTIVE_STATUSES).count() == 1
    assert conversation.summary_pending


@override_settings(CELERY_TASK_TIME_LIMIT=30)
def test_a_stuck_summary_is_sent_again_once_per_window_however_many_appends_come(
    django_capture_on_commit_callbacks: Any, delay: mock.MagicMock
) -> None:
    # A backlog on the broker must not grow by one task per append.
    with django_capture_on_commit_callbacks(execute=True):
        append("c-16", talk(4), history_budget=200)
    summary = Summary.objects.get()
    Summary.objects.update(created_at=Now() - timedelta(seconds=31))
    delay.reset_mock()
    for start in range(4, 9):
        with django_capture_on_commit_callbacks(execute=True):
            append("c-16", talk(1, start=start))
    delay.assert_called_once_with(summary.pk)
    # A window after that re-send, the summary still stuck: sent once more.
    Summary.objects.update(resent_at=Now() - timedelta(seconds=31))
    delay.reset_mock()
    for start in range(9, 12):
        with django_capture_on_commit_callbacks(execute=True):
            append("c-16", talk(1, start=start))
    delay.assert_called_once_with(summary.pk)


def clock_off_by(seconds: float) -> Any:
    """This process's clock ``seconds`` away from the database's (a web process or a
    worker on a host whose clock drifted)."""
    skewed = timezone.now() + timedelta(seconds=seconds)
    return mock.patch.object(timezone, "now", return_value=skewed)


@override_settings(CELERY_TASK_TIME_LIMIT=30)
@pytest.mark.parametrize(
    ("age", "skew", "sent"),
    [(10, 3600, False), (31, -3600, True)],
    ids=["young-clock-ahead", "stale-clock-behind"],
)
def test_whether_a_summary_is_stuck_is_judged_by_the_databases_clock(
    django_capture_on_commit_callbacks: Any,
    delay: mock.MagicMock,
    age: int,
    skew: int,
    sent: bool,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        append("c-17", talk(4), history_budget=200)
    summary = Summary.objects.get()
    Summary.objects.update(created_at=Now() - timedelta(seconds=age))
    delay.reset_mock()
    with clock_off_by(skew), django_capture_on_commit_callbacks(execute=True):
        append("c-17", talk(1, start=4))
    assert delay.call_args_list == ([mock.call(summary.pk)] if sent else [])


@override_settings(SUMMARIZER_MAX_INPUT_TOKENS=64, SUMMARIZER_BASE_URL="")
def test_a_message_longer_than_one_summarization_reads_is_recorded_as_read_in_part(
    delay: mock.MagicMock,
) -> None:
    # Its summary covers the whole message, from its beginning only: that must show.
    huge = "The envoy listed every tithe of the valley, one by one. " * 40
    append(
        "c-18",
        [
            {"role": "user", "content": huge},
            {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": "Go on."},
        ],
        history_budget=200,
    )
    summary = Summary.objects.get()
    claim = queue.summary_claim(summary_id=summary.pk, task_id="t")
    assert isinstance(claim, queue.Claim)
    assert summarizer.summary_make(claim=claim, allow_fallback=True).outcome == "done"
    summary.refresh_from_db()
    assert summary.status == SummaryStatus.DONE and summary.covers_through == 1
    assert summary.message_cut == 1 and summary.previous_cut is False
    # A message that fits is read whole, and says so.
    append("c-19", talk(8), history_budget=200)
    other = Summary.objects.get(conversation__key="c-19")
    claim = queue.summary_claim(summary_id=other.pk, task_id="t")
    assert isinstance(claim, queue.Claim)
    summarizer.summary_make(claim=claim, allow_fallback=True)
    other.refresh_from_db()
    assert other.status == SummaryStatus.DONE and other.message_cut is None


def nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize(
    "metadata",
    [
        {"score": float("nan")},
        {"n": 2**64},
        {"text": "a\x00b"},
        {"text": "a\ud800b"},
        {"a": nested(40)},
        ["not", "an", "object"],
    ],
    ids=["nan", "over-64-bits", "nul", "lone-surrogate", "too-deep", "not-an-object"],
)
def test_conversation_metadata_is_checked_like_every_stored_json_value(metadata: Any) -> None:
    conversation = Conversation(key="c-20", metadata=metadata)
    with pytest.raises(ValidationError) as error:
        conversation.full_clean()
    assert "metadata" in error.value.message_dict


def person(role: str) -> Any:
    user = UserFactory(username=f"{role}-person")
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def key(scope: str) -> Any:
    return api_key_create(actor=None, name=f"{scope}-service", scope=scope)[0]


@pytest.mark.parametrize("who", ["viewer", "read key"])
def test_viewers_and_read_keys_may_neither_append_nor_ask_for_a_summary(
    who: str, delay: mock.MagicMock
) -> None:
    append("c-21", talk(6), history_budget=500)
    actor = person("viewer") if who == "viewer" else key("read")
    with pytest.raises(PermissionDenied):
        services.conversation_append(actor=actor, key="c-21", messages=talk(1, start=6))
    with pytest.raises(PermissionDenied):
        services.conversation_append(actor=actor, key="c-22", messages=talk(1))
    with pytest.raises(PermissionDenied):
        services.summary_request(actor=actor, key="c-21")
    assert Message.objects.count() == 6
    assert not Conversation.objects.filter(key="c-22").exists()
    assert not Summary.objects.exists()


def test_appends_and_summary_requests_record_who_made_them(delay: mock.MagicMock) -> None:
    pipeline = key("write")
    author = person("author")
    services.conversation_append(actor=pipeline, key="c-23", messages=talk(4), history_budget=500)
    services.conversation_append(actor=author, key="c-23", messages=talk(2, start=4))
    conversation = Conversation.objects.get(key="c-23")
    label = "API key 'write-service' (" + pipeline.prefix + ")"
    assert (conversation.created_by, conversation.created_via) == (None, label)
    by_position = {m.position: (m.created_by, m.created_via) for m in Message.objects.all()}
    assert by_position == {
        **{position: (None, label) for position in range(1, 5)},
        5: (author, ""),
        6: (author, ""),
    }
    services.summary_request(actor=author, key="c-23")
    summary = Summary.objects.get()
    assert (summary.requested_by, summary.requested_via, summary.requester) == (
        author,
        "",
        "author-person",
    )
    # A newer request supersedes the pending one, and is who asked.
    services.summary_request(actor=pipeline, key="c-23")
    summary.refresh_from_db()
    assert (summary.requested_by, summary.requester) == (None, label)


def test_a_summary_the_threshold_asked_for_records_nobody(delay: mock.MagicMock) -> None:
    services.conversation_append(
        actor=person("author"), key="c-24", messages=talk(8), history_budget=200
    )
    summary = Summary.objects.get()
    assert summary.requester is None and summary.requested_by is None
