"""The preview: lowering the budget updates the explanation of what was cut, in place."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("demo")]


def test_lowering_the_budget_changes_the_explanation_in_place(
    page: Any, make_user: Any, sign_in: Any, screenshot: Any
) -> None:
    make_user("vic", "viewer")
    sign_in(
        page, "vic", "/preview/?entry=drowned-bell&first_turn=on&token_budget=8000&npc_budget=600"
    )
    cuts = page.get_by_test_id("truncation")
    expect(cuts).to_contain_text("Nothing was cut")
    expect(page.locator(".block")).to_have_count(5)
    page.evaluate("window.loadedOnce = true")

    budget = page.get_by_label("Token budget")
    budget.fill("300")
    expect(page.locator(".summary-figures")).to_contain_text("of 300 tokens")
    expect(cuts).to_contain_text("'Opening' (")
    cuts.get_by_text("Step by step").click()  # the steps arrive when the trace is opened
    expect(cuts).to_contain_text("left out: the prompt was")
    expect(page).to_have_url(re.compile(r"[?&]token_budget=300&"))
    assert "game_state=" not in page.url  # empty fields stay out of the shared address
    assert "'Old wars' (" not in cuts.inner_text()
    assert int(page.get_by_test_id("prompt-tokens").inner_text()) <= 300
    screenshot(page, "10-preview-truncated")

    budget.fill("200")
    expect(page.locator(".summary-figures")).to_contain_text("of 200 tokens")
    expect(cuts).to_contain_text("'Old wars' (")
    assert int(page.get_by_test_id("prompt-tokens").inner_text()) <= 200
    assert page.evaluate("window.loadedOnce") is True  # all in place

    page.goto(page.url)  # the address is the preview
    expect(page.get_by_label("Token budget")).to_have_value("200")
    expect(cuts).to_contain_text("'Old wars' (")


def test_npcs_and_state_are_part_of_the_preview(
    page: Any, make_user: Any, sign_in: Any, screenshot: Any
) -> None:
    make_user("vic", "viewer")
    sign_in(page, "vic", "/preview/?entry=drowned-bell&first_turn=on")
    # Each NPC is a searchable picker (a game has thousands), chosen with the keyboard.
    for number, typed, name in ((1, "Mar", "Marta Vell"), (2, "old", "Old Cobb")):
        picker = page.get_by_role("combobox", name=f"NPC at priority {number}")
        picker.press_sequentially(typed)
        expect(page.locator(f"#npc-{number}_options [role=option]").first).to_contain_text(name)
        picker.press("ArrowDown")
        picker.press("Enter")
        expect(picker).to_have_value(re.compile(rf"{name}.*\("))
        page.locator(f"#tier-{number}").fill("2")
    page.get_by_label("NPC budget").fill("80")
    page.get_by_label("Game state").fill('{"tide": "low"}')
    cuts = page.get_by_test_id("truncation")
    expect(page.locator(".block.layer-npc")).to_contain_text("[NPC: Marta Vell]")
    expect(page.locator(".block.layer-game_state")).to_contain_text("tide: low")
    cuts.get_by_text("Step by step").click()  # the steps arrive when the trace is opened
    expect(cuts).to_contain_text("shown at tier")
    screenshot(page, "11-preview-npcs")
    assert "npc=marta-vell" in page.url and "npc=old-cobb" in page.url  # slugs, as links


def test_the_long_parts_of_the_preview_arrive_when_opened_and_the_plain_text_is_exact(
    page: Any, make_user: Any, sign_in: Any
) -> None:
    make_user("vic", "viewer")
    state = "I ring the bell.\n\n  Twice, <loudly> & long."
    sign_in(page, "vic", "/preview/?entry=drowned-bell&first_turn=on&token_budget=300")
    page.get_by_label("Input").fill(state)
    expect(page.get_by_test_id("prompt-tokens")).to_have_text(re.compile(r"\d"))
    expect(page).to_have_url(re.compile(r"[?&]input="))
    page.evaluate("window.loadedOnce = true")

    # The plain text is the prompt the page was sent as blocks, joined in the browser.
    page.get_by_text("Plain text, to copy").click()
    plain = page.get_by_label("The assembled prompt as plain text")
    expect(plain).to_be_visible()
    expected = page.evaluate("fetch(location.href + '&show=prompt').then(r => r.text())")
    box = re.search(
        r'aria-label="The assembled prompt as plain text">\n(.*?)</textarea>', expected, re.S
    )
    assert box is not None
    assert plain.input_value() == html.unescape(box.group(1))
    assert "Twice, <loudly> & long." in plain.input_value()

    # Every segment considered, and the steps: loaded into place when opened.
    considered = page.get_by_test_id("considered")
    expect(considered.locator("tr")).to_have_count(0)
    considered.locator("summary").click()
    expect(considered.locator("tbody tr").first).to_be_visible()
    count = int(considered.locator("summary").inner_text().split()[0])
    expect(considered.locator("tbody tr")).to_have_count(count)
    trace = page.get_by_test_id("trace")
    trace.locator("summary").click()
    steps = int(re.findall(r"\d+", trace.locator("summary").inner_text())[0])
    expect(trace.locator("li.step")).to_have_count(steps)
    assert page.evaluate("window.loadedOnce") is True  # all in place
