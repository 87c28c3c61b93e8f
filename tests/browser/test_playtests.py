"""Playtests in the browser: playtest a scenario, change a segment, playtest the change
from the publish page, see the failing reply expectation with both replies, and confirm."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from promptadmin.content.models import Segment
from promptadmin.releases import services
from tests.promptadmin.conversations.fake_llm import Reply, fake_llm
from tests.promptadmin.playtests.test_playtests import converse
from tests.promptadmin.studio.test_playtests import calm_bell

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("demo")]


def answer(body: dict[str, Any]) -> Reply:
    system = body["messages"][0]["content"]
    return Reply(text="Aye. " + ("The bell is cracked." if "cracked" in system else "All calm."))


@pytest.fixture
def model(settings: Any) -> Iterator[Any]:
    with fake_llm() as llm:
        llm.respond = answer
        settings.PLAYTEST_BASE_URL = llm.url
        settings.PLAYTEST_MODEL = "fake-model"
        settings.PLAYTEST_MAX_RETRIES = 0
        yield llm


def test_playtest_a_scenario_then_the_change_from_the_publish_page(
    page: Any, make_user: Any, sign_in: Any, screenshot: Any, model: Any
) -> None:
    make_user("ada", "admin")
    calm_bell()
    services.release_create(actor=None, name="r-launch", labels=["production"])
    sign_in(page, "ada", "/playtests/")
    page.get_by_label("calm bell").check()
    page.get_by_role("button", name="Playtest").click()
    expect(page.get_by_text("Aye. All calm.")).to_be_visible()
    expect(page.locator("li.ok")).to_contain_text("reply_excludes")

    tone = Segment.objects.get(import_key="w-iron-tone")
    page.goto(f"/segments/{tone.pk}/")
    page.get_by_label("Content").fill("The bell is cracked.")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text("not live until published")).to_be_visible()

    page.goto("/releases/publish/")
    page.get_by_role("button", name="Playtest the change").click()
    expect(page.locator("del")).to_contain_text("All calm")
    expect(page.locator("ins")).to_contain_text("The bell is cracked")
    expect(page.locator("li.fail")).to_contain_text("contains 'cracked'")
    screenshot(page, "30-playtest-run")

    page.goto("/releases/publish/")
    expect(page.get_by_text("reply expectations fail")).to_be_visible()
    page.get_by_role("button", name="Publish as 'production'").click()
    expect(page.get_by_text("Reply expectations fail in playtest")).to_be_visible()
    page.get_by_label("Publish even though expectations fail").check()
    page.get_by_role("button", name="Publish as 'production'").click()
    expect(page.get_by_text("as 'production'. It is live now.")).to_be_visible()


def test_playtest_from_a_scenarios_page_with_its_conversation(
    page: Any, make_user: Any, sign_in: Any, model: Any
) -> None:
    make_user("ada", "author")
    # Long replies with a long link: side by side they would not fit a phone's width.
    link = " See https://example.com/the-drowned-bell/tower/stairs/tide-tables.html"
    model.respond = lambda body: Reply(text=answer(body).text + link)
    converse("tavern-7", ("user", "Is the bell safe?"), ("assistant", "Safe as the tide."))
    scenario = calm_bell()
    services.release_create(actor=None, name="r-launch", labels=["production"])
    sign_in(page, "ada", f"/scenarios/{scenario.pk}/")
    page.get_by_label("Conversation").fill("tavern-7")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text("Saved the scenario 'calm bell'.")).to_be_visible()
    page.get_by_role("link", name="calm bell").click()
    expect(page.get_by_text("the history of conversation tavern-7")).to_be_visible()
    page.get_by_role("button", name="Playtest", exact=True).click()
    expect(page).to_have_url(re.compile(r"/playtests/\d+/$"))
    # Working copy and production, side by side.
    expect(page.locator("blockquote.reply").filter(has_text="Aye. All calm.")).to_have_count(2)
    expect(page.locator("li.ok").first).to_contain_text("reply_excludes")
    body = model.requests[0]  # both sides ask the same: one call
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "user"]
    assert body["messages"][1]["content"] == "Is the bell safe?"
    expect(page.get_by_text("The history of conversation tavern-7 was sent")).to_be_visible()
    # On a phone, the two sides stand one under the other, both in view without scrolling
    # sideways.
    page.set_viewport_size({"width": 390, "height": 844})
    for reply in page.locator("blockquote.reply").all():
        box = reply.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, box
