"""Scenarios take the request's ``lore`` option: read by the one request parser (its
limits and words), stored as what differs from the defaults, used when a scenario is
assembled (a scenario's state triggers lore) and refused, naming the field, when bad."""

from __future__ import annotations

import json
from typing import Any

import pytest

from promptadmin.content.models import Entry
from promptadmin.lore import services as lore
from promptadmin.releases.models import Scenario
from promptadmin.releases.scenarios import from_model, run
from promptadmin.releases.serving import resolve
from tests.promptadmin.api.conftest import errors

pytestmark = pytest.mark.django_db

BODY = {"name": "bell", "entry": "drowned-bell", "state": {"input": "Who rang the bell?"}}


def create(client: Any, **fields: Any) -> Any:
    return client.post(
        "/api/v1/scenarios/", json.dumps({**BODY, **fields}), content_type="application/json"
    )


def test_a_scenario_keeps_its_lore_option_and_answers_it(writer, reader, demo) -> None:  # type: ignore[no-untyped-def]
    created = create(writer, lore={"budget": 300, "enabled": True, "scan_depth": 4})
    assert created.status_code == 201, created.json()
    # Only what differs from the defaults is kept.
    assert created.json()["lore"] == {"budget": 300}
    pk = created.json()["id"]
    assert reader.get(f"/api/v1/scenarios/{pk}/").json()["lore"] == {"budget": 300}
    etag = reader.get(f"/api/v1/scenarios/{pk}/").headers["ETag"]
    off = writer.patch(
        f"/api/v1/scenarios/{pk}/", {"lore": {"enabled": False}}, format="json", HTTP_IF_MATCH=etag
    )
    assert off.status_code == 200 and off.json()["lore"] == {"enabled": False}
    assert Scenario.objects.get(pk=pk).history.first().lore == {"enabled": False}
    # Without the option: every default.
    plain = create(writer, name="plain")
    assert plain.json()["lore"] == {}


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ({"budget": -1}, "lore.budget"),
        ({"budget": 10**12}, "lore.budget"),
        ({"scan_depth": 10**6}, "lore.scan_depth"),
        ({"recursion": "2"}, "lore.recursion"),
        ({"enabled": "yes"}, "lore.enabled"),
        ({"budget": "\x00"}, "lore.budget"),
        ({"budget": "\ud800"}, "lore.budget"),
        ({"\ud800": 1}, "lore"),
        ({"x" * 100_000: 1}, "lore"),
        ("\x00", "lore"),
        ("x" * 100_000, "lore"),
        ([1, 2], "lore"),
        (7, "lore"),
    ],
)
def test_a_bad_lore_option_is_a_400_naming_the_field(writer, demo, value, field) -> None:  # type: ignore[no-untyped-def]
    response = create(writer, lore=value)
    assert response.status_code == 400, response.content
    assert any(name == field or name.startswith(f"{field}.") for name in errors(response)), errors(
        response
    )
    assert not Scenario.objects.exists()


def test_a_scenarios_state_triggers_lore_as_its_option_says(writer, demo) -> None:  # type: ignore[no-untyped-def]
    world = Entry.objects.select_related("world").get(slug="drowned-bell").world
    lore.lore_entry_create(
        actor=None, world=world, title="The bell", content="Cast from a sunken ship.", keys=["bell"]
    )
    on = Scenario.objects.get(pk=create(writer).json()["id"])
    off = Scenario.objects.get(pk=create(writer, name="off", lore={"enabled": False}).json()["id"])
    served = resolve("working")
    assert (
        run(from_model(on), served.load, served.lore).tokens
        > run(from_model(off), served.load, served.lore).tokens
    )
    assert "lore=off" in from_model(off).preview_query().split("&")


def test_a_scenario_row_of_an_old_migration_state_gets_the_default(demo) -> None:  # type: ignore[no-untyped-def]
    # A row written by code that knows no lore (a migration's frozen model) gets {}.
    from django.db import connection

    table = connection.ops.quote_name(Scenario._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (name, entry, first_turn, npcs, state, token_budget, npc_budget,"
            " expectations, temperature, max_tokens, samples, revision, created_at, updated_at)"
            " VALUES ('old', 'drowned-bell', false, '[]', '{}', 8000, 600, '[]', 0, 300, 1, 1,"
            " now(), now())"
        )
    assert Scenario.objects.get(name="old").lore == {}
