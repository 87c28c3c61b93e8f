"""Edit from the preview: a segment of the assembled prompt opens beside it, with the
editor's validation, conflict handling and drafts; saving re-renders the preview in place."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from promptadmin.content.models import Segment
from promptadmin.content.services import segments

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("demo")]

URL = "/preview/?entry=drowned-bell&first_turn=on&token_budget=8000&npc_budget=600"


def test_editing_a_segment_beside_the_preview_re_renders_it_in_place(
    page: Any, make_user: Any, sign_in: Any, screenshot: Any
) -> None:
    make_user("ada", "author")
    segment = Segment.objects.get(import_key="w-iron-tone")
    # What the browser refuses (the Content-Security-Policy allows no inline style) is
    # only said in its console.
    console: list[str] = []
    page.on("console", lambda message: console.append(message.text))
    sign_in(page, "ada", URL)
    page.evaluate("window.loadedOnce = true")
    page.locator(f'.chip[href="/segments/{segment.pk}/"]').click()
    panel = page.locator("#preview-editor")
    expect(panel.get_by_label("Content")).to_have_value(segment.content)
    assert page.evaluate("document.activeElement.id") == "preview-editor"

    # The same validation as the editor page: the error is summarised in the panel.
    panel.get_by_label("Metadata").fill("{")
    panel.get_by_role("button", name="Save").click()
    expect(panel.locator("#error-summary")).to_contain_text("Metadata is not valid JSON")
    expect(panel.get_by_label("Content")).to_have_value(segment.content)

    panel.get_by_label("Metadata").fill("")
    panel.get_by_label("Content").fill("The Iron Coast: lighthouses and salt.")
    panel.get_by_role("button", name="Save").click()
    expect(panel.locator(".msg-success")).to_have_text("Saved revision 2.")
    expect(page.locator(".block.layer-world")).to_contain_text("lighthouses and salt")
    assert page.evaluate("window.loadedOnce") is True  # the page never reloaded
    screenshot(page, "24-edit-from-preview")
    segment.refresh_from_db()
    assert (segment.content, segment.revision) == ("The Iron Coast: lighthouses and salt.", 2)
    panel.get_by_role("button", name="Close", exact=True).click()
    expect(panel).to_be_empty()
    assert [text for text in console if "Content Security Policy" in text] == []


def test_a_stale_save_beside_the_preview_shows_the_conflict_there(
    new_page: Any, make_user: Any, sign_in: Any
) -> None:
    make_user("ada", "author")
    make_user("bo", "author")
    segment = Segment.objects.get(import_key="w-iron-tone")
    ada, bo = new_page(), new_page()
    sign_in(ada, "ada", URL)
    sign_in(bo, "bo", f"/segments/{segment.pk}/")
    ada.locator(f'.chip[href="/segments/{segment.pk}/"]').click()
    panel = ada.locator("#preview-editor")
    expect(panel.get_by_label("Content")).to_have_value(segment.content)
    bo.get_by_label("Content").fill("Bo's coast: fog and tar.")
    bo.get_by_role("button", name="Save").click()
    expect(bo.locator(".msg-success")).to_be_visible()

    panel.get_by_label("Content").fill("Ada's coast: rust and rain.")
    panel.get_by_role("button", name="Save").click()
    expect(panel.locator("#conflict")).to_contain_text(
        "bo saved this segment while you were editing"
    )
    segment.refresh_from_db()
    assert segment.content == "Bo's coast: fog and tar."


def test_a_draft_from_an_older_revision_restored_beside_the_preview_merges(
    page: Any, make_user: Any, sign_in: Any
) -> None:
    make_user("ada", "author")
    bo = make_user("bo", "author")
    segment = Segment.objects.get(import_key="w-iron-tone")
    chip = f'.chip[href="/segments/{segment.pk}/"]'
    sign_in(page, "ada", URL)
    page.locator(chip).click()
    panel = page.locator("#preview-editor")
    panel.get_by_label("Content").fill("The Iron Coast: lighthouses and salt.")
    page.on("dialog", lambda dialog: dialog.accept())  # close anyway: the draft stays
    panel.get_by_role("button", name="Close").click()
    expect(panel.get_by_label("Content")).to_have_count(0)
    segments.segment_update(
        actor=bo, segment=segment, expected_revision=1, title="Bo's title", sort_order=9
    )

    page.locator(chip).click()
    panel.locator(".draft-offer").get_by_role("button", name="Restore my unsaved changes").click()
    expect(panel.locator(".draft-restored")).to_contain_text("merged with revision 2")
    panel.get_by_role("button", name="Save").click()
    expect(panel.locator(".msg-success")).to_contain_text(
        "their changes (title, sort order) were kept"
    )
    expect(page.locator(".block.layer-world")).to_contain_text("lighthouses and salt")
    segment.refresh_from_db()
    assert (segment.content, segment.title, segment.sort_order, segment.revision) == (
        "The Iron Coast: lighthouses and salt.",
        "Bo's title",
        9,
        3,
    )


def focused(page: Any, attribute: str) -> Any:
    return page.evaluate(f"document.activeElement.getAttribute('{attribute}')")


def test_closing_the_editor_returns_focus_to_the_segment_that_opened_it(
    page: Any, make_user: Any, sign_in: Any
) -> None:
    make_user("ada", "author")
    segment = Segment.objects.get(import_key="w-iron-tone")
    href = f"/segments/{segment.pk}/"
    sign_in(page, "ada", URL)
    chip = page.locator(f'#preview-result .chip[href="{href}"]')
    assert page.locator("#preview-result .chip").first.get_attribute("href") != href
    panel = page.locator("#preview-editor")

    chip.click()
    expect(panel.get_by_label("Content")).to_be_visible()
    panel.get_by_role("button", name="Close").click()
    expect(panel).to_be_empty()
    assert (focused(page, "href"), focused(page, "class")) == (href, "chip")

    # Saved in between: the preview was re-rendered, and focus goes to the new chip.
    chip.click()
    panel.get_by_label("Content").fill("The Iron Coast: lighthouses and salt.")
    panel.get_by_role("button", name="Save").click()
    expect(page.locator(".block.layer-world")).to_contain_text("lighthouses and salt")
    assert page.evaluate(
        "document.getElementById('preview-editor').contains(document.activeElement)"
    )
    panel.get_by_role("button", name="Close").click()
    assert (focused(page, "href"), focused(page, "class")) == (href, "chip")


def test_focus_stays_on_the_setting_being_changed_while_the_preview_updates(
    page: Any, make_user: Any, sign_in: Any
) -> None:
    make_user("vic", "viewer")
    sign_in(page, "vic", URL)
    budget = page.get_by_label("Token budget")
    budget.fill("300")
    expect(page.locator(".summary-figures")).to_contain_text("of 300 tokens")
    assert focused(page, "id") == "id_token_budget"
    budget.fill("-5")  # invalid: the last good preview stays, and so does focus
    expect(page.locator("#errors-token_budget")).not_to_be_empty()
    assert focused(page, "id") == "id_token_budget"


def box(page: Any, selector: str) -> dict[str, float]:
    return page.locator(selector).evaluate(
        "e => { const r = e.getBoundingClientRect();"
        " return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; }"
    )


def in_view(page: Any, selector: str) -> bool:
    where = box(page, selector)
    return where["top"] >= 0 and where["top"] < page.viewport_size["height"]


@pytest.mark.parametrize("width", [1366, 390])
def test_the_editor_stands_beside_the_prompt_on_wide_screens_and_above_it_on_phones(
    page: Any, make_user: Any, sign_in: Any, screenshot: Any, width: int
) -> None:
    make_user("ada", "author")
    segment = Segment.objects.get(import_key="w-iron-tone")
    page.set_viewport_size({"width": width, "height": 900 if width > 400 else 844})
    sign_in(page, "ada", URL)
    page.locator(f'.chip[href="/segments/{segment.pk}/"]').click()
    panel = page.locator("#preview-editor")
    panel.get_by_label("Content").fill("The Iron Coast: lighthouses and salt.")
    panel.get_by_role("button", name="Save").click()
    expect(page.locator(".block.layer-world")).to_contain_text("lighthouses and salt")
    expect(panel.locator(".msg-success")).to_be_visible()
    assert in_view(page, "#preview-editor .msg-success")
    editor, result = box(page, "#preview-editor"), box(page, "#preview-result")
    if width > 1200:
        # Beside the prompt: the re-rendered block and the editor are in view together.
        assert editor["left"] >= result["right"]
        assert in_view(page, ".block.layer-world")
    else:
        assert editor["bottom"] <= result["top"]
    screenshot(page, f"25-edit-from-preview-{width}")
