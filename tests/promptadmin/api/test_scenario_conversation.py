"""A scenario's conversation through /api/v1/scenarios/: read by the one request parser
(the conversation key rules of /assemble), and it must exist."""

from __future__ import annotations

from typing import Any

import pytest

from promptadmin.conversations.services import conversation_append
from tests.promptadmin.api.conftest import errors

SCENARIOS = "/api/v1/scenarios/"


def converse(key: str) -> None:
    conversation_append(actor=None, key=key, messages=[{"role": "user", "content": "Hi."}])


def create(client: Any, **values: Any) -> Any:
    body = {"name": "talk", "entry": "drowned-bell", **values}
    return client.post(SCENARIOS, body, format="json")


def test_a_scenario_keeps_its_conversation_and_can_drop_it(writer, reader, demo) -> None:  # type: ignore[no-untyped-def]
    converse("tavern-2")
    made = create(writer, conversation="tavern-2")
    assert made.status_code == 201, made.json()
    url = f"{SCENARIOS}{made.json()['id']}/"
    assert reader.get(url).json()["conversation"] == "tavern-2"
    etag = reader.get(url).headers["ETag"]
    cleared = writer.patch(url, {"conversation": None}, format="json", HTTP_IF_MATCH=etag)
    assert cleared.status_code == 200, cleared.json()
    assert cleared.json()["conversation"] == ""
    assert create(writer, name="none").json()["conversation"] == ""


def test_a_conversation_that_does_not_exist_is_refused(writer, demo) -> None:  # type: ignore[no-untyped-def]
    unknown = create(writer, conversation="nobody-said-this")
    assert unknown.status_code == 400
    assert errors(unknown)["conversation"] == "No conversation with key 'nobody-said-this'."


HOSTILE = [
    "\u0000",
    "x" * 201,
    {"key": "tavern-1"},
    ["tavern-1"],
    5,
    True,
    "bad key!",
    "-starts-with-a-dash",
    "tavern\u00e9",
]


@pytest.mark.parametrize("value", HOSTILE)
def test_a_hostile_conversation_is_refused_naming_the_field(writer, reader, demo, value) -> None:  # type: ignore[no-untyped-def]
    created = create(writer, conversation=value)
    assert created.status_code == 400, created.json()
    assert "conversation" in errors(created)
    url = f"{SCENARIOS}{create(writer, name='target').json()['id']}/"
    etag = reader.get(url).headers["ETag"]
    patched = writer.patch(url, {"conversation": value}, format="json", HTTP_IF_MATCH=etag)
    assert patched.status_code == 400, patched.json()
    assert "conversation" in errors(patched)


def test_a_lone_surrogate_in_the_conversation_is_refused(writer, demo) -> None:  # type: ignore[no-untyped-def]
    response = writer.post(
        SCENARIOS,
        '{"name": "s", "entry": "drowned-bell", "conversation": "\\ud800"}',
        content_type="application/json",
    )
    assert response.status_code == 400
    assert "conversation" in errors(response)
