"""Every main page renders at laptop width without sideways scrolling; screenshots for review.

The screenshots land in artifacts/screenshots/ (git-ignored), next to the ones the flow
tests take.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from promptadmin.content.models import Segment

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("demo")]

PAGES = [
    ("02-dashboard", "/"),
    ("03-segments", "/segments/"),
    ("12-worlds", "/worlds/"),
    ("13-world", "/worlds/iron-coast/"),
    ("14-entries", "/entries/"),
    ("15-entry", "/entries/drowned-bell/"),
    ("16-rulesets", "/rulesets/"),
    ("17-npc", "/npcs/marta-vell/"),
    ("18-preview-empty", "/preview/"),
    (
        "19-preview",
        "/preview/?entry=drowned-bell&first_turn=on&token_budget=330&npc_budget=90"
        "&npc=marta-vell&tier=2&npc=old-cobb&tier=1&input=I+ask+Marta+about+the+bell.",
    ),
]


@pytest.mark.parametrize(("name", "path"), PAGES, ids=[name for name, _ in PAGES])
def test_main_pages_fit_a_laptop_screen(
    page: Any, make_user: Any, sign_in: Any, screenshot: Any, name: str, path: str
) -> None:
    make_user("ada", "author")
    sign_in(page, "ada", path)
    expect(page.locator("h1")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    screenshot(page, name)


def test_a_viewer_sees_pages_read_only(
    page: Any, make_user: Any, sign_in: Any, screenshot: Any
) -> None:
    make_user("vic", "viewer")
    segment = Segment.objects.get(import_key="npc-cobb-2")
    sign_in(page, "vic", f"/segments/{segment.pk}/")
    expect(page.get_by_label("Content")).to_be_disabled()
    expect(page.get_by_role("button", name="Save")).to_have_count(0)
    screenshot(page, "20-viewer-editor")
    page.goto("/segments/new/")
    expect(page.locator("h1")).to_have_text("You cannot do that")
    screenshot(page, "21-viewer-forbidden")
