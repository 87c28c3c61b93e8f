"""Fixtures for conversation tests (the services', the tasks' and the endpoints'):
appending through the service, what would be enqueued, and a summarizer whose calls are
counted. Registered for the whole suite in tests/conftest.py."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import pytest
from django.test import override_settings

from assembler.summarize import ExtractiveSummarizer, SummaryOutcome
from promptadmin.conversations import summarizer
from promptadmin.core.tokens import tokenizer


def talk(n: int, words: int = 40, start: int = 0) -> list[dict[str, str]]:
    """``n`` messages alternating user and assistant, each about ``words`` words long."""
    messages = []
    for index in range(start, start + n):
        role = "user" if index % 2 == 0 else "assistant"
        sentence = f"Message {index}: we decided to send {index} scouts to the river Tarn. "
        filler = "The weather was grey and nothing else happened. " * max(1, words // 10)
        messages.append({"role": role, "content": sentence + filler})
    return messages


def wait_for(condition: Callable[[], bool], seconds: float, what: str) -> None:
    """Wait until ``condition()`` holds (something done in another thread or process),
    failing after ``seconds``: a bound on a hang, not a measure of speed."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds}s waiting for {what}")
        time.sleep(0.2)


class CountingSummarizer:
    """The extractive summarizer, counting how often it is asked."""

    backend = "counting"

    def __init__(self) -> None:
        self.calls: list[int] = []
        self.inner = ExtractiveSummarizer(tokenizer())

    def summarize(self, plan: Any) -> SummaryOutcome:
        self.calls.append(plan.covers_through)
        outcome = self.inner.summarize(plan)
        return SummaryOutcome(
            outcome.text, outcome.tokens, "counting", "counting-1", outcome.drawn_from
        )


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> Iterator[CountingSummarizer]:
    counted = CountingSummarizer()
    monkeypatch.setattr(summarizer, "primary_summarizer", lambda instructions: counted)
    yield counted


@pytest.fixture
def delay() -> Iterator[mock.MagicMock]:
    """What would be enqueued to summarize a conversation, without running it."""
    with mock.patch("promptadmin.conversations.tasks.enqueue_summary") as fake:
        yield fake


@pytest.fixture
def in_process() -> Iterator[None]:
    """Tasks run here and now when enqueued, as without a broker."""
    from promptadmin.celery import app

    eager, app.conf.task_always_eager = app.conf.task_always_eager, True
    yield
    app.conf.task_always_eager = eager


@pytest.fixture
def extractive_only() -> Iterator[None]:
    with override_settings(SUMMARIZER_BASE_URL=""):
        yield
