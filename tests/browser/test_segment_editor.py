"""Editing a segment: live token counts and lints, saving, and conflicting edits."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from promptadmin.content.models import Segment

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("demo")]


def tone() -> Segment:
    return Segment.objects.get(import_key="w-iron-tone")


def test_typing_updates_the_token_count_and_lints_then_saving_makes_a_revision(
    page: Any, make_user: Any, sign_in: Any, screenshot: Any
) -> None:
    make_user("ada", "author")
    segment = tone()
    sign_in(page, "ada", f"/segments/{segment.pk}/")
    count = page.get_by_test_id("token-count")
    expect(count).to_have_text(str(segment.token_count))
    screenshot(page, "04-segment-editor")

    content = page.get_by_label("Content")
    content.press("End")
    content.press("Control+End")
    content.type(" Gulls scream over the breakers all night long.")
    expect(count).not_to_have_text(str(segment.token_count))
    assert int(count.inner_text()) > segment.token_count
    expect(page.locator("#live-check")).to_contain_text("since saved")

    content.press("Control+End")
    content.type("\n=== CORE_END ===")
    expect(page.locator("#live-check .lint-warning")).to_contain_text("looks like a block frame")
    screenshot(page, "05-segment-editor-lint")

    page.get_by_role("button", name="Save").click()
    expect(page.locator(".msg-success")).to_have_text("Saved revision 2.")
    assert "Gulls scream" in tone().content


def test_a_stale_edit_shows_only_what_both_changed_and_keeping_mine_saves_the_merge(
    new_page: Any, make_user: Any, sign_in: Any, screenshot: Any
) -> None:
    make_user("ada", "author")
    make_user("bo", "author")
    url = f"/segments/{tone().pk}/"
    ada, bo = new_page(), new_page()
    sign_in(ada, "ada", url)
    sign_in(bo, "bo", url)

    bo.get_by_label("Content").fill("Bo's coast: fog and tar.")
    bo.get_by_label("Sort order").fill("7")
    bo.get_by_role("button", name="Save").click()
    expect(bo.locator(".msg-success")).to_have_text("Saved revision 2.")

    ada.get_by_label("Content").fill("Ada's coast: rust and rain.")
    ada.get_by_label("Version label").fill("1.1.0")
    ada.get_by_role("button", name="Save").click()
    conflict = ada.locator(".conflict")
    expect(conflict).to_contain_text("bo saved this segment while you were editing")
    expect(conflict).to_contain_text("Their change to sort order is kept.")
    expect(conflict).to_contain_text("Your change to version label is in the form below.")
    # Only the text needs a decision: each side's change against where both started.
    expect(conflict.locator(".conflict-field")).to_have_count(1)
    expect(conflict.locator(".conflict-field legend")).to_have_text("Text")
    diffs = conflict.locator("table.diff")
    expect(diffs.first.locator("td.d-changed").nth(1)).to_have_text("Ada's coast: rust and rain.")
    expect(diffs.nth(1).locator("td.d-changed").nth(1)).to_have_text("Bo's coast: fog and tar.")
    # Focus goes to the conflict, which is what the author must read first.
    assert ada.evaluate("document.activeElement.id") == "conflict"
    screenshot(ada, "06-stale-edit-conflict")
    assert tone().content == "Bo's coast: fog and tar."  # nothing overwritten

    conflict.get_by_role("button", name="Save with these choices").click()
    expect(ada.locator(".msg-success")).to_have_text("Saved revision 3.")
    saved = tone()
    assert (saved.content, saved.version, saved.sort_order, saved.revision) == (
        "Ada's coast: rust and rain.",
        "1.1.0",
        7,
        3,
    )


def test_keep_mine_never_reverts_fields_the_author_did_not_touch(
    new_page: Any, make_user: Any, sign_in: Any
) -> None:
    # What was seen (2): Bo raised the tier 0 -> 2 and retitled; Ada changed only the text.
    make_user("ada", "author")
    make_user("bo", "author")
    marta = Segment.objects.get(import_key="npc-marta-0")
    url = f"/segments/{marta.pk}/"
    ada, bo = new_page(), new_page()
    sign_in(ada, "ada", url)
    sign_in(bo, "bo", url)
    bo.get_by_label("Tier").fill("2")
    bo.get_by_label("Title").fill("Marta, the harbourmaster")
    bo.get_by_role("button", name="Save").click()
    expect(bo.locator(".msg-success")).to_have_text("Saved revision 2.")

    ada.get_by_label("Content").fill("Marta Vell: tired of bells.")
    ada.get_by_role("button", name="Save").click()
    expect(ada.locator(".msg-success")).to_contain_text("their changes (title, tier) were kept")
    marta.refresh_from_db()
    assert (marta.content, marta.tier, marta.title, marta.revision) == (
        "Marta Vell: tired of bells.",
        2,
        "Marta, the harbourmaster",
        3,
    )


def test_after_a_stale_edit_discarding_mine_asks_then_loads_their_version(
    new_page: Any, make_user: Any, sign_in: Any
) -> None:
    make_user("ada", "author")
    make_user("bo", "author")
    url = f"/segments/{tone().pk}/"
    ada, bo = new_page(), new_page()
    sign_in(ada, "ada", url)
    sign_in(bo, "bo", url)
    bo.get_by_label("Content").fill("Bo's coast: fog and tar.")
    bo.get_by_role("button", name="Save").click()
    expect(bo.locator(".msg-success")).to_be_visible()

    ada.get_by_label("Content").fill("Ada's coast: rust and rain.")
    ada.get_by_role("button", name="Save").click()
    asked: list[str] = []

    def answer(dialog: Any) -> None:
        asked.append(dialog.message)
        dialog.dismiss() if len(asked) == 1 else dialog.accept()

    ada.on("dialog", answer)
    ada.get_by_text("Discard all my changes…").click()
    discard = ada.get_by_role("link", name="Discard my changes and load revision 2")
    discard.click()  # dismissed: nothing happens, Ada's version stays
    expect(ada.get_by_label("Content")).to_have_value("Ada's coast: rust and rain.")
    discard.click()
    expect(ada.get_by_label("Content")).to_have_value("Bo's coast: fog and tar.")
    expect(ada.locator(".conflict")).to_have_count(0)
    assert asked[0].startswith("Discard your changes for good")
    assert tone().revision == 2


def test_a_new_segment_offers_only_the_objects_its_scope_allows(
    page: Any, make_user: Any, sign_in: Any, screenshot: Any
) -> None:
    make_user("ada", "author")
    sign_in(page, "ada", "/segments/new/")
    scope = page.get_by_label("Scope")
    assert "game_state" not in scope.locator("option").evaluate_all("o => o.map(x => x.value)")
    scope.select_option("npc")
    options = page.locator("#id_object_options [role=option]")
    # Swapped in and wired up by htmx (studio.js marks it ready), the picker lists the
    # matches as soon as it has the focus.
    ready = '[data-picker-ready] [role=combobox][hx-get*="kinds={}&"]'
    expect(page.locator(ready.format("npc"))).to_have_count(1)
    page.get_by_label("Belongs to (NPC)").focus()
    expect(options).to_have_count(6)  # the six NPCs
    expect(page.get_by_label("Tier")).to_be_visible()
    scope.select_option("world")
    picker = page.get_by_label("Belongs to (world)")
    expect(page.locator(ready.format("world"))).to_have_count(1)
    # (htmx gave the new box the focus the old one had: leave it, then come back.)
    page.get_by_label("Content").focus()
    picker.focus()
    expect(options).to_have_count(2)  # the two worlds, nothing else
    expect(page.get_by_label("Tier")).to_have_count(0)

    picker.press_sequentially("iron")
    expect(options).to_have_count(1)
    picker.press("ArrowDown")
    picker.press("Enter")
    expect(picker).to_have_value(re.compile(r"The Iron Coast.*\(iron-coast\)"))
    page.get_by_label("Content").fill("Lighthouses are kept by the church.")
    page.get_by_label("Title").fill("Lights")
    page.get_by_label("Metadata").fill('{"source": "wiki"')
    page.get_by_role("button", name="Create segment").click()
    expect(page.locator(".has-error .errorlist")).to_contain_text("Metadata is not valid JSON")
    screenshot(page, "07-segment-new-error")
    page.get_by_label("Metadata").fill('{"source": "wiki"}')
    page.get_by_role("button", name="Create segment").click()
    expect(page.locator(".msg-success")).to_have_text(
        "Created the world segment 'Lights' of The Iron Coast."
    )
    assert Segment.objects.get(title="Lights").world.slug == "iron-coast"


def test_a_scope_chosen_the_moment_the_last_choice_swapped_in_still_narrows_the_fields(
    page: Any, make_user: Any, sign_in: Any
) -> None:
    # htmx wires up swapped-in controls only when it settles; a change made before that
    # (here, in the next task after the swap) used to go nowhere, and the form kept the
    # fields of the previous scope.
    make_user("ada", "author")
    sign_in(page, "ada", "/segments/new/")
    page.evaluate(
        """() => document.body.addEventListener('htmx:afterSwap', () => setTimeout(() => {
            const scope = document.getElementById('id_scope');
            if (scope.value !== 'npc') return;
            scope.value = 'world';
            scope.dispatchEvent(new Event('change', {bubbles: true}));
        }, 0), {once: true})"""
    )
    page.get_by_label("Scope").select_option("npc")
    expect(page.get_by_label("Belongs to (world)")).to_have_attribute(
        "hx-get", re.compile(r"kinds=world&")
    )
    expect(page.get_by_label("Tier")).to_have_count(0)
