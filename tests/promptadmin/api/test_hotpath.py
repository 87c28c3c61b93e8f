"""The hot path (promptadmin.api.hotpath) answers exactly what DRF answers.

Every request here is sent twice, with the hot path on and off (``API_HOT_PATH``), and
the two responses must agree in status, headers and body; plain requests must also have
skipped DRF's cycle (else the comparison would prove nothing), errors included, and the
others must have gone through it. A plain request runs its view once, whatever happens.
"""

from __future__ import annotations

import base64
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient
from rest_framework.views import APIView

from promptadmin.api.assembly import A_TURN
from promptadmin.content.models import ApiKey
from promptadmin.content.services.api_keys import api_key_create, api_key_revoke
from tests.promptadmin.api.conftest import key_client

pytestmark = pytest.mark.usefixtures("demo", "prompts")

TURN = A_TURN.value  # the documented example turn
PARSER = "/api/v1/prompts/verifier/parser/"
RENDER = {"variables": {"question": "How far?", "response": "About 3 km."}}


@pytest.fixture
def prompts(db: None) -> None:
    call_command("seed_prompts", stdout=StringIO())


@pytest.fixture
def drf_cycles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths of the requests that went through DRF's cycle."""
    seen: list[str] = []
    initial = APIView.initial

    def counting(self: APIView, request: Any, *args: Any, **kwargs: Any) -> None:
        seen.append(request.path)
        initial(self, request, *args, **kwargs)

    monkeypatch.setattr(APIView, "initial", counting)
    return seen


def both(send: Any, settings: Any, cycles: list[str]) -> tuple[Any, bool]:
    """The response with the hot path on, checked against the one with it off; and
    whether the hot path answered."""
    settings.API_HOT_PATH = False
    expected = send()
    settings.API_HOT_PATH = True
    before = len(cycles)
    response = send()
    assert response.status_code == expected.status_code
    # Every answer has an id of its own (X-Request-ID); everything else is the same.
    assert response.headers.pop("X-Request-ID") != expected.headers.pop("X-Request-ID")
    assert dict(response.headers) == dict(expected.headers)
    assert response.content == expected.content
    return response, len(cycles) == before


def post(client: APIClient, path: str, body: Any, **extra: Any) -> Any:
    return lambda: client.post(path, body, format="json", **extra)


def get(client: APIClient, path: str, **extra: Any) -> Any:
    return lambda: client.get(path, **extra)


@pytest.mark.parametrize(
    "body",
    [
        TURN,
        {**TURN, "release": "working", "policy": {"block_format": "markdown"}},
        {**TURN, "token_budget": 300, "npc_budget": 50},  # truncated
        {**TURN, "state": {"input": "a\x00b \u202e\U0001f600 " + "long " * 20_000}},
    ],
)
def test_a_plain_assembly_skips_drfs_cycle_and_answers_the_same(
    reader: APIClient, body: Any, settings: Any, drf_cycles: list[str]
) -> None:
    response, hot = both(post(reader, "/api/v1/assemble", body), settings, drf_cycles)
    assert response.status_code == 200
    assert hot


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({**TURN, "token_budget": -1}, 400),  # the request parser words the error
        ({**TURN, "npcs": ["a"] * 51, "entry": "x" * 65}, 400),
        (b'{"entry": "drowned-bell", "state": {"input": "\\ud800"}}', 400),
        ({**TURN, "colour": "red"}, 400),
        ({**TURN, "release": "no-such-release"}, 400),
        ({**TURN, "entry": "no-such-entry"}, 400),
        ({**TURN, "token_budget": 10, "strict": True}, 422),
        ({**TURN, "entry": " drowned-bell "}, 200),  # trimmed by the request parser
        ([TURN], 400),
    ],
)
def test_a_plain_request_that_fails_is_answered_on_the_hot_path_as_drf_answers_it(
    reader: APIClient, body: Any, status: int, settings: Any, drf_cycles: list[str]
) -> None:
    if isinstance(body, bytes):  # JSON the test client would not write

        def send() -> Any:
            return reader.generic("POST", "/api/v1/assemble", body, "application/json")

    else:
        send = post(reader, "/api/v1/assemble", body)
    response, hot = both(send, settings, drf_cycles)
    assert response.status_code == status
    assert hot


@pytest.mark.parametrize(
    ("extra", "status"),
    [
        ({"HTTP_ACCEPT": "application/json; indent=2"}, 200),
        ({"HTTP_ACCEPT": "text/html"}, 406),
        ({"QUERY_STRING": "api_key=abc"}, 400),
    ],
)
def test_a_request_that_is_not_plain_goes_through_drf(
    reader: APIClient, extra: dict[str, str], status: int, settings: Any, drf_cycles: list[str]
) -> None:
    response, hot = both(post(reader, "/api/v1/assemble", TURN, **extra), settings, drf_cycles)
    assert response.status_code == status
    assert not hot


def calls_of(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[object]:
    """Each call of ``module.name`` (a view's work), recorded as it happens."""
    calls: list[object] = []
    work = getattr(module, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return work(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({**TURN, "entry": "no-such-entry"}, 400),
        ({**TURN, "token_budget": 10, "strict": True}, 422),
        ({**TURN, "release": "no-such-release"}, 400),
    ],
)
def test_a_failing_request_through_the_hot_path_runs_its_view_once(
    reader: APIClient,
    body: Any,
    status: int,
    monkeypatch: pytest.MonkeyPatch,
    drf_cycles: list[str],
) -> None:
    from promptadmin.api import assembly

    calls = calls_of(monkeypatch, assembly, "assembled")
    response = reader.post("/api/v1/assemble", body, format="json")
    assert response.status_code == status
    assert (len(calls), drf_cycles) == (1, [])


def test_an_unexpected_failure_on_the_hot_path_is_a_500_from_one_run(
    reader: APIClient, monkeypatch: pytest.MonkeyPatch, drf_cycles: list[str]
) -> None:
    from promptadmin.api import assembly

    calls: list[object] = []

    def broken(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        raise RuntimeError("a defect")

    monkeypatch.setattr(assembly, "assemble_prompt", broken)
    reader.raise_request_exception = False
    response = reader.post("/api/v1/assemble", TURN, format="json")
    assert response.status_code == 500
    assert response.json()["errors"][0]["detail"] == "Server Error (500)"
    assert (len(calls), drf_cycles) == (1, [])


def test_a_failing_render_through_the_hot_path_runs_its_view_once(
    reader: APIClient, monkeypatch: pytest.MonkeyPatch, drf_cycles: list[str]
) -> None:
    from promptadmin.api import prompts

    calls = calls_of(monkeypatch, prompts, "fetch_and_render")
    response = reader.post(PARSER + "render", {"variables": {"question": "?"}}, format="json")
    assert response.status_code == 400  # a missing variable
    assert (len(calls), drf_cycles) == (1, [])


def test_bodies_drf_refuses_go_through_drf(
    reader: APIClient, settings: Any, drf_cycles: list[str]
) -> None:
    for content, content_type in [
        (b'{"entry": NaN}', "application/json"),
        (b'{"entry": "a"', "application/json"),
        (b"\xff\xfe", "application/json"),
        (b"entry=drowned-bell", "application/x-www-form-urlencoded"),
        (b"", "application/json"),
        (b'{"entry": ' + b"[" * 5000 + b"]" * 5000 + b"}", "application/json"),
        (b'{"entry": "drowned-bell", "state": {"\\ud800": "x"}}', "application/json"),
        (b'{"entry": "drowned-bell", "token_budget": 1e400}', "application/json"),
    ]:

        def send(content: bytes = content, content_type: str = content_type) -> Any:
            return reader.generic("POST", "/api/v1/assemble", content, content_type)

        response, hot = both(send, settings, drf_cycles)
        assert response.status_code in (400, 415), content
        assert not hot


def test_credentials_other_than_a_good_key_go_through_drf(
    read_key: str, settings: Any, drf_cycles: list[str]
) -> None:
    revoked, secret = api_key_create(actor=None, name="old", scope="read")
    api_key_revoke(actor=None, api_key=revoked)
    prefix = read_key.split(".")[0]
    clients = [
        APIClient(),
        key_client(secret),
        key_client(f"{prefix}.{'x' * 32}"),
        key_client("nonsense"),
    ]
    for client in clients:
        response, hot = both(post(client, "/api/v1/assemble", TURN), settings, drf_cycles)
        assert response.status_code == 401
        assert not hot


def test_a_signed_in_person_goes_through_drf(
    settings: Any, drf_cycles: list[str], django_user_model: Any
) -> None:
    from django.contrib.auth.models import Group

    person = django_user_model.objects.create_user("vic", password="pw-long-enough-1")
    person.groups.add(Group.objects.get_or_create(name="viewer")[0])
    client = APIClient()
    client.force_login(person)
    response, hot = both(post(client, "/api/v1/assemble", TURN), settings, drf_cycles)
    assert response.status_code == 200
    assert not hot


def test_a_configured_rate_limit_sends_every_call_through_drf(
    reader: APIClient, drf_cycles: list[str], settings: Any
) -> None:
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_CLASSES": ["promptadmin.api.throttling.ApiKeyRateThrottle"],
        "DEFAULT_THROTTLE_RATES": {"api_key": "1000/min"},
    }
    response, hot = both(post(reader, "/api/v1/assemble", TURN), settings, drf_cycles)
    assert response.status_code == 200
    assert not hot


@pytest.mark.parametrize(
    ("query", "status", "plain"),
    [
        ("", 200, True),
        ("?label=staging", 200, True),
        ("?task_type=numeric&label=production", 200, True),
        ("?task_type=unknown", 200, True),  # falls back to the default prompt
        ("?version=1", 200, True),
        ("?label=latest", 200, True),
        ("?label=nope", 404, True),
        ("?version=99", 404, True),
        ("?label=staging&version=1", 400, True),
        ("?task_type=Bad Name", 400, True),
        ("?format=json", 200, False),
        (f"?label={'a' * 8}.{'b' * 32}", 400, False),  # a key in the URL
    ],
)
def test_fetching_a_prompt(
    reader: APIClient,
    query: str,
    status: int,
    plain: bool,
    settings: Any,
    drf_cycles: list[str],
) -> None:
    response, hot = both(get(reader, PARSER + query), settings, drf_cycles)
    assert response.status_code == status
    assert hot is plain


def test_revalidating_a_prompt(reader: APIClient, settings: Any, drf_cycles: list[str]) -> None:
    etag = reader.get(PARSER)["ETag"]
    for tag, status in [(etag, 304), ("*", 304), ('"other"', 200), (f'"x", {etag}', 304)]:
        response, hot = both(get(reader, PARSER, HTTP_IF_NONE_MATCH=tag), settings, drf_cycles)
        assert response.status_code == status
        assert hot


@pytest.mark.parametrize(
    ("body", "status", "plain"),
    [
        (RENDER, 200, True),
        ({**RENDER, "format": "text", "label": "staging"}, 200, True),
        ({**RENDER, "interface": "langchain", "user_instructions": "Be brief."}, 200, True),
        ({"variables": {"question": "How far?"}}, 400, True),  # a missing variable
        ({**RENDER, "template": "nope"}, 400, True),
        ({**RENDER, "interface": "nope"}, 400, True),
        ({**RENDER, "label": "nope"}, 404, True),
        ({**RENDER, "variables": [1]}, 400, True),
        ({**RENDER, "label": "staging", "version": 1}, 400, True),
    ],
)
def test_rendering_a_prompt(
    reader: APIClient,
    body: Any,
    status: int,
    plain: bool,
    settings: Any,
    drf_cycles: list[str],
) -> None:
    response, hot = both(post(reader, PARSER + "render", body), settings, drf_cycles)
    assert response.status_code == status, response.json()
    assert hot is plain


def test_a_key_revoked_between_two_calls_is_refused_on_the_hot_path_too(
    read_key: str, settings: Any, drf_cycles: list[str]
) -> None:
    client = key_client(read_key)
    assert client.post("/api/v1/assemble", TURN, format="json").status_code == 200
    api_key_revoke(actor=None, api_key=ApiKey.objects.get(prefix=read_key.split(".")[0]))
    response, hot = both(post(client, "/api/v1/assemble", TURN), settings, drf_cycles)
    assert response.status_code == 401
    assert not hot


def basic(key: str, public: str | None = None) -> APIClient:
    client = APIClient()
    pair = f"{key.split('.')[0] if public is None else public}:{key}"
    client.credentials(HTTP_AUTHORIZATION="Basic " + base64.b64encode(pair.encode()).decode())
    return client


LANGFUSE = "/api/public/v2/prompts/verifier%2Fparser"


@pytest.mark.parametrize(
    ("query", "status", "plain"),
    [
        ("", 200, True),
        ("?label=staging", 200, True),
        ("?version=1", 200, True),
        ("?label=nope", 404, True),
        ("?label=staging&version=1", 400, True),
        ("?version=x", 400, True),
        ("?resolve=false", 200, False),
    ],
)
def test_fetching_through_the_langfuse_api(
    read_key: str,
    query: str,
    status: int,
    plain: bool,
    settings: Any,
    drf_cycles: list[str],
) -> None:
    response, hot = both(get(basic(read_key), LANGFUSE + query), settings, drf_cycles)
    assert response.status_code == status
    assert hot is plain
    etag = response.headers.get("ETag")
    if etag:
        again, hot = both(
            get(basic(read_key), LANGFUSE + query, HTTP_IF_NONE_MATCH=etag),
            settings,
            drf_cycles,
        )
        assert (again.status_code, hot) == (304, plain)


def test_langfuse_credentials_other_than_a_good_key_go_through_drf(
    read_key: str, settings: Any, drf_cycles: list[str]
) -> None:
    clients = [basic(read_key, public="someone-else"), APIClient(), key_client(read_key)]
    malformed = APIClient()
    malformed.credentials(HTTP_AUTHORIZATION="Basic not-base64!")
    for client in [*clients, malformed]:
        response, hot = both(get(client, LANGFUSE), settings, drf_cycles)
        assert response.status_code == 401
        assert not hot


def test_a_body_over_djangos_upload_limit_goes_through_drf(
    reader: APIClient, drf_cycles: list[str], settings: Any
) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 200  # the example turn is longer
    response, hot = both(post(reader, "/api/v1/assemble", TURN), settings, drf_cycles)
    assert response.status_code == 400  # in the API's error shape (it was an HTML page)
    assert response.json()["type"] == "client_error"
    assert not hot
