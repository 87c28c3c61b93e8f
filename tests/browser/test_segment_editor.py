"""Editing a segment: live token counts and lints, saving, and conflicting edits."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from promptadmin.models import Segment

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("demo")]


def tone() -> Segment:
    return Segment.objects.get(metadata__demo_key="w-iron-tone")


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


def test_a_stale_edit_shows_both_versions_and_keeping_mine_saves_over_theirs(
    new_page: Any, make_user: Any, sign_in: Any, screenshot: Any
) -> None:
    make_user("ada", "author")
    make_user("bo", "author")
    url = f"/segments/{tone().pk}/"
    ada, bo = new_page(), new_page()
    sign_in(ada, "ada", url)
    sign_in(bo, "bo", url)

    bo.get_by_label("Content").fill("Bo's coast: fog and tar.")
    bo.get_by_role("button", name="Save").click()
    expect(bo.locator(".msg-success")).to_have_text("Saved revision 2.")

    ada.get_by_label("Content").fill("Ada's coast: rust and rain.")
    ada.get_by_label("Version label").fill("1.1.0")
    ada.get_by_role("button", name="Save").click()
    conflict = ada.locator(".conflict")
    expect(conflict).to_contain_text("Someone else saved this segment while you were editing")
    # Left: what Ada typed; right: what Bo saved; the differing words marked.
    expect(conflict.locator("td.d-changed").first).to_have_text("Ada's coast: rust and rain.")
    expect(conflict.locator("td.d-changed").nth(1)).to_have_text("Bo's coast: fog and tar.")
    expect(conflict.locator("del").first).to_have_text("Ada")
    expect(conflict.locator("ins").first).to_have_text("Bo")
    expect(conflict.locator(".field-changes")).to_contain_text("Version label")
    screenshot(ada, "06-stale-edit-conflict")
    assert tone().content == "Bo's coast: fog and tar."  # nothing overwritten

    conflict.get_by_role("button", name="Keep mine (save over revision 2)").click()
    expect(ada.locator(".msg-success")).to_have_text("Saved revision 3.")
    saved = tone()
    assert (saved.content, saved.version, saved.revision) == (
        "Ada's coast: rust and rain.",
        "1.1.0",
        3,
    )


def test_after_a_stale_edit_taking_theirs_loads_their_version(
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
    ada.get_by_role("link", name="Take theirs (discard my changes)").click()
    expect(ada.get_by_label("Content")).to_have_value("Bo's coast: fog and tar.")
    expect(ada.locator(".conflict")).to_have_count(0)
    assert tone().revision == 2


def test_a_new_segment_offers_only_the_objects_its_scope_allows(
    page: Any, make_user: Any, sign_in: Any, screenshot: Any
) -> None:
    make_user("ada", "author")
    sign_in(page, "ada", "/segments/new/")
    scope = page.get_by_label("Scope")
    assert "game_state" not in scope.locator("option").evaluate_all("o => o.map(x => x.value)")
    scope.select_option("npc")
    picker = page.get_by_label("Belongs to (NPC)")
    expect(picker.locator("option")).to_have_count(7)  # six NPCs and "—"
    expect(page.get_by_label("Tier")).to_be_visible()
    scope.select_option("world")
    expect(page.get_by_label("Belongs to (world)").locator("option")).to_have_count(3)
    expect(page.get_by_label("Tier")).to_have_count(0)

    page.get_by_label("Belongs to (world)").select_option("world:iron-coast")
    page.get_by_label("Content").fill("Lighthouses are kept by the church.")
    page.get_by_label("Metadata").fill('{"title": "Lights"')
    page.get_by_role("button", name="Create segment").click()
    expect(page.locator(".has-error .errorlist")).to_contain_text("Metadata is not valid JSON")
    screenshot(page, "07-segment-new-error")
    page.get_by_label("Metadata").fill('{"title": "Lights"}')
    page.get_by_role("button", name="Create segment").click()
    expect(page.locator(".msg-success")).to_contain_text("Created world segment")
    assert Segment.objects.get(metadata__title="Lights").world.slug == "iron-coast"
