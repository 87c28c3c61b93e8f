"""/assemble and /preview with a conversation: the history layer between npc and
game_state, reported in meta; never waiting for a summary; a constant number of queries."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from promptadmin.conversations import services
from promptadmin.conversations.models import Summary, SummaryStatus
from tests.promptadmin.api.conftest import errors
from tests.promptadmin.conversations.fixtures import talk

pytestmark = pytest.mark.django_db

TURN = {
    "entry": "drowned-bell",
    "npcs": ["marta-vell"],
    "state": {"game_state": {"tide": "rising"}, "input": "I ring the bell."},
}


@pytest.fixture
def demo(db: Any) -> None:
    call_command("seed_demo")


def assemble(client: APIClient, body: dict[str, Any], url: str = "/api/v1/assemble") -> Any:
    return client.post(url, body, format="json")


def test_assemble_with_a_conversation_adds_the_history_layer(
    demo: None, reader: APIClient, delay: Any
) -> None:
    services.conversation_append(actor=None, key="run-1", messages=talk(4))
    response = assemble(reader, {**TURN, "conversation": "run-1", "history_budget": 1500})
    assert response.status_code == 200
    body = response.json()
    prompt, meta = body["prompt"], body["meta"]
    assert prompt.index("=== NPC_END ===") < prompt.index("=== HISTORY_BEGIN ===")
    assert prompt.index("=== HISTORY_END ===") < prompt.index("=== GAME_STATE_BEGIN ===")
    assert "User: Message 0" in prompt
    # Between them comes only the lore layer (empty here).
    assert meta["order"].index("history") == meta["order"].index("npc") + 2
    assert meta["order"].index("lore") == meta["order"].index("npc") + 1
    assert meta["layers"]["history"]["status"] == "included"
    assert meta["history"] == {
        "conversation": "run-1",
        "mode": "full",
        "messages": [1, 2, 3, 4],
        "summary": None,
        "trimmed": None,
    }


def test_assemble_uses_the_newest_summary_and_the_recent_messages(
    demo: None, reader: APIClient, counting: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        services.conversation_append(actor=None, key="run-2", messages=talk(8), history_budget=200)
    summary = Summary.objects.get(status=SummaryStatus.DONE)
    meta = assemble(reader, {**TURN, "conversation": "run-2"}).json()["meta"]
    assert meta["history"]["mode"] == "summary_and_recent"
    assert meta["history"]["summary"] == {
        "id": summary.pk,
        "covers_through": summary.covers_through,
    }
    assert min(meta["history"]["messages"]) == summary.covers_through + 1


def test_a_pending_summary_is_never_waited_for(demo: None, reader: APIClient, delay: Any) -> None:
    services.conversation_append(actor=None, key="run-3", messages=talk(8), history_budget=200)
    assert Summary.objects.get().status == SummaryStatus.PENDING
    meta = assemble(reader, {**TURN, "conversation": "run-3"}).json()["meta"]
    assert meta["history"]["mode"] == "recent_only"
    assert meta["history"]["messages"][-1] == 8


def test_an_unknown_conversation_is_named_in_the_error(demo: None, reader: APIClient) -> None:
    response = assemble(reader, {**TURN, "conversation": "nope"})
    assert response.status_code == 400
    assert errors(response) == {"conversation": "No conversation with key 'nope'."}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("conversation", "a b"),
        ("conversation", 5),
        ("conversation", "x" * 201),
        ("conversation", "a\x00"),
        ("history_budget", -1),
        ("history_budget", 1_000_001),
        ("history_budget", "100"),
    ],
)
def test_bad_conversation_fields_are_refused(
    demo: None, reader: APIClient, field: str, value: Any
) -> None:
    response = assemble(reader, {**TURN, field: value})
    assert response.status_code == 400
    assert field in errors(response)


def test_preview_shows_the_history_layer_too(demo: None, reader: APIClient, delay: Any) -> None:
    services.conversation_append(actor=None, key="run-4", messages=talk(3))
    body = assemble(reader, {**TURN, "conversation": "run-4"}, url="/api/v1/preview").json()
    assert body["meta"]["layers"]["history"]["status"] == "included"
    assert body["meta"]["history"]["messages"] == [1, 2, 3]


def test_the_history_layer_gives_way_under_a_small_token_budget(
    demo: None, reader: APIClient, delay: Any
) -> None:
    services.conversation_append(actor=None, key="run-5", messages=talk(30))
    full = assemble(reader, {**TURN, "conversation": "run-5", "history_budget": 100_000}).json()
    budget = full["meta"]["tokens"] - 300
    body = assemble(
        reader,
        {**TURN, "conversation": "run-5", "history_budget": 100_000, "token_budget": budget},
    ).json()
    meta = body["meta"]
    assert meta["tokens"] <= budget
    assert meta["layers"]["history"]["status"] == "trimmed"
    assert meta["history"]["messages"][-1] == 30
    # The game state and input are within their floors: the history gives way first,
    # before any NPC or content segment.
    assert [s["scope"] for s in meta["truncated"] if s["action"] != "restored"] == ["history"]


def test_assembling_with_history_adds_two_queries_and_one_for_a_state_loaded_before(
    demo: None, reader: APIClient, delay: Any, django_assert_num_queries: Any
) -> None:
    services.conversation_append(actor=None, key="run-6", messages=talk(100))
    assemble(reader, TURN)  # content cached, and the API key
    # The conversation with its newest summary; the recent messages.
    with django_assert_num_queries(2):
        first = assemble(reader, {**TURN, "conversation": "run-6"})
    assert first.status_code == 200
    # The same conversation state and budget: the loaded history is remembered.
    with django_assert_num_queries(1):
        assert assemble(reader, {**TURN, "conversation": "run-6"}).json() == first.json()
    # A new message is a new state: loaded again, and shown.
    services.conversation_append(actor=None, key="run-6", messages=talk(1, start=100))
    with django_assert_num_queries(2):
        meta = assemble(reader, {**TURN, "conversation": "run-6"}).json()["meta"]
    assert meta["history"]["messages"][-1] == 101
