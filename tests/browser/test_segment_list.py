"""Filtering, searching and paging the segment list in place, with a shareable address."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("demo")]


def test_filters_update_the_list_in_place_and_the_address_can_be_shared(
    page: Any, make_user: Any, sign_in: Any, screenshot: Any
) -> None:
    make_user("vic", "viewer")
    sign_in(page, "vic", "/segments/")
    rows = page.locator("#segment-results tbody tr")
    expect(page.locator(".result-count")).to_contain_text("41 segments, page 1 of 2")
    page.evaluate("window.loadedOnce = true")  # gone if the page reloads

    page.get_by_label("Scope").select_option("world")
    expect(page).to_have_url("/segments/?scope=world")
    expect(page.locator(".result-count")).to_contain_text("5 segments")
    expect(rows.locator(".scope")).to_have_text(["World"] * 5)

    page.get_by_label("Search").fill("tide-iron")
    expect(page.locator(".result-count")).to_contain_text("1 segment")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("Tide-iron")
    assert page.evaluate("window.loadedOnce") is True  # updated in place, not reloaded
    screenshot(page, "03-segments-filtered")

    shared = page.url
    other = page.context.new_page()
    other.goto(shared)
    expect(other.locator("#segment-results tbody tr")).to_have_count(1)
    expect(other.get_by_label("Search")).to_have_value("tide-iron")

    page.get_by_label("Search").fill("")
    page.get_by_label("Scope").select_option("")
    expect(page.locator(".result-count")).to_contain_text("page 1 of 2")
    page.get_by_role("link", name="Next →").click()
    expect(page.locator(".result-count")).to_contain_text("page 2 of 2")
    expect(page).to_have_url("/segments/?page=2")
    page.go_back()
    expect(page.locator(".result-count")).to_contain_text("page 1 of 2")


def test_column_headers_sort_the_list(page: Any, make_user: Any, sign_in: Any) -> None:
    make_user("vic", "viewer")
    sign_in(page, "vic", "/segments/")
    page.get_by_role("link", name="Tokens").click()
    expect(page.locator("th[aria-sort=descending]")).to_have_text("Tokens")
    counts = page.locator("#segment-results tbody td:nth-child(7)").all_inner_texts()
    assert [int(n) for n in counts] == sorted((int(n) for n in counts), reverse=True)


def test_a_search_then_an_owner_picked_with_the_keyboard_narrow_the_list(
    page: Any, make_user: Any, sign_in: Any
) -> None:
    make_user("vic", "viewer")
    sign_in(page, "vic", "/segments/")
    rows = page.locator("#segment-results tbody tr")
    page.get_by_label("Search").fill("bel")  # the beginning of a word is enough
    expect(page.locator(".result-count")).not_to_contain_text("41 segments")
    searched = rows.count()
    assert searched > 1

    owner = page.get_by_role("combobox", name="Belongs to")
    owner.press_sequentially("drown")
    options = page.locator("#id_object_options [role=option]")
    expect(options.first).to_contain_text("The Drowned Bell")
    expect(owner).to_have_attribute("aria-expanded", "true")
    owner.press("ArrowDown")
    expect(options.first).to_have_attribute("aria-selected", "true")
    expect(owner).to_have_attribute("aria-activedescendant", "id_object_options_0")
    owner.press("Enter")

    expect(page).to_have_url(re.compile(r"[?&]object=entry%3Adrowned-bell"))
    expect(page).to_have_url(re.compile(r"[?&]q=bel"))
    expect(owner).to_have_value(re.compile(r"The Drowned Bell.*\(drowned-bell\)"))
    expect(owner).to_have_attribute("aria-expanded", "false")
    expect(rows.first).to_contain_text("The Drowned Bell")
    belongs = rows.locator("td:nth-child(3)").all_inner_texts()
    assert belongs and all(text == "The Drowned Bell" for text in belongs)
    assert len(belongs) < searched
    # Escape closes the matches without picking; the list stays as it is.
    owner.fill("")
    owner.press_sequentially("mar")
    expect(options.first).to_be_visible()
    owner.press("Escape")
    expect(options).to_have_count(0)
