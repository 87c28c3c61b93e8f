"""Numbers PostgreSQL would turn into integers beyond 64 bits are refused wherever JSON is
stored, and a row already holding one never takes a whole list down with it."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from rest_framework.test import APIClient

from promptadmin.content.models import Segment
from promptadmin.releases.models import Scenario
from tests.factories import make_segment
from tests.promptadmin.api.conftest import errors
from tests.promptadmin.api.prompts import JUDGE, LANGFUSE_JUDGE, basic_client

pytestmark = pytest.mark.django_db

# As written by a client; each becomes, in jsonb, an integer no encoder of the app writes.
BEYOND = ["1e20", "1.63e+284", "-1e19", "18446744073709552000.0", "1.8446744073709552e19"]


def post(client: APIClient, url: str, body: str) -> Any:
    return client.post(url, body, content_type="application/json")


@pytest.mark.parametrize("number", BEYOND)
def test_a_float_stored_as_an_integer_beyond_64_bits_is_refused_naming_where(
    writer: APIClient, number: str
) -> None:
    make_segment(content="Narrate.")
    body = f'{{"scope": "core", "content": "x", "metadata": {{"x": [1, {number}]}}}}'
    response = post(writer, "/api/v1/segments/", body)
    assert response.status_code == 400, response.content
    assert errors(response)["metadata"].startswith("At x.1: ")
    assert "integers must fit in 64 bits" in errors(response)["metadata"]
    assert Segment.objects.count() == 1
    assert writer.get("/api/v1/segments/").status_code == 200


@pytest.mark.parametrize("number", ["1e15", "9999999999999998.0", "1e19", "-9.2e18", "1e-300"])
def test_numbers_that_come_back_renderable_are_kept(writer: APIClient, number: str) -> None:
    body = f'{{"scope": "core", "content": "x", "metadata": {{"x": {number}}}}}'
    created = post(writer, "/api/v1/segments/", body)
    assert created.status_code == 201, created.content
    assert writer.get(f"/api/v1/segments/{created.json()['id']}/").status_code == 200
    assert writer.get("/api/v1/segments/").status_code == 200


def test_scenario_state_beyond_64_bits_is_refused(demo: None, writer: APIClient) -> None:
    body = '{"name": "s", "entry": "drowned-bell", "state": {"game_state": {"gold": 1e20}}}'
    response = post(writer, "/api/v1/scenarios/", body)
    assert response.status_code == 400, response.content
    assert "At gold: 1e+20 is stored as the integer" in errors(response)["state.game_state"]
    assert writer.get("/api/v1/scenarios/").status_code == 200


def test_prompt_version_config_beyond_64_bits_is_a_400_not_a_500(
    writer: APIClient, judge: Any
) -> None:
    body = '{"user_templates": {"default": "Q"}, "config": {"seed": 1e20}}'
    response = post(writer, f"{JUDGE}versions/", body)
    assert response.status_code == 400, response.content
    assert errors(response)["config"].startswith("seed: 1e+20 is stored as the integer")


def test_the_langfuse_create_refuses_such_a_config(read_key: str, write_key: str) -> None:
    client = basic_client(write_key)
    body = '{"name": "a/b", "type": "text", "prompt": "x", "config": {"seed": 1.63e+284}}'
    response = post(client, "/api/public/v2/prompts", body)
    assert response.status_code == 400, response.content
    assert "config" in response.json()["message"]
    assert basic_client(read_key).get(LANGFUSE_JUDGE).status_code == 404


def poisoned_segment(**fields: Any) -> Segment:
    """A segment holding what the old API stored for ``1e20``: the integer 10**20."""
    segment = make_segment(**fields)
    Segment.objects.filter(pk=segment.pk).update(metadata={"n": 10**20, "tag": "kept"})
    return segment


def test_a_row_that_cannot_be_encoded_is_marked_and_the_rest_of_the_list_served(
    writer: APIClient, caplog: pytest.LogCaptureFixture
) -> None:
    before = make_segment(content="Before.", sort_order=1)
    bad = poisoned_segment(content="Poisoned.", sort_order=2)
    after = make_segment(content="After.", sort_order=3)
    with caplog.at_level(logging.ERROR, "promptadmin.api.renderers"):
        for url in ("/api/v1/segments/", "/api/v1/segments/?search=poisoned"):
            response = writer.get(url)
            assert response.status_code == 200, response.content
            rows = {row["id"]: row for row in response.json()["results"]}
            marked = rows[bad.pk]
            assert marked["metadata"] == {"n": str(10**20), "tag": "kept"}
            assert marked["content"] == "Poisoned."
            assert marked["error"]["code"] == "unencodable_row"
            assert marked["error"]["attr"] == "metadata.n"
            if "search" not in url:
                assert "error" not in rows[before.pk] and "error" not in rows[after.pk]
    assert f"'id': {bad.pk}" in caplog.text


def test_a_history_page_with_a_record_that_cannot_be_encoded_is_served(
    writer: APIClient,
) -> None:
    bad = poisoned_segment(content="Poisoned.")
    Segment.history.filter(id=bad.pk).update(metadata={"n": -(10**20)})  # type: ignore[attr-defined]
    response = writer.get(f"/api/v1/segments/{bad.pk}/history/")
    assert response.status_code == 200, response.content
    assert all(row["error"]["attr"] == "metadata.n" for row in response.json()["results"])


def test_a_scenario_list_with_a_poisoned_row_is_served(demo: None, writer: APIClient) -> None:
    for name in ("a", "b"):
        assert post(writer, "/api/v1/scenarios/", f'{{"name": "{name}", "entry": "drowned-bell"}}')
    Scenario.objects.filter(name="a").update(state={"game_state": {"gold": 10**20}})
    response = writer.get("/api/v1/scenarios/")
    assert response.status_code == 200, response.content
    rows = {row["name"]: row for row in response.json()}
    assert rows["a"]["state"] == {"game_state": {"gold": str(10**20)}}
    assert rows["a"]["error"]["attr"] == "state.game_state.gold"
    assert "error" not in rows["b"]
