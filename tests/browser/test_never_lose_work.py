"""What was seen (1, 6, 8, 10): work lost after a failed save or a concurrent save, a
fragile preview, focus lost after in-place updates. Each reproduced, and fixed."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from promptadmin.content.models import Entry, Segment, World
from promptadmin.content.services import catalog

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("demo")]


def tone() -> Segment:
    return Segment.objects.get(import_key="w-iron-tone")


def leave_with_a_draft(page: Any) -> None:
    """Leave the page without saving (answering "leave" to the guard): the draft stays."""
    page.on("dialog", lambda dialog: dialog.accept())
    page.goto("/")


def test_a_failed_save_shows_a_summary_keeps_the_text_and_the_guard(
    page: Any, make_user: Any, sign_in: Any, screenshot: Any
) -> None:
    make_user("ada", "author")
    sign_in(page, "ada", f"/segments/{tone().pk}/")
    page.get_by_label("Content").fill("The coast, rewritten with care.")
    page.get_by_label("Metadata").fill('{"source": ')
    page.get_by_role("button", name="Save").click()
    summary = page.locator("#error-summary")
    expect(summary).to_contain_text("Nothing was saved")
    expect(summary.get_by_role("link")).to_contain_text("Metadata: Metadata is not valid JSON")
    # The summary is in view and has focus; every typed value is still there.
    assert page.evaluate("document.activeElement.id") == "error-summary"
    assert (
        page.evaluate("document.getElementById('error-summary').getBoundingClientRect().top") < 900
    )
    expect(page.get_by_label("Content")).to_have_value("The coast, rewritten with care.")
    screenshot(page, "22-failed-save-summary")
    summary.get_by_role("link").click()
    assert page.evaluate("document.activeElement.name") == "metadata"
    # Leaving now asks first: the guard is armed though nothing was typed since the reload.
    asked: list[str] = []
    page.on("dialog", lambda dialog: (asked.append(dialog.type), dialog.dismiss()))
    page.get_by_role("link", name="Dashboard").click()
    page.wait_for_timeout(300)
    assert asked == ["beforeunload"]
    assert tone().content != "The coast, rewritten with care."


def test_a_draft_survives_a_reload_and_is_offered_back(
    page: Any, make_user: Any, sign_in: Any
) -> None:
    make_user("ada", "author")
    url = f"/segments/{tone().pk}/"
    sign_in(page, "ada", url)
    page.get_by_label("Content").fill("A draft that must not be lost.")
    leave_with_a_draft(page)
    page.goto(url)
    offer = page.locator(".draft-offer")
    expect(offer).to_contain_text("You have unsaved changes to this form")
    expect(page.get_by_label("Content")).not_to_have_value("A draft that must not be lost.")
    offer.get_by_role("button", name="Restore my unsaved changes").click()
    expect(page.get_by_label("Content")).to_have_value("A draft that must not be lost.")
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".msg-success")).to_have_text("Saved revision 2.")
    # Saved: the draft is gone, and nothing is offered any more.
    page.reload()
    expect(page.locator(".draft-offer")).to_have_count(0)


def test_two_authors_saving_the_same_world_both_keep_their_change(
    new_page: Any, make_user: Any, sign_in: Any
) -> None:
    # What was seen (10): the second save silently overwrote the first.
    make_user("ada", "author")
    make_user("bo", "author")
    ada, bo = new_page(), new_page()
    sign_in(ada, "ada", "/worlds/iron-coast/")
    sign_in(bo, "bo", "/worlds/iron-coast/")
    bo.get_by_label("Name").fill("The Rusted Coast")
    bo.get_by_role("button", name="Save").click()
    expect(bo.locator(".msg-success")).to_contain_text("Saved world")
    ada.get_by_label("Description").fill("Grey, wet and stubborn.")
    ada.get_by_role("button", name="Save").click()
    expect(ada.locator(".msg-success")).to_contain_text("their changes (name) were kept")
    world = World.objects.get(slug="iron-coast")
    assert (world.name, world.description) == ("The Rusted Coast", "Grey, wet and stubborn.")


def test_a_stale_segment_delete_deletes_nothing(
    new_page: Any, make_user: Any, sign_in: Any
) -> None:
    make_user("ada", "author")
    make_user("bo", "author")
    url = f"/segments/{tone().pk}/"
    ada, bo = new_page(), new_page()
    sign_in(ada, "ada", url)
    sign_in(bo, "bo", url)
    bo.get_by_label("Content").fill("Bo saved this meanwhile.")
    bo.get_by_role("button", name="Save").click()
    expect(bo.locator(".msg-success")).to_be_visible()
    ada.on("dialog", lambda dialog: dialog.accept())
    ada.get_by_text("Delete this segment…").click()
    ada.get_by_role("button", name=f"Delete segment #{tone().pk}").click()
    expect(ada.locator(".msg-error")).to_contain_text("so it was not deleted")
    assert tone().content == "Bo saved this meanwhile."


def test_the_preview_keeps_the_last_good_result_while_a_setting_is_invalid(
    page: Any, make_user: Any, sign_in: Any, screenshot: Any
) -> None:
    # What was seen (6): half-typed JSON replaced the preview; a budget of -5 said nothing.
    make_user("vic", "viewer")
    sign_in(page, "vic", "/preview/?entry=drowned-bell&first_turn=on&token_budget=300")
    tokens = page.get_by_test_id("prompt-tokens")
    expect(page.locator(".summary-figures")).to_contain_text("of 300 tokens")
    before = tokens.inner_text()
    page.evaluate("window.loadedOnce = true")

    page.get_by_label("Game state").fill('{"tide": "lo')
    errors = page.locator("#errors-game_state")
    expect(errors).to_contain_text("Game state is not valid JSON")
    expect(page.locator("#preview-stale")).to_be_visible()
    expect(page.locator("#preview-result")).to_have_class("preview-result is-stale")
    expect(tokens).to_have_text(before)  # the last good preview stays
    expect(page.get_by_label("Game state")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#errors-token_budget")).to_be_empty()  # only that field complains
    screenshot(page, "23-preview-stale")

    page.get_by_label("Game state").fill('{"tide": "low"}')
    expect(page.locator("#preview-stale")).to_be_hidden()
    expect(errors).to_be_empty()
    expect(page.locator(".block.layer-game_state")).to_contain_text("tide: low")

    page.get_by_label("Token budget").fill("-5")
    expect(page.locator("#errors-token_budget")).to_contain_text("greater than or equal to 0")
    expect(page.locator("#preview-stale")).to_contain_text("Out of date: fix Token budget.")
    assert page.evaluate("window.loadedOnce") is True  # never a reload, never a jump


def test_the_preview_announces_a_summary_not_the_prompt(
    page: Any, make_user: Any, sign_in: Any
) -> None:
    # What was seen (8): the whole preview was a live region.
    make_user("vic", "viewer")
    sign_in(page, "vic", "/preview/?entry=drowned-bell&first_turn=on&token_budget=8000")
    assert (
        page.locator("[aria-live], [role=status], [role=alert]").evaluate_all(
            "nodes => nodes.filter(n => n.querySelector('.prompt')).length"
        )
        == 0
    )
    page.get_by_label("Token budget").fill("300")
    status = page.locator("#preview-status")
    expect(status).to_contain_text("Preview updated: ")
    expect(status).to_contain_text("of 300 tokens")
    assert len(status.inner_text()) < 120


def test_reordering_rulesets_keeps_focus_on_the_control_used(
    page: Any, make_user: Any, sign_in: Any
) -> None:
    # What was seen (8): after an in-place update focus was lost (back to the page).
    make_user("ada", "author")
    sign_in(page, "ada", "/entries/drowned-bell/")
    entry = Entry.objects.get(slug="drowned-bell")
    first = entry.ordered_rulesets()[0]
    # Typed names are isolated (FSI ... PDI) inside labels, so that bidi text stays put.
    name = f"\u2068{first.name}\u2069"
    page.get_by_role("button", name=f"Move {name} down").click()
    expect(page.locator("#entry-rulesets [role=status]")).to_have_text(
        "Saved the order of rulesets."
    )
    focused = page.evaluate("document.activeElement.getAttribute('aria-label')")
    assert focused in (f"Move {name} down", f"Move {name} up")
    assert [r.slug for r in entry.ordered_rulesets()][1] == first.slug
    # The details form learnt the new revision: saving it is not a conflict.
    page.get_by_label("Description").fill("Reordered, then described.")
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".msg-success")).to_have_text("Saved entry 'The Drowned Bell'.")


def test_restoring_a_draft_from_an_older_revision_merges(
    new_page: Any, make_user: Any, sign_in: Any
) -> None:
    # Ada's draft was made on revision 1; Bo then raised the tier and retitled. Restoring
    # the draft must not put Bo's fields back: it merges against revision 1, like a save.
    make_user("ada", "author")
    make_user("bo", "author")
    marta = Segment.objects.get(import_key="npc-marta-0")
    url = f"/segments/{marta.pk}/"
    ada, bo = new_page(), new_page()
    sign_in(ada, "ada", url)
    ada.get_by_label("Content").fill("Marta Vell: tired of bells.")
    leave_with_a_draft(ada)
    sign_in(bo, "bo", url)
    bo.get_by_label("Tier").fill("2")
    bo.get_by_label("Title").fill("Marta, the harbourmaster")
    bo.get_by_role("button", name="Save").click()
    expect(bo.locator(".msg-success")).to_have_text("Saved revision 2.")

    ada.goto(url)
    offer = ada.locator(".draft-offer")
    expect(offer).to_contain_text("They were made on revision 1")
    offer.get_by_role("button", name="Restore my unsaved changes").click()
    note = ada.locator(".draft-restored")
    expect(note).to_contain_text("Restored your unsaved changes from revision 1.")
    expect(note).to_contain_text("merged with revision 2")
    ada.get_by_role("button", name="Save").click()
    expect(ada.locator(".msg-success")).to_contain_text("their changes (title, tier) were kept")
    marta.refresh_from_db()
    assert (marta.content, marta.tier, marta.title, marta.revision) == (
        "Marta Vell: tired of bells.",
        2,
        "Marta, the harbourmaster",
        3,
    )
    # The draft was saved: it is not offered again.
    ada.reload()
    expect(ada.locator(".draft-offer")).to_have_count(0)


def test_restoring_a_world_draft_from_an_older_revision_merges(
    new_page: Any, make_user: Any, sign_in: Any
) -> None:
    make_user("ada", "author")
    make_user("bo", "author")
    name = World.objects.get(slug="iron-coast").name
    ada, bo = new_page(), new_page()
    sign_in(ada, "ada", "/worlds/iron-coast/")
    ada.get_by_label("Description").fill("Grey, wet and stubborn.")
    leave_with_a_draft(ada)
    sign_in(bo, "bo", "/worlds/iron-coast/")
    bo.get_by_label("Name").fill("The Rusted Coast")
    bo.get_by_role("button", name="Save").click()
    expect(bo.locator(".msg-success")).to_contain_text("Saved world")

    ada.goto("/worlds/iron-coast/")
    ada.locator(".draft-offer").get_by_role("button", name="Restore my unsaved changes").click()
    expect(ada.get_by_label("Name")).to_have_value(name)  # the draft's, until the merge
    ada.get_by_role("button", name="Save").click()
    expect(ada.locator(".msg-success")).to_contain_text("their changes (name) were kept")
    world = World.objects.get(slug="iron-coast")
    assert (world.name, world.description) == ("The Rusted Coast", "Grey, wet and stubborn.")


def test_a_restored_entry_draft_keeps_its_base_when_the_rulesets_are_reordered(
    new_page: Any, make_user: Any, sign_in: Any
) -> None:
    # Reordering updates the entry's revision in the page's forms; a restored older draft
    # must keep the revision it was made on, or its save would undo Bo's rename.
    make_user("ada", "author")
    bo = make_user("bo", "author")
    entry = Entry.objects.get(slug="drowned-bell")
    ada = new_page()
    sign_in(ada, "ada", "/entries/drowned-bell/")
    ada.get_by_label("Description").fill("A bell under the tide.")
    leave_with_a_draft(ada)
    catalog.entry_update(actor=bo, entry=entry, expected_revision=1, name="The Sunken Bell")

    ada.goto("/entries/drowned-bell/")
    ada.locator(".draft-offer").get_by_role("button", name="Restore my unsaved changes").click()
    first = entry.ordered_rulesets()[0]
    ada.get_by_role("button", name=f"Move \u2068{first.name}\u2069 down").click()
    expect(ada.locator("#entry-rulesets [role=status]")).to_have_text(
        "Saved the order of rulesets."
    )
    ada.locator("#details-form").get_by_role("button", name="Save").click()
    expect(ada.locator(".msg-success")).to_contain_text("their changes (name) were kept")
    entry.refresh_from_db()
    assert (entry.name, entry.description) == ("The Sunken Bell", "A bell under the tide.")
