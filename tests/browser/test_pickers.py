"""Object pickers can be typed into: a letter picks the first name starting with it."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from promptadmin.content.models import Entry
from tests.factories import EntryFactory, NPCFactory

pytestmark = pytest.mark.browser


@pytest.fixture
def gate(transactional_db: None) -> Entry:
    for slug, name in (("aldo", "Aldo Brine"), ("lysa", "Lysa Marr"), ("oren", "Oren Flint")):
        NPCFactory(slug=slug, name=name)
    return EntryFactory(slug="cinder-gate", name="Cinder Gate")


def test_typing_in_the_cast_picker_picks_the_npc(
    page: Any, make_user: Any, sign_in: Any, gate: Entry
) -> None:
    """The cast's "Add an NPC" is a searchable picker (a game has thousands of NPCs):
    typing the beginning of a name lists it, with no invisible characters in the way."""
    make_user("ada", "author")
    sign_in(page, "ada", f"/entries/{gate.slug}/")
    picker = page.get_by_role("combobox", name="Add an NPC")
    options = page.locator("#entry-cast [role=option]")
    for typed, name, cast in (("O", "Oren", ["oren"]), ("Lys", "Lysa Marr", ["oren", "lysa"])):
        picker.fill("")
        picker.press_sequentially(typed)
        expect(options.first).to_contain_text(name)
        picker.press("ArrowDown")
        picker.press("Enter")
        # The name in the box is isolated (U+2068 … U+2069): a right-to-left name cannot
        # reorder the slug; the options list it as typed.
        expect(picker).to_have_value(re.compile(rf"^\W?{name}.*\("))
        page.get_by_role("region", name="Cast").get_by_role("button", name="Add at the end").click()
        expect(page.locator("#entry-cast ol")).to_contain_text(name)
        assert [link.npc.slug for link in gate.ordered_cast()] == cast


def test_the_preview_and_a_new_entry_pick_with_the_keyboard(
    page: Any, make_user: Any, sign_in: Any, gate: Entry
) -> None:
    """The preview's entry and a new entry's world are pickers, not selects of every row."""
    make_user("ada", "author")
    sign_in(page, "ada", "/preview/")
    entry = page.get_by_role("combobox", name="Entry")
    entry.press_sequentially("Cind")
    expect(page.locator("#id_entry_options [role=option]").first).to_contain_text("Cinder Gate")
    entry.press("ArrowDown")
    entry.press("Enter")
    expect(page).to_have_url(re.compile(r"[?&]entry=cinder-gate(&|$)"))
    expect(page.locator("#preview-result")).not_to_contain_text("Choose an entry")

    page.goto("/entries/new/")
    page.get_by_label("Name").fill("Salt Road")
    world = page.get_by_role("combobox", name="World")
    world.press_sequentially(gate.world.name[:4])
    expect(page.locator("#id_world_options [role=option]").first).to_contain_text(gate.world.name)
    world.press("ArrowDown")
    world.press("Enter")
    page.get_by_role("button", name="Create entry").click()
    expect(page).to_have_url(re.compile(r"/entries/salt-road/$"))
    assert Entry.objects.get(slug="salt-road").world == gate.world
