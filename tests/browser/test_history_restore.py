"""History: comparing revisions in place and restoring one as a new revision."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from promptadmin.content.models import Segment
from promptadmin.content.services import segments

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("demo")]


def test_an_author_compares_revisions_and_restores_an_old_one(
    page: Any, make_user: Any, sign_in: Any, screenshot: Any
) -> None:
    author = make_user("ada", "author")
    segment = Segment.objects.get(import_key="w-iron-history")
    original = segment.content
    segment = segments.segment_update(
        actor=author, segment=segment, content="The wars? Nobody remembers."
    )
    segments.segment_update(
        actor=author, segment=segment, content="The wars? Nobody remembers them."
    )

    sign_in(page, "ada", f"/segments/{segment.pk}/history/")
    rows = page.locator("table.revisions tbody tr")
    expect(rows).to_have_count(3)
    expect(page.locator("#diff-title")).to_have_text("Changes from revision 2 to revision 3")

    page.get_by_label("Compare from revision 1").check()
    expect(page.locator("#diff-title")).to_have_text("Changes from revision 1 to revision 3")
    expect(page).to_have_url(re.compile(rf"/segments/{segment.pk}/history/\?b=3&a=1$"))
    expect(page.locator("#revision-diff del").first).to_contain_text("Forty years ago")
    screenshot(page, "08-history-diff")

    page.get_by_role("button", name="Restore revision 1").click()
    expect(page.locator(".msg-success")).to_have_text("Restored revision 1: saved as revision 4.")
    expect(rows).to_have_count(4)
    expect(rows.first).to_contain_text("current")
    restored = Segment.objects.get(pk=segment.pk)
    assert (restored.revision, restored.content) == (4, original)
    screenshot(page, "09-history-restored")


def test_at_phone_width_every_restore_button_and_compare_radio_is_on_screen(
    browser: Any, live_server: Any, make_user: Any, sign_in: Any, screenshot: Any
) -> None:
    # What was seen (9): at 390 px the restore buttons and compare radios were off screen.
    author = make_user("ada", "author")
    segment = Segment.objects.get(import_key="w-iron-history")
    segment = segments.segment_update(actor=author, segment=segment, content="Changed once.")
    context = browser.new_context(base_url=live_server.url, viewport={"width": 390, "height": 844})
    try:
        page = context.new_page()
        sign_in(page, "ada", f"/segments/{segment.pk}/history/")
        controls = page.locator("table.revisions button, table.revisions input[type=radio]").all()
        assert len(controls) >= 3
        for control in controls:
            # Only across: nothing may need sideways scrolling, of the page or of a box.
            box = control.bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, (
                control.get_attribute("aria-label"),
                box,
            )
        screenshot(page, "phone-history")
    finally:
        context.close()
