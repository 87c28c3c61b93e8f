"""Playtests against a local OpenAI-compatible server: runs, verdicts, the cache, the call
cap, failures of the endpoint, permissions, and playtests off."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import override_settings

from promptadmin.conversations.models import Conversation
from promptadmin.conversations.services import conversation_append
from promptadmin.playtests.models import PlaytestCall, PlaytestRun
from promptadmin.releases.models import Scenario
from promptadmin.releases.services import scenario_create
from tests.promptadmin.api.conftest import errors, person, session_client
from tests.promptadmin.conversations.fake_llm import Reply, fake_llm

JSON_REPLY = '{"mood": "wary", "line": "Aye, the bell tolls."}'


def npc(body: dict[str, Any]) -> Reply:
    """Deterministic answers: the judge passes what stays in character; the NPC answers
    its input (JSON when asked for JSON)."""
    messages = body["messages"]
    if "You grade a reply" in messages[0]["content"]:
        reply = messages[1]["content"]
        return Reply(text="FAIL: breaks character." if "AI" in reply else "PASS: in character.")
    said = messages[-1]["content"]
    if said == "json please":
        return Reply(text=JSON_REPLY)
    return Reply(text=f"Aye, traveller. You said: {said}")


def endpoint(url: str, **extra: Any) -> Any:
    return override_settings(
        PLAYTEST_BASE_URL=url,
        PLAYTEST_MODEL="fake-model",
        PLAYTEST_API_KEY="k",
        PLAYTEST_TIMEOUT=extra.pop("timeout", 5.0),
        PLAYTEST_MAX_RETRIES=extra.pop("max_retries", 0),
        PLAYTEST_MAX_CALLS=extra.pop("max_calls", 200),
        PLAYTEST_CONCURRENCY=extra.pop("concurrency", 4),
    )


def scenario(name: str, expectations: list[dict[str, Any]], **values: Any) -> Scenario:
    return scenario_create(
        actor=None,
        name=name,
        entry="drowned-bell",
        expectations=expectations,
        **{"state": {"input": "hello"}, **values},
    )


def playtest(client: Any, capture: Any, **body: Any) -> Any:
    with capture(execute=True):
        response = client.post("/api/v1/playtests/", body, format="json")
    return response


@pytest.fixture
def llm() -> Any:
    with fake_llm() as fake:
        fake.respond = npc
        with endpoint(fake.url):
            yield fake


def only(run: dict[str, Any]) -> dict[str, Any]:
    (result,) = run["results"]
    return result


EXPECTATIONS = [
    ({"kind": "reply_contains", "text": "traveller"}, {"kind": "reply_contains", "text": "dragon"}),
    ({"kind": "reply_excludes", "text": "dragon"}, {"kind": "reply_excludes", "text": "Aye"}),
    (
        {"kind": "reply_matches", "pattern": "^Aye, \\w+"},
        {"kind": "reply_matches", "pattern": "^No"},
    ),
    ({"kind": "reply_max_tokens", "tokens": 50}, {"kind": "reply_max_tokens", "tokens": 2}),
    ({"kind": "judge", "rubric": "stays in character"}, None),
]


@pytest.mark.parametrize(("good", "bad"), EXPECTATIONS)
def test_each_reply_expectation_passes_and_fails(  # type: ignore[no-untyped-def]
    llm, demo, writer, reader, django_capture_on_commit_callbacks, good, bad
) -> None:
    scenario("good", [good])
    queued = playtest(writer, django_capture_on_commit_callbacks, scenarios=["good"])
    assert queued.status_code == 202, queued.json()
    assert set(queued.json()) == {"id", "status", "url"}
    run = reader.get(queued.json()["url"]).json()
    assert set(run) == {
        "id",
        "status",
        "release",
        "compare_to",
        "model",
        "calls",
        "cached",
        "results",
    }
    assert run["status"] == "done"
    result = only(run)
    (sample,) = result["samples"]
    assert sample["reply"] == "Aye, traveller. You said: hello"
    assert sample["expectations"][0]["passed"] and result["passed"], sample
    if bad is not None:
        scenario("bad", [bad])
        queued = playtest(writer, django_capture_on_commit_callbacks, scenarios=["bad"])
        result = only(reader.get(queued.json()["url"]).json())
        assert not result["passed"]
        assert not result["samples"][0]["expectations"][0]["passed"]


def test_json_replies_and_a_judge_that_fails(  # type: ignore[no-untyped-def]
    llm, demo, writer, reader, django_capture_on_commit_callbacks
) -> None:
    schema = {"type": "object", "required": ["mood", "line"]}
    scenario("json", [{"kind": "reply_json", "schema": schema}], state={"input": "json please"})
    scenario(
        "not json",
        [{"kind": "reply_json", "schema": schema}, {"kind": "judge", "rubric": "no AI talk"}],
        state={"input": "say AI"},
    )
    queued = playtest(writer, django_capture_on_commit_callbacks, scenarios="all")
    run = reader.get(queued.json()["url"]).json()
    by_name = {r["scenario"]: r for r in run["results"]}
    assert by_name["json"]["passed"]
    verdicts = by_name["not json"]["samples"][0]["expectations"]
    assert [v["passed"] for v in verdicts] == [False, False]
    assert verdicts[0]["detail"].startswith("not JSON")
    assert verdicts[1]["detail"] == "breaks character."


def test_what_is_sent(llm, demo, writer, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    scenario("sent", [], temperature=0.7, max_tokens=120, seed=7, samples=2)
    playtest(writer, django_capture_on_commit_callbacks, scenarios=["sent"])
    assert len(llm.requests) == 2
    body = llm.requests[0]
    assert body["model"] == "fake-model"
    assert (body["temperature"], body["max_tokens"], body["seed"]) == (0.7, 120, 7)
    system, user = body["messages"]
    assert system["role"] == "system" and "CORE_BEGIN" in system["content"]
    assert "hello" not in system["content"]  # the input is the user's message, not the prompt's
    assert user == {"role": "user", "content": "hello"}


def test_a_second_run_makes_no_call(  # type: ignore[no-untyped-def]
    llm, demo, writer, reader, django_capture_on_commit_callbacks
) -> None:
    scenario("twice", [{"kind": "judge", "rubric": "in character"}], samples=3)
    first = playtest(writer, django_capture_on_commit_callbacks, scenarios=["twice"]).json()
    # 3 replies, one judgement: the replies are the same, the judge is asked once.
    assert reader.get(first["url"]).json()["calls"] == 4
    asked = len(llm.requests)
    second = reader.get(
        playtest(writer, django_capture_on_commit_callbacks, scenarios=["twice"]).json()["url"]
    ).json()
    assert len(llm.requests) == asked
    assert (second["calls"], second["cached"]) == (0, 6)
    assert all(s["cached"] for s in only(second)["samples"]) and only(second)["passed"]


def test_a_run_over_the_cap_is_refused_before_any_call(  # type: ignore[no-untyped-def]
    demo, writer, django_capture_on_commit_callbacks
) -> None:
    with fake_llm() as fake, endpoint(fake.url, max_calls=5):
        fake.respond = npc
        scenario("many", [{"kind": "judge", "rubric": "x"}], samples=3)
        refused = playtest(writer, django_capture_on_commit_callbacks, scenarios=["many"])
        assert refused.status_code == 400
        assert "needs 6 calls" in errors(refused)["scenarios"]
        assert "PLAYTEST_MAX_CALLS=5" in errors(refused)["scenarios"]
        assert fake.requests == [] and not PlaytestRun.objects.exists()


def test_the_compared_side_is_played_too(  # type: ignore[no-untyped-def]
    llm, demo, writer, reader, django_capture_on_commit_callbacks
) -> None:
    from promptadmin.releases.services import release_create

    release_create(actor=None, name="before", notes="", labels=[])
    scenario("both", [{"kind": "reply_contains", "text": "Aye"}])
    run = reader.get(
        playtest(
            writer, django_capture_on_commit_callbacks, scenarios=["both"], compare_to="before"
        ).json()["url"]
    ).json()
    assert [r["side"] for r in run["results"]] == ["release", "compare_to"]
    assert run["compare_to"] == "before"
    # Same prompt on both sides: one call, the other side from the cache.
    assert run["calls"] == 1 and run["cached"] == 1


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        (Reply(status=500), "answered 500"),
        (Reply(status=429, headers={"Retry-After": "0"}), "answered 429"),
        (Reply(raw=b"{not json"), "unreadable answer"),
        (Reply(raw=json.dumps({"choices": []}).encode()), "unreadable answer"),
        (Reply(delay=1.5), "no answer within"),
    ],
)
def test_a_failing_endpoint_fails_the_run_never_a_500(  # type: ignore[no-untyped-def]
    demo, writer, reader, django_capture_on_commit_callbacks, answer, words
) -> None:
    with fake_llm() as fake, endpoint(fake.url, timeout=0.5):
        fake.default = answer
        scenario("broken", [{"kind": "reply_contains", "text": "x"}])
        run = reader.get(
            playtest(writer, django_capture_on_commit_callbacks, scenarios=["broken"]).json()["url"]
        ).json()
    assert run["status"] == "failed"
    (sample,) = only(run)["samples"]
    assert sample["reply"] is None and words in sample["expectations"][0]["detail"]
    assert not PlaytestCall.objects.exists()  # nothing paid is kept: a retry asks again


def test_a_seed_goes_only_to_an_endpoint_that_takes_one(  # type: ignore[no-untyped-def]
    demo, writer, reader, django_capture_on_commit_callbacks
) -> None:
    no_seed = b'{"error": {"message": "Unsupported parameter: seed", "type": "invalid"}}'
    with fake_llm(Reply(status=400, raw=no_seed)) as fake, endpoint(fake.url):
        fake.respond = npc
        scenario("seeded", [], seed=7)
        run = reader.get(
            playtest(writer, django_capture_on_commit_callbacks, scenarios=["seeded"]).json()["url"]
        ).json()
    assert run["status"] == "done", run
    assert [("seed" in body) for body in fake.requests] == [True, False]
    assert only(run)["samples"][0]["reply"].startswith("Aye, traveller.")


def test_the_client_retries_a_429(  # type: ignore[no-untyped-def]
    demo, writer, reader, django_capture_on_commit_callbacks
) -> None:
    with (
        fake_llm(Reply(status=429, headers={"Retry-After": "0"})) as fake,
        endpoint(fake.url, max_retries=1),
    ):
        fake.respond = npc
        scenario("retried", [])
        run = reader.get(
            playtest(writer, django_capture_on_commit_callbacks, scenarios=["retried"]).json()[
                "url"
            ]
        ).json()
    assert run["status"] == "done" and len(fake.requests) == 2


def test_a_hostile_pattern_is_refused_at_save_or_runs_bounded(  # type: ignore[no-untyped-def]
    llm, demo, writer, reader, django_capture_on_commit_callbacks
) -> None:
    bad = writer.post(
        "/api/v1/scenarios/",
        {
            "name": "s",
            "entry": "drowned-bell",
            "expectations": [{"kind": "reply_matches", "pattern": "(?<=x)y"}],
        },
        format="json",
    )
    assert bad.status_code == 400 and "RE2" in errors(bad)["expectations.0.pattern"]
    schema_bad = writer.post(
        "/api/v1/scenarios/",
        {
            "name": "s",
            "entry": "drowned-bell",
            "expectations": [{"kind": "reply_json", "schema": {"type": 5}}],
        },
        format="json",
    )
    assert "Not a valid JSON Schema" in errors(schema_bad)["expectations.0.schema"]
    llm.respond = lambda body: Reply(text="a" * 30_000 + "b")
    scenario("hostile", [{"kind": "reply_matches", "pattern": "(a+)+$"}], max_tokens=4096)
    run = reader.get(
        playtest(writer, django_capture_on_commit_callbacks, scenarios=["hostile"]).json()["url"]
    ).json()
    assert run["status"] == "done" and not only(run)["passed"]


def test_permissions(  # type: ignore[no-untyped-def]
    llm, demo, writer, reader, django_capture_on_commit_callbacks
) -> None:
    scenario("p", [])
    assert playtest(reader, django_capture_on_commit_callbacks, scenarios=["p"]).status_code == 403
    viewer = session_client(person(None))
    assert playtest(viewer, django_capture_on_commit_callbacks, scenarios=["p"]).status_code == 403
    author = session_client(person("author"))
    queued = playtest(author, django_capture_on_commit_callbacks, scenarios=["p"])
    assert queued.status_code == 202
    assert reader.get("/api/v1/playtests/").json()["results"][0]["id"] == queued.json()["id"]
    assert viewer.get(queued.json()["url"]).status_code == 200
    from rest_framework.test import APIClient

    assert APIClient().get(queued.json()["url"]).status_code in (401, 403)


def test_bad_requests_name_the_field(  # type: ignore[no-untyped-def]
    llm, demo, writer, django_capture_on_commit_callbacks
) -> None:
    for body, field in [
        ({"scenarios": ["nope"]}, "scenarios"),
        ({"scenarios": "some"}, "scenarios"),
        ({"scenarios": []}, "scenarios"),
        ({"scenarios": [{"a": 1}]}, "scenarios"),
        ({"scenarios": ["x" * 10_000]}, "scenarios"),
        ({"scenarios": ["nul\u0000"]}, "scenarios.0"),
        ({"scenarios": "all", "release": "\u0000"}, "release"),
        ({"scenarios": "all", "release": "no-such"}, "release"),
        ({"scenarios": "all", "compare_to": "no-such"}, "compare_to"),
        ({"scenarios": "all", "extra": 1}, "extra"),
    ]:
        scenario("x", []) if not Scenario.objects.exists() else None
        response = playtest(writer, django_capture_on_commit_callbacks, **body)
        assert response.status_code == 400, (body, response.json())
        assert field in errors(response), (body, response.json())
    lone_surrogate = writer.post(
        "/api/v1/playtests/", '{"scenarios": ["\\ud800"]}', content_type="application/json"
    )
    assert lone_surrogate.status_code == 400


@override_settings(PLAYTEST_BASE_URL="")
def test_playtests_off_say_how_to_turn_them_on(reader, writer, db) -> None:  # type: ignore[no-untyped-def]
    for response in (
        writer.post("/api/v1/playtests/", {"scenarios": "all"}, format="json"),
        reader.get("/api/v1/playtests/"),
        reader.get("/api/v1/playtests/1"),
    ):
        assert response.status_code == 409
        assert "PLAYTEST_BASE_URL" in errors(response)[None]


def test_a_scenario_keeps_its_playtest_fields(writer, reader, demo) -> None:  # type: ignore[no-untyped-def]
    created = writer.post(
        "/api/v1/scenarios/",
        {
            "name": "fields",
            "entry": "drowned-bell",
            "temperature": 0.5,
            "max_tokens": 50,
            "seed": 3,
            "samples": 5,
            "expectations": [{"kind": "fits"}, {"kind": "judge", "rubric": "polite"}],
        },
        format="json",
    )
    assert created.status_code == 201, created.json()
    read = reader.get(f"/api/v1/scenarios/{created.json()['id']}/").json()
    assert (read["temperature"], read["max_tokens"], read["seed"], read["samples"]) == (
        0.5,
        50,
        3,
        5,
    )
    too_many = writer.post(
        "/api/v1/scenarios/",
        {"name": "six", "entry": "drowned-bell", "samples": 6},
        format="json",
    )
    assert "samples" in errors(too_many)


def test_the_list_reads_in_a_constant_number_of_queries(  # type: ignore[no-untyped-def]
    llm, demo, writer, reader, django_capture_on_commit_callbacks, django_assert_max_num_queries
) -> None:
    scenario("listed", [{"kind": "reply_contains", "text": "Aye"}], samples=2)
    for _ in range(3):
        playtest(writer, django_capture_on_commit_callbacks, scenarios=["listed"])
    with django_assert_max_num_queries(4):  # the key, the count, the runs, their samples
        listed = reader.get("/api/v1/playtests/?page_size=3").json()
    assert listed["count"] == 3 and len(listed["results"]) == 3
    assert all(len(only(run)["samples"]) == 2 for run in listed["results"])


def converse(key: str, *said: tuple[str, str]) -> None:
    conversation_append(
        actor=None, key=key, messages=[{"role": role, "content": text} for role, text in said]
    )


def test_a_conversation_is_sent_as_messages_not_in_the_prompt(  # type: ignore[no-untyped-def]
    llm, demo, writer, django_capture_on_commit_callbacks
) -> None:
    converse(
        "tavern-1",
        ("user", "Where is the bell?"),
        ("assistant", "In the drowned tower."),
        ("user", "Take me there."),
    )
    created = writer.post(
        "/api/v1/scenarios/",
        {
            "name": "talked",
            "entry": "drowned-bell",
            "conversation": "tavern-1",
            "state": {"input": "hello"},
        },
        format="json",
    )
    assert created.status_code == 201, created.json()
    assert created.json()["conversation"] == "tavern-1"
    playtest(writer, django_capture_on_commit_callbacks, scenarios=["talked"])
    (body,) = llm.requests
    system, *rest = body["messages"]
    assert system["role"] == "system" and "CORE_BEGIN" in system["content"]
    assert "Where is the bell" not in system["content"]  # not flattened into the prompt
    assert rest == [
        {"role": "user", "content": "Where is the bell?"},
        {"role": "assistant", "content": "In the drowned tower."},
        {"role": "user", "content": "Take me there."},
        {"role": "user", "content": "hello"},
    ]
    # The conversation goes on: the next playtest asks again, with the new history.
    converse("tavern-1", ("assistant", "Follow me."))
    playtest(writer, django_capture_on_commit_callbacks, scenarios=["talked"])
    assert len(llm.requests) == 2
    assert llm.requests[1]["messages"][-2] == {"role": "assistant", "content": "Follow me."}


def test_a_conversation_gone_since_fails_that_scenario_only(  # type: ignore[no-untyped-def]
    llm, demo, writer, reader, django_capture_on_commit_callbacks
) -> None:
    converse("brief", ("user", "Hi."))
    talked = scenario("talked", [], conversation="brief")
    scenario("plain", [])
    Conversation.objects.filter(key="brief").delete()
    run = playtest(writer, django_capture_on_commit_callbacks, scenarios="all").json()
    results = {
        r["scenario"]: r for r in reader.get(f"/api/v1/playtests/{run['id']}").json()["results"]
    }
    assert results["plain"]["passed"] is True
    assert results[talked.name]["passed"] is False
    (sample,) = results[talked.name]["samples"]
    assert "No conversation with key 'brief'" in sample["expectations"][0]["detail"]
