"""Lore in the browser: an author writes an entry, tests a line that triggers it, and sees
it in the preview with its trigger marked."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from promptadmin.lore.models import LoreEntry

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("demo")]

PREVIEW = "/preview/?entry=drowned-bell&first_turn=on&token_budget=8000&npc_budget=600"


def test_an_author_writes_lore_tests_a_line_and_sees_it_in_the_preview(
    page: Any, make_user: Any, sign_in: Any, screenshot: Any
) -> None:
    make_user("ada", "author")
    sign_in(page, "ada", "/lore/?world=iron-coast")
    page.get_by_role("link", name="New lore entry").click()
    page.get_by_label("Title").fill("The sunken bell")
    page.get_by_label("Keys").fill("bell\nchapel bell")
    page.get_by_label("Content").fill("The bell was cast from the hull of a sunken ship.")

    # The editor's test box: the entry as typed, as the author types the line.
    page.get_by_label("Test a line").fill("Who rang the bell last night?")
    expect(page.locator("#lore-check mark")).to_have_text("bell")
    page.get_by_role("button", name="Create lore entry").click()
    expect(page.locator(".msg-success")).to_contain_text("Created lore entry")
    entry = LoreEntry.objects.get()
    assert (entry.world.slug, entry.keys) == ("iron-coast", ["bell", "chapel bell"])

    # The lore page: the entry with its keys, and the world's test box.
    page.goto("/lore/?world=iron-coast")
    expect(page.locator(".key-chip").first).to_have_text("bell")
    page.get_by_role("textbox", name="Test a line").fill("The chapel bell tolls.")
    results = page.locator("#lore-test")
    expect(results.locator("mark")).to_have_text("chapel bell")
    expect(results).to_contain_text("triggered: key 'chapel bell' in the text")

    # The preview: the lore block, and the trigger marked in the turn's input.
    page.goto(PREVIEW)
    page.get_by_label("Input").fill("I ask Marta who rang the bell.")
    lore = page.get_by_test_id("preview-lore")
    expect(lore).to_contain_text("The sunken bell")
    expect(lore.locator("mark")).to_have_text("bell")
    expect(page.locator(".block.layer-lore")).to_contain_text("hull of a sunken ship")
    screenshot(page, "lore-preview")
