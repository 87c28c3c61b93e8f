"""Smaller things a writer trips on: the phone layout, slugs, label pickers."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from promptadmin.releases import services

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("demo")]

PHONE = {"width": 390, "height": 844}
PREVIEW = "/preview/?entry=drowned-bell&first_turn=on&token_budget=700&npc_budget=60"


def test_on_a_phone_the_navigation_is_one_row_that_opens_and_the_preview_comes_first(
    page: Any, make_user: Any, sign_in: Any
) -> None:
    # What was seen: at 390 px the navigation took four rows (about 200 px) and the
    # preview's result sat below the whole form.
    make_user("ada", "admin")
    page.set_viewport_size(PHONE)
    sign_in(page, "ada", "/segments/")
    bar = page.locator("header.topbar")
    nav = page.get_by_role("navigation", name="Main")
    menu = page.get_by_role("button", name="Menu")
    assert bar.bounding_box()["height"] < 60
    expect(nav).to_be_hidden()
    expect(menu).to_have_attribute("aria-expanded", "false")
    menu.click()
    expect(menu).to_have_attribute("aria-expanded", "true")
    expect(nav.get_by_role("link", name="Preview")).to_be_visible()
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    page.keyboard.press("Escape")
    expect(nav).to_be_hidden()
    expect(menu).to_be_focused()

    menu.click()
    nav.get_by_role("link", name="Preview").click()
    page.goto(PREVIEW)
    result = page.locator("#preview-result").bounding_box()
    form = page.locator("#preview-form").bounding_box()
    assert result["y"] < form["y"] and result["y"] < PHONE["height"] / 2

    # Wide, the sections are listed in the one row, with no menu; the bar is one row at
    # every width (the sections go behind the menu where they would not fit).
    page.set_viewport_size({"width": 1700, "height": 900})
    expect(menu).to_be_hidden()
    expect(nav).to_be_visible()
    for width in (1700, 1366, 1024, 700):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(100)
        assert bar.bounding_box()["height"] < 60, width


def test_a_new_world_s_slug_is_suggested_from_its_name_until_the_slug_is_typed(
    page: Any, make_user: Any, sign_in: Any
) -> None:
    make_user("ada", "author")
    sign_in(page, "ada", "/worlds/new/")
    name, slug = page.get_by_label("Name"), page.get_by_label("Slug")
    name.press_sequentially("Cinder Gate")
    expect(slug).to_have_value("cinder-gate")
    name.fill("")
    name.press_sequentially("Évora's Night Market!")
    expect(slug).to_have_value("evora-s-night-market")
    slug.fill("market")
    name.press_sequentially(" again")
    expect(slug).to_have_value("market")
    page.get_by_role("button", name="Create").click()
    expect(page.locator(".msg-success")).to_contain_text("Created world")


def test_a_new_release_label_is_named_only_when_new_label_is_chosen(
    page: Any, make_user: Any, sign_in: Any
) -> None:
    make_user("ada", "admin")
    services.release_create(actor=None, name="r-one", labels=["production"])
    services.release_create(actor=None, name="r-two")
    sign_in(page, "ada", "/releases/")
    row = page.locator("tr", has_text="r-two")
    picker = row.get_by_label("Label to move to r-two")
    new_label = row.get_by_label("New label")
    expect(picker).to_have_value("production")
    expect(new_label).to_be_hidden()
    picker.select_option(label="New label…")
    expect(new_label).to_be_visible()
    expect(new_label).to_be_focused()
    new_label.fill("canary")
    row.get_by_role("button", name="Move here").click()
    expect(page.get_by_text("'canary' now points at r-two.")).to_be_visible()
    # r-two holds canary now: it is no longer offered there.
    options = page.locator("tr", has_text="r-two").get_by_label("Label to move to r-two")
    expect(options.locator("option")).to_have_text(["production", "New label…"])
