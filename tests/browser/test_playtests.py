"""Playtests in the browser: playtest a scenario, change a segment, playtest the change
from the publish page, see the failing reply expectation with both replies, and confirm."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from promptadmin.content.models import Segment
from promptadmin.releases import services
from tests.promptadmin.conversations.fake_llm import Reply, fake_llm

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
    services.scenario_create(
        actor=None,
        name="calm bell",
        entry="drowned-bell",
        state={"input": "How is the bell?"},
        expectations=[{"kind": "reply_excludes", "text": "cracked"}],
    )
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
