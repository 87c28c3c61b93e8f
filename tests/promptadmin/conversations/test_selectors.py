"""Reading history: what a conversation's state shows is fixed, so it is remembered per
state; the studio's view and the API's agree."""

from __future__ import annotations

from typing import Any

import pytest

from promptadmin.conversations import selectors, services
from promptadmin.conversations.models import Conversation
from promptadmin.core.tokens import tokenizer
from tests.promptadmin.conversations.fixtures import talk


def test_remembered_values_are_bounded_by_their_count_and_their_characters() -> None:
    remembered = selectors._Remembered(entries=2, chars=100)
    remembered.put("a", 1, chars=10)
    remembered.put("b", 2, chars=10)
    assert remembered.get("a") == 1  # now the most recently used
    remembered.put("c", 3, chars=10)
    assert (remembered.get("a"), remembered.get("b"), remembered.get("c")) == (1, None, 3)
    remembered.put("d", 4, chars=95)
    assert (remembered.get("a"), remembered.get("c"), remembered.get("d")) == (None, None, 4)
    remembered.put("e", 5, chars=101)  # alone over the bound: not kept, nothing dropped
    assert (remembered.get("d"), remembered.get("e")) == (4, None)


@pytest.mark.django_db
def test_a_state_loads_only_the_messages_it_names(delay: Any) -> None:
    services.conversation_append(actor=None, key="c", messages=talk(3))
    state = selectors._state("c", tokenizer().name)
    # Appended between reading the state and loading its messages.
    services.conversation_append(actor=None, key="c", messages=talk(2, start=3))
    history = selectors._load(state, budget=10_000)
    assert [message.position for message in history.messages] == [1, 2, 3]


@pytest.mark.django_db
def test_an_unknown_conversation_does_not_exist() -> None:
    with pytest.raises(Conversation.DoesNotExist):
        selectors.history_block("nope")
    with pytest.raises(Conversation.DoesNotExist):
        selectors.history_for_assembly("nope", None)


@pytest.mark.django_db
@pytest.mark.parametrize("budget", [40, 150, 600, 5000])
def test_the_studio_and_the_api_show_the_same_block(
    budget: int, counting: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        services.conversation_append(actor=None, key="c", messages=talk(12), history_budget=300)
    conversation = selectors.conversation_get("c")
    assert conversation.current_summary is not None
    studio = selectors.conversation_history(conversation, budget=budget)
    api = selectors.history_block("c", budget=budget)
    assert api.fit == studio.fit
    assert api.summary_pending == studio.summary_pending
    if studio.summary is None:
        assert api.summary is None
    else:
        assert api.summary == selectors.ShownSummary(
            studio.summary.pk, studio.summary.covers_through, studio.summary.status
        )
    loaded = selectors.history_for_assembly("c", budget)
    assert loaded.summary_id == conversation.current_summary.pk
    assert all(m.position > conversation.summarized_through for m in loaded.messages)
