"""Long conversations: appending to one and reading its history cost the same queries at
100 and at 10,000 messages, and what a read loads is bounded by the budget, never by the
conversation's length. (``make bench-conversations`` times both at 100,000.)"""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
from django.db import connection
from django.db.models.functions import Now
from django.test.utils import CaptureQueriesContext

from assembler.history import HistoryFit, fit_history
from promptadmin.conversations import selectors, services
from promptadmin.conversations.models import Conversation, Message, Summary, SummaryStatus
from promptadmin.core.tokens import tokenizer

pytestmark = pytest.mark.django_db

RECENT = 20  # messages after the newest summary, unless said otherwise


def grow(
    key: str, total: int, *, summarized: int | None = None, tail: list[str] | None = None
) -> Conversation:
    """Conversation ``key`` with ``total`` messages (inserted in bulk, as if appended one
    at a time), the first ``summarized`` (default: all but the newest 20) summarized by a
    done summary, as a long conversation is once its worker caught up. ``tail`` gives the
    roles of the newest messages (by default they alternate user and assistant)."""
    encoding = tokenizer().name
    conversation = Conversation.objects.create(key=key, history_budget=2000)
    roles = ["user" if position % 2 else "assistant" for position in range(1, total + 1)]
    if tail:
        roles[-len(tail) :] = tail
    Message.objects.bulk_create(
        (
            Message(
                conversation=conversation,
                position=position,
                role=role,
                content=f"Turn {position}: the caravan moves on.",
                token_count=10,
                token_encoding=encoding,
            )
            for position, role in enumerate(roles, start=1)
        ),
        batch_size=5000,
    )
    covers = total - RECENT if summarized is None else summarized
    summary = Summary.objects.create(
        conversation=conversation,
        requested_through=covers,
        covers_through=covers,
        status=SummaryStatus.DONE,
        content="The caravan crossed the desert.",
        token_count=7,
        token_encoding=encoding,
        created_at=Now(),
    )
    Conversation.objects.filter(pk=conversation.pk).update(
        last_position=total,
        summarized_through=covers,
        current_summary=summary,
        unsummarized_tokens=(total - covers) * 10,
    )
    conversation.refresh_from_db()
    return conversation


def fit_of_everything(key: str, budget: int) -> HistoryFit:
    """The block fitted from every message after the newest summary, loaded whole."""
    state = selectors._state(key, tokenizer().name)
    assert state.summary_text is not None
    messages = selectors.history_messages(
        state.id, after=state.summary_text.covers_through, through=state.last_position
    )
    return fit_history(
        messages=messages, summary=state.summary_text, budget=budget, tokenizer=tokenizer()
    )


def same_block(one: HistoryFit, other: HistoryFit) -> bool:
    """The same block shown (what was left out of what was loaded aside)."""
    fields = ("mode", "text", "tokens", "positions", "summary_used", "trimmed")
    return all(getattr(one, name) == getattr(other, name) for name in fields)


def queries(call: Any) -> int:
    with CaptureQueriesContext(connection) as context:
        call()
    return len(context.captured_queries)


def test_appending_and_reading_history_cost_the_same_queries_at_100_and_10000_messages(
    delay: mock.MagicMock,
) -> None:
    costs = {}
    for total in (100, 10_000):
        key = f"long-{total}"
        grow(key, total)
        message = [{"role": "user", "content": "We make camp by the well."}]
        append = queries(
            lambda: services.conversation_append(actor=None, key=key, messages=message)  # noqa: B023
        )
        history = queries(lambda: selectors.history_block(key, budget=300))  # noqa: B023
        assembly = queries(lambda: selectors.history_for_assembly(key, 301))  # noqa: B023
        conversation = selectors.conversation_get(key)
        page = queries(lambda: selectors.message_page(conversation, page=2, size=50))  # noqa: B023
        costs[total] = (append, history, assembly, page)
    assert costs[100] == costs[10_000]
    # Lock and read, insert, update, in a savepoint; the state, the recent messages (each
    # read); one query for a page of messages.
    assert costs[100] == (5, 2, 2, 1)


def test_history_after_a_long_run_of_replies_loads_what_the_budget_can_show_not_the_run(
    django_assert_num_queries: Any,
) -> None:
    # A user message, then 5,000 replies: the block shows the current exchange from its
    # start (the user message) while it fits; what is loaded must not grow with the run.
    grow("replies", 6000, summarized=500, tail=["user"] + ["assistant"] * 5000)
    budget = 300
    # The state, the newest messages (no user message among them), the exchange.
    with django_assert_num_queries(3):
        block = selectors.history_block("replies", budget=budget)
    loaded = selectors._load(selectors._state("replies", tokenizer().name), budget)
    assert len(loaded.messages) <= budget // 3 + 1
    assert loaded.messages[0].position == 1000
    assert block.fit.positions[0] == 1000  # the newest user message
    assert same_block(block.fit, fit_of_everything("replies", budget))


def test_a_run_of_replies_shorter_than_the_budget_could_show_is_loaded_whole() -> None:
    grow("short-run", 400, summarized=300, tail=["user"] + ["assistant"] * 15)
    for budget in (30, 60, 400):
        block = selectors.history_block("short-run", budget=budget)
        assert same_block(block.fit, fit_of_everything("short-run", budget)), budget


def test_a_page_of_messages_is_read_by_position_with_no_count(
    django_assert_num_queries: Any,
) -> None:
    conversation = grow("pages", 1000)
    with django_assert_num_queries(1):
        newest = selectors.message_page(conversation, size=300)
    assert (newest.number, newest.pages, newest.first, newest.last) == (1, 4, 701, 1000)
    assert [m.position for m in newest.messages] == list(range(701, 1001))
    oldest = selectors.message_page(conversation, page=4, size=300)
    assert [m.position for m in oldest.messages] == list(range(1, 101))
    past = selectors.message_page(conversation, page=5, size=300)
    assert past.messages == [] and past.pages == 4
    with pytest.raises(ValueError):
        selectors.message_page(conversation, page=0)
