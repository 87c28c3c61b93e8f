"""The scenarios page at phone width: every verdict and action of a run is on screen."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from promptadmin.releases.services import scenario_create

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("demo")]


def test_at_phone_width_every_verdict_and_action_is_on_screen(
    browser: Any, live_server: Any, make_user: Any, sign_in: Any, screenshot: Any
) -> None:
    # What was seen: at 390 px the scenarios' table scrolled sideways in its box, and the
    # run's verdicts ("holds", "fails"), the Preview link and Delete were off screen.
    make_user("ada", "author")
    scenario_create(
        actor=None,
        name="Bell at night",
        entry="drowned-bell",
        expectations=[{"kind": "fits"}, {"kind": "contains", "text": "dragons"}],
    )
    context = browser.new_context(base_url=live_server.url, viewport={"width": 390, "height": 844})
    try:
        page = context.new_page()
        sign_in(page, "ada", "/scenarios/?release=working")
        expect(page.get_by_role("status")).to_contain_text("1 expectation fails")
        table = page.locator("table.scenarios")
        controls = table.locator(".badge, a, button").all()
        assert len(controls) >= 5  # name, 2 verdicts, Preview, Delete
        for control in controls:
            box = control.bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, (
                control.text_content(),
                box,
            )
        run = page.get_by_role("button", name="Run every scenario").bounding_box()
        assert run is not None and run["x"] + run["width"] <= 390
        screenshot(page, "phone-scenarios")
    finally:
        context.close()


def test_at_phone_width_the_impact_report_says_what_changes_on_screen(
    browser: Any, live_server: Any, make_user: Any, sign_in: Any, screenshot: Any
) -> None:
    # What was seen: at 390 px the report's words ("new", "left out", "fails") sat in a
    # column off screen, each row as tall as those words wrapped in a sliver.
    make_user("root", "admin")
    scenario_create(
        actor=None, name="Bell at night", entry="drowned-bell", expectations=[{"kind": "fits"}]
    )
    context = browser.new_context(base_url=live_server.url, viewport={"width": 390, "height": 844})
    try:
        page = context.new_page()
        sign_in(page, "root", "/releases/publish/")
        words = page.locator("table.impact .lint")
        expect(words.first).to_be_visible()
        for said in words.all()[:6] + page.locator("table.impact a").all()[:3]:
            box = said.bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, (
                said.text_content(),
                box,
            )
        screenshot(page, "phone-impact")
    finally:
        context.close()
