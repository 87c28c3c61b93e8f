"""Object pickers can be typed into: a letter picks the first name starting with it."""

from __future__ import annotations

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


def test_typing_a_letter_in_the_cast_select_picks_the_npc(
    page: Any, make_user: Any, sign_in: Any, gate: Entry
) -> None:
    make_user("ada", "author")
    sign_in(page, "ada", f"/entries/{gate.slug}/")
    picker = page.get_by_label("Add an NPC")
    expect(picker).to_have_value("aldo")
    picker.focus()
    page.keyboard.type("O")
    expect(picker).to_have_value("oren")
    page.get_by_role("button", name="Add at the end").click()
    expect(page.locator("#entry-cast [role=status]")).to_have_text("Saved the cast.")
    assert [link.npc.slug for link in gate.ordered_cast()] == ["oren"]

    # What a test or an assistive tool reads is the name itself.
    page.get_by_label("Add an NPC").select_option(label="Lysa Marr")
    page.get_by_role("button", name="Add at the end").click()
    expect(page.locator("#entry-cast ol")).to_contain_text("Lysa Marr")
    assert [link.npc.slug for link in gate.ordered_cast()] == ["oren", "lysa"]
