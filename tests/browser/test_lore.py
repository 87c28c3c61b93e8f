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


def test_an_author_imports_a_world_info_file_from_the_lore_page_dry_run_first(
    page: Any, make_user: Any, sign_in: Any, tmp_path: Any
) -> None:
    import json

    book = tmp_path / "relics.json"
    entries = {
        str(uid): {"uid": uid, "key": [f"relic{uid}"], "comment": f"Relic {uid}",
                   "content": f"Relic {uid} hums at night.", "order": 100, "position": 1}
        for uid in range(3)
    }  # fmt: skip
    book.write_text(json.dumps({"entries": entries}), encoding="utf-8")
    make_user("ada", "author")
    sign_in(page, "ada", "/lore/?world=iron-coast")
    page.locator("details.lore-import summary").click()
    form = page.locator("#lore-import-form")
    expect(form.get_by_label("World", exact=True)).to_have_value("iron-coast")
    form.get_by_label("World Info file").set_input_files(str(book))

    # A dry run, through the real CSRF check of a browser's form: what would change.
    form.get_by_role("button", name="Dry run").click()
    report = page.locator("#lore-import-report")
    expect(report).to_contain_text("Would create 3, update 0; 0 unchanged, 0 skipped.")
    expect(report).to_contain_text("Relic 2")
    assert not LoreEntry.objects.exists()

    # The import itself (the page keeps the world; the file is chosen again).
    form = page.locator("#lore-import-form")
    form.get_by_label("World Info file").set_input_files(str(book))
    form.get_by_role("button", name="Import").click()
    expect(page.locator("#lore-import-report")).to_contain_text("Created 3, updated 0")
    assert LoreEntry.objects.filter(world__slug="iron-coast").count() == 3
    page.locator("#lore-import-report").get_by_role("link", name="Relic 1").click()
    expect(page.get_by_label("Content")).to_have_value("Relic 1 hums at night.")
