"""The scenarios page: list saved scenarios, run them against any version of the content
(every expectation shown, passing ones too), edit and delete them through the services."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import pytest
from django.test import Client

from promptadmin.content.services import segments
from promptadmin.conversations.services import conversation_append
from promptadmin.releases import services
from promptadmin.releases.models import Scenario

pytestmark = pytest.mark.usefixtures("content")


@pytest.fixture
def bell() -> Scenario:
    return services.scenario_create(
        actor=None,
        name="Bell at night",
        entry="drowned-bell",
        first_turn=True,
        npcs=[{"npc": "marta-vell", "tier": 0}],
        state={"input": "I ring the bell."},
        expectations=[
            {"kind": "contains", "text": "A bell rings underwater."},
            {"kind": "contains", "text": "dragons"},
            {"kind": "max_tokens", "tokens": 4000},
        ],
    )


def verdicts(html: str) -> list[str]:
    """Each expectation's line in the run, as shown (tags dropped)."""
    items = re.findall(r'<li class="check-(?:pass|fail)">([\s\S]*?)</li>', html)
    return [" ".join(unescape(re.sub(r"<[^>]+>", "", item)).split()) for item in items]


def test_the_list_shows_each_scenario_and_its_expectations(viewer: Client, bell: Any) -> None:
    html = unescape(viewer.get("/scenarios/").content.decode())
    assert "Bell at night" in html
    assert "contains 'dragons'" in html and "at most 4000 tokens" in html
    assert "/preview/?entry=drowned-bell" in html
    assert f"/scenarios/{bell.pk}/delete/" not in html  # viewers only read and run


def test_running_shows_every_expectation_passing_and_failing(viewer: Client, bell: Any) -> None:
    html = viewer.get("/scenarios/", {"release": "working"}).content.decode()
    assert verdicts(html) == [
        "holds contains 'A bell rings underwater.'",
        "fails contains 'dragons': no 'dragons' in the prompt",
        "holds at most 4000 tokens",
    ]
    assert "1 expectation fails" in html


def test_running_against_a_release_uses_what_it_holds(author: Client, content: Any) -> None:
    services.scenario_create(
        actor=None,
        name="Premise kept",
        entry="drowned-bell",
        expectations=[{"kind": "contains", "text": "A bell rings underwater."}],
    )
    services.release_create(actor=None, name="r-one")
    segments.segment_update(actor=None, segment=content["premise"], content="A gong.")
    working = author.get("/scenarios/", {"release": "working"}).content.decode()
    assert verdicts(working) == [
        "fails contains 'A bell rings underwater.': no 'A bell rings underwater.' in the prompt"
    ]
    released = author.get("/scenarios/", {"release": "r-one"}).content.decode()
    assert verdicts(released) == ["holds contains 'A bell rings underwater.'"]
    assert "every expectation holds" in released
    assert "release=r-one" in released  # its preview link shows the same content
    unknown = author.get("/scenarios/", {"release": "r-nine"})
    assert "Select a valid choice" in unknown.content.decode()


def test_a_scenario_that_cannot_be_assembled_says_why(viewer: Client, bell: Any) -> None:
    Scenario.objects.filter(pk=bell.pk).update(entry="gone")
    html = viewer.get("/scenarios/", {"release": "working"}).content.decode()
    assert "cannot run" in html and "gone" in html


def test_editing_saves_through_the_service_as_a_new_revision(author: Client, bell: Any) -> None:
    form = author.get(f"/scenarios/{bell.pk}/").content.decode()
    assert 'value="dragons"' in form and "I ring the bell." in form
    response = author.post(
        f"/scenarios/{bell.pk}/",
        {"name": "Bell at dawn", "entry": "drowned-bell", "token_budget": "900",
         "npc_budget": "100", "npc": ["marta-vell", ""], "tier": ["2", "0"],
         "expect_kind": ["fits", "contains", "keeps_segment", ""],
         "expect_value": ["", "bell", "7", ""], "input": "Dawn.\r\nI wait.",
         "game_state": '{"tide": "low"}', "expected_revision": "1"},
    )  # fmt: skip
    assert response.status_code == 302
    bell.refresh_from_db()
    assert (bell.name, bell.revision, bell.token_budget, bell.first_turn) == (
        "Bell at dawn", 2, 900, False
    )  # fmt: skip
    assert bell.npcs == [{"npc": "marta-vell", "tier": 2}]
    assert bell.state == {"game_state": {"tide": "low"}, "input": "Dawn.\nI wait."}
    assert bell.expectations == [
        {"kind": "fits"},
        {"kind": "contains", "text": "bell"},
        {"kind": "keeps_segment", "segment": 7},
    ]
    assert bell.history.count() == 2


def test_a_bad_edit_is_refused_naming_what_to_fix(author: Client, bell: Any) -> None:
    base = {"name": "Bell", "entry": "drowned-bell", "token_budget": "900", "npc_budget": "100",
            "expected_revision": "1"}  # fmt: skip
    response = author.post(
        f"/scenarios/{bell.pk}/",
        {**base, "expect_kind": ["max_tokens", "contains"], "expect_value": ["many", " "],
         "npc": ["nobody"], "tier": ["1"]},
    )  # fmt: skip
    assert response.status_code == 400
    html = response.content.decode()
    assert "Expectation 1 (At most N tokens): a whole number." in html
    bell.refresh_from_db()
    assert bell.revision == 1
    response = author.post(
        f"/scenarios/{bell.pk}/",
        {**base, "expect_kind": ["contains"], "expect_value": [" "], "npc": ["nobody"],
         "tier": ["1"]},
    )  # fmt: skip
    html = response.content.decode()
    assert "Expectation 1: Expected some text to look for." in html
    assert "NPCs: Unknown NPC slugs: nobody." in html


def test_a_stale_edit_or_delete_is_refused(author: Client, bell: Any) -> None:
    services.scenario_update(actor=None, scenario=bell, token_budget=500)
    response = author.post(
        f"/scenarios/{bell.pk}/",
        {"name": "Mine", "entry": "drowned-bell", "token_budget": "900", "npc_budget": "100",
         "expected_revision": "1"},
    )  # fmt: skip
    assert response.status_code == 409
    assert "Someone saved this scenario since you opened it" in response.content.decode()
    refused = author.post(f"/scenarios/{bell.pk}/delete/", {"expected_revision": "1"}, follow=True)
    assert "was changed since you opened this page" in refused.content.decode()
    assert Scenario.objects.filter(pk=bell.pk).exists()


def test_deleting_keeps_the_history(author: Client, viewer: Client, bell: Any) -> None:
    assert (
        viewer.post(f"/scenarios/{bell.pk}/delete/", {"expected_revision": "1"}).status_code == 403
    )
    response = author.post(f"/scenarios/{bell.pk}/delete/", {"expected_revision": "1"}, follow=True)
    assert "Deleted the scenario &#x27;Bell at night&#x27;." in response.content.decode()
    assert not Scenario.objects.exists()
    assert Scenario.history.filter(id=bell.pk, history_type="-").exists()


def test_a_scenario_names_a_conversation_checked_as_the_api_checks_it(
    author: Client, bell: Any
) -> None:
    conversation_append(actor=None, key="tavern-1", messages=[{"role": "user", "content": "Hail."}])
    base = {"name": "Bell", "entry": "drowned-bell", "token_budget": "900", "npc_budget": "100",
            "expected_revision": "1"}  # fmt: skip
    for value, problem in [
        ("bad key!", "Use 1 to 200 letters, digits"),
        ("x" * 201, "no more than 200 characters"),
        ("nobody", "No conversation with key &#x27;nobody&#x27;."),
    ]:
        refused = author.post(f"/scenarios/{bell.pk}/", {**base, "conversation": value})
        assert refused.status_code == 400
        html = refused.content.decode()
        # Shown at the field, which stays open with what was typed.
        assert problem in html and 'name="conversation"' in html, value
    saved = author.post(f"/scenarios/{bell.pk}/", {**base, "conversation": " tavern-1 "})
    assert saved.status_code == 302
    bell.refresh_from_db()
    assert bell.conversation == "tavern-1"
    assert 'value="tavern-1"' in author.get(f"/scenarios/{bell.pk}/").content.decode()


def test_reply_expectations_and_how_the_model_is_asked_are_edited_here(
    author: Client, bell: Any
) -> None:
    base = {"name": "Bell", "entry": "drowned-bell", "token_budget": "900", "npc_budget": "100"}
    response = author.post(
        f"/scenarios/{bell.pk}/",
        {**base, "expected_revision": "1",
         "expect_kind": ["contains", "reply_excludes", "reply_matches", "reply_json",
                         "reply_max_tokens", "judge"],
         "expect_value": ["bell", "As an AI", "^Aye", '{"type": "object"}', "80",
                          "stays in character"],
         "temperature": "0.7", "max_tokens": "120", "seed": "7", "samples": "3"},
    )  # fmt: skip
    assert response.status_code == 302
    bell.refresh_from_db()
    assert bell.expectations == [
        {"kind": "contains", "text": "bell"},
        {"kind": "reply_excludes", "text": "As an AI"},
        {"kind": "reply_matches", "pattern": "^Aye"},
        {"kind": "reply_json", "schema": {"type": "object"}},
        {"kind": "reply_max_tokens", "tokens": 80},
        {"kind": "judge", "rubric": "stays in character"},
    ]
    assert (bell.temperature, bell.max_tokens, bell.seed, bell.samples) == (0.7, 120, 7, 3)
    page = unescape(author.get(f"/scenarios/{bell.pk}/").content.decode())
    assert 'value="{"type": "object"}"' in page and 'value="stays in character"' in page
    refused = author.post(
        f"/scenarios/{bell.pk}/",
        {**base, "expected_revision": "2", "expect_kind": ["reply_json", "reply_matches"],
         "expect_value": ["{not json", "(unclosed"], "samples": "9"},
    )  # fmt: skip
    assert refused.status_code == 400
    html = unescape(refused.content.decode())
    assert "Expectation 1 (schema) is not valid JSON" in html
    assert "Ensure this value is less than or equal to 5." in html
    bad_pattern = author.post(
        f"/scenarios/{bell.pk}/",
        {**base, "expected_revision": "2", "expect_kind": ["reply_matches"],
         "expect_value": ["(unclosed"]},
    )  # fmt: skip
    assert bad_pattern.status_code == 400
    assert "Expectation 1: " in unescape(bad_pattern.content.decode())
