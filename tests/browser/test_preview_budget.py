"""The preview: lowering the budget updates the explanation of what was cut, in place."""

from __future__ import annotations

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
    expect(cuts).to_contain_text("shown at tier")
    expect(page.locator(".block.layer-npc")).to_contain_text("[NPC: Marta Vell]")
    expect(page.locator(".block.layer-game_state")).to_contain_text("tide: low")
    screenshot(page, "11-preview-npcs")
    assert "npc=marta-vell" in page.url and "npc=old-cobb" in page.url  # slugs, as links
