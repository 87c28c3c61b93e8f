"""An assembly request is read by the one parser (assembler.request): the API answers its
refusals in the documented 400, the studio's preview and scenarios refuse the same input
in the same words, and the serializers describe exactly what the parser reads."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from assembler import DYNAMIC_SCOPES
from assembler.request import (
    ASSEMBLE_FIELDS,
    DEFAULT_FLOOR,
    LORE_FIELDS,
    MAX_BUDGET,
    MAX_NPCS,
    MAX_SLUG,
    MAX_TEXT,
    MAX_TIER,
    NPC_FIELDS,
    POLICY_FIELDS,
    PREVIEW_FIELDS,
    parse_assemble_params,
)
from promptadmin.api.serializers.assembly import (
    AssembleInputSerializer,
    FloorsSerializer,
    LoreOptionsSerializer,
    PolicySerializer,
    PreviewInputSerializer,
    StateSerializer,
)
from promptadmin.api.serializers.releases import ScenarioInputSerializer
from promptadmin.releases.models import Scenario
from promptadmin.releases.services import SCENARIO_FIELDS
from scripts import bench_api
from tests.promptadmin.api.conftest import person, session_client
from tests.promptadmin.api.test_assemble import TURN

pytestmark = pytest.mark.usefixtures("demo")


def test_the_schema_describes_the_fields_the_parser_reads() -> None:
    assert tuple(AssembleInputSerializer().fields) == ASSEMBLE_FIELDS
    assert tuple(PreviewInputSerializer().fields) == PREVIEW_FIELDS
    assert tuple(StateSerializer().fields) == DYNAMIC_SCOPES
    assert tuple(FloorsSerializer().fields) == DYNAMIC_SCOPES
    assert tuple(PolicySerializer().fields) == POLICY_FIELDS
    assert tuple(LoreOptionsSerializer().fields) == LORE_FIELDS
    assert tuple(ScenarioInputSerializer().fields) == SCENARIO_FIELDS
    floors = PolicySerializer().fields["floors"]
    assert floors.help_text == f"Default: {DEFAULT_FLOOR:g} for each layer."


def test_the_schema_states_the_parsers_limits() -> None:
    schema = APIClient().get("/api/v1/schema/?format=json").json()["components"]["schemas"]
    request = schema["AssembleInputRequest"]["properties"]
    assert request["entry"]["maxLength"] == MAX_SLUG
    assert request["npcs"]["maxItems"] == MAX_NPCS
    assert request["token_budget"]["maximum"] == MAX_BUDGET
    npc = request["npcs"]["items"]["oneOf"][1]
    assert tuple(npc["properties"]) == NPC_FIELDS
    assert npc["properties"]["tier"]["maximum"] == MAX_TIER
    state = schema["StateRequest"]["properties"]["input"]["oneOf"][0]
    assert state["maxLength"] == MAX_TEXT


@pytest.mark.parametrize(
    "body",
    [
        TURN,
        {"entry": "drowned-bell"},
        json.loads(json.dumps(bench_api.SCENARIOS[1].body)),
        json.loads(json.dumps(bench_api.SCENARIOS[2].body)),
        {**TURN, "policy": {"floors": {"input": 0.2}, "block_format": "xml"}, "strict": True},
    ],
)
def test_requests_as_games_send_them_are_read(body: dict[str, Any]) -> None:
    assert parse_assemble_params(body).entry == body["entry"]


def test_a_refusal_is_the_documented_400_naming_every_field(reader: APIClient) -> None:
    response = reader.post(
        "/api/v1/assemble",
        {**TURN, "entry": " ", "token_budget": -1, "colour": "red", "npcs": [{"npc": "a", "x": 1}]},
        format="json",
    )
    assert response.status_code == 400
    assert response.json() == {
        "type": "validation_error",
        "errors": [
            {
                "code": "unknown_field",
                "detail": f"Unknown field; the fields are: {', '.join(ASSEMBLE_FIELDS)}.",
                "attr": "colour",
            },
            {"code": "blank", "detail": "This field may not be blank.", "attr": "entry"},
            {
                "code": "min_value",
                "detail": "Ensure this value is greater than or equal to 0.",
                "attr": "token_budget",
            },
            {
                "code": "unknown_field",
                "detail": "Unknown field; the fields are: npc, tier.",
                "attr": "npcs.0.x",
            },
        ],
    }


@pytest.mark.parametrize("key", ["\u00b2", "1\u00b2", "\u0663"])
def test_a_field_named_with_a_digit_that_is_not_ascii_is_refused_not_a_500(
    reader: APIClient, key: str
) -> None:
    # str.isdigit() holds for '²' and '٣', which int() refuses: the path of the error broke.
    response = reader.post("/api/v1/assemble", {**TURN, key: 1}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"][0]["attr"] == key


# The same bad requests, sent to the three entry points that take one.

BAD_REQUESTS = [
    pytest.param({"npcs": [f"npc-{n}" for n in range(MAX_NPCS + 1)]}, id="51 NPCs"),
    pytest.param({"npcs": [{"npc": "marta-vell", "tier": -1}]}, id="a tier of -1"),
    pytest.param({"entry": "x" * (MAX_SLUG + 1)}, id="a 65-character slug"),
    pytest.param({"token_budget": 2**31}, id="a 2^31 budget"),
    pytest.param({"state": {"game_state": {"name": "\ud800"}}}, id="a lone surrogate in state"),
]
GOOD = {"entry": "drowned-bell", "first_turn": True, "npcs": [{"npc": "old-cobb", "tier": 1}]}


def as_json(body: dict[str, Any]) -> bytes:
    """JSON as a client may send it (a lone surrogate as its escape)."""
    return json.dumps(body).encode()


def api_refusal(client: APIClient, path: str, body: dict[str, Any]) -> dict[str, list[str]]:
    response = client.generic("POST", path, as_json(body), "application/json")
    assert response.status_code == 400, response.json()
    found: dict[str, list[str]] = {}
    for error in response.json()["errors"]:
        found.setdefault(error["attr"], []).append(error["detail"])
    return found


def studio_refusal(client: Client, body: dict[str, Any]) -> dict[str, list[str]]:
    """The preview's refusal of the same settings, typed in its form."""
    query: list[tuple[str, Any]] = [
        (name, body[name]) for name in ("entry", "token_budget") if name in body
    ]
    query.append(("first_turn", "on"))
    for npc in body["npcs"]:
        slug, tier = (npc, 0) if isinstance(npc, str) else (npc["npc"], npc["tier"])
        query += [("npc", slug), ("tier", tier)]
    for layer, value in body.get("state", {}).items():
        query.append((layer, json.dumps(value)))  # typed JSON, escapes and all
    response = client.get(reverse("studio:preview") + "?" + urlencode(query))
    form = response.context["form"]
    assert response.context["preview"] is None and form.request_error is not None
    shown = [str(error) for errors in form.errors.values() for error in errors]
    for messages in form.request_error.errors.values():
        assert all(any(message in error for error in shown) for message in messages)
    return form.request_error.errors


@pytest.mark.parametrize("change", BAD_REQUESTS)
def test_a_bad_request_is_refused_alike_by_the_api_the_preview_and_scenarios(
    reader: APIClient, writer: APIClient, change: dict[str, Any]
) -> None:
    body = {**GOOD, **change}
    assembled = api_refusal(reader, "/api/v1/assemble", body)
    assert len(assembled) == 1  # one field, named
    assert studio_refusal(session_client(person("viewer")), body) == assembled
    scenario = api_refusal(writer, "/api/v1/scenarios/", {"name": "bad", **body})
    assert scenario == assembled
    assert not Scenario.objects.exists()
