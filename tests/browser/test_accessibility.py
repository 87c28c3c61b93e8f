"""Every main page at phone (390 px) and laptop (1366 px) width: axe-core finds no serious
or critical violation, nothing scrolls sideways, and a screenshot is kept for review."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from django.core.management import call_command
from playwright.sync_api import expect

from promptadmin.content.models import Segment
from promptadmin.conversations.services import conversation_append
from promptadmin.prompts.models import Prompt

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("demo")]

WIDTHS = {"phone": {"width": 390, "height": 844}, "laptop": {"width": 1366, "height": 900}}
PAGES = [
    ("dashboard", "/"),
    ("segments", "/segments/"),
    ("segment", "/segments/{segment}/"),
    ("segment-new", "/segments/new/"),
    ("history", "/segments/{segment}/history/"),
    ("worlds", "/worlds/"),
    ("world", "/worlds/iron-coast/"),
    ("entries", "/entries/"),
    ("entry", "/entries/drowned-bell/"),
    ("rulesets", "/rulesets/"),
    ("npc", "/npcs/marta-vell/"),
    (
        "preview",
        "/preview/?entry=drowned-bell&first_turn=on&token_budget=330&npc_budget=90"
        "&npc=marta-vell&tier=2&npc=old-cobb&tier=1&input=I+ask+Marta+about+the+bell.",
    ),
    ("prompts", "/prompts/"),
    ("prompt", "/prompts/{prompt}/"),
    ("prompt-version", "/prompts/{prompt}/versions/new/"),
    ("playground", "/prompts/{prompt}/playground/"),
    ("conversations", "/conversations/"),
    ("conversation", "/conversations/tavern-1/"),
    ("releases", "/releases/"),
    ("publish", "/releases/publish/"),
    ("deprecated", "/deprecated/"),
    ("import", "/deprecated/import/"),
]
BLOCKING = ("serious", "critical")


def serious_violations(page: Any) -> list[str]:
    results = Axe().run(page)
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at "
        + ", ".join(", ".join(node["target"]) for node in v["nodes"][:5])
        for v in results.response["violations"]
        if v["impact"] in BLOCKING
    ]


@pytest.mark.parametrize("width", list(WIDTHS))
@pytest.mark.parametrize(("name", "path"), PAGES, ids=[name for name, _ in PAGES])
def test_main_pages_pass_axe_and_fit_the_screen(
    browser: Any,
    live_server: Any,
    make_user: Any,
    sign_in: Any,
    screenshot: Any,
    name: str,
    path: str,
    width: str,
) -> None:
    # An admin sees every page, the deprecated-content review included.
    make_user("ada", "admin")
    segment = Segment.objects.get(import_key="w-iron-history")
    if not Prompt.objects.exists():
        call_command("seed_prompts", stdout=StringIO())
    prompt = Prompt.objects.order_by("pk").first()
    assert prompt is not None
    conversation_append(
        actor=None,
        key="tavern-1",
        messages=[
            {"role": "user", "content": "Who keeps the lighthouse?"},
            {"role": "assistant", "content": "Old Cobb, since the war."},
        ],
    )
    context = browser.new_context(base_url=live_server.url, viewport=WIDTHS[width])
    try:
        page = context.new_page()
        sign_in(page, "ada", path.format(segment=segment.pk, prompt=prompt.pk))
        expect(page.locator("h1")).to_be_visible()
        screenshot(page, f"a11y-{width}-{name}")
        assert serious_violations(page) == []
        # Tables may scroll inside their own box; the page itself never scrolls sideways.
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    finally:
        context.close()


def test_the_focus_ring_has_at_least_3_to_1_contrast(
    page: Any, make_user: Any, sign_in: Any
) -> None:
    # What was seen (8): the ring was #8b9cf5 on white, 2.4:1.
    make_user("ada", "author")
    sign_in(page, "ada", "/segments/")
    page.get_by_label("Search").focus()
    page.keyboard.press("Tab")
    ring = page.evaluate(
        "(() => { const s = getComputedStyle(document.activeElement);"
        " return [s.outlineStyle, s.outlineWidth]; })()"
    )
    # A ring is drawn at all (without one the colour below would be the text's).
    assert ring[0] not in ("none", "hidden") and float(ring[1].removesuffix("px")) >= 2, ring
    colour = page.evaluate("getComputedStyle(document.activeElement).outlineColor")
    rgb = [int(part) for part in colour[colour.index("(") + 1 : colour.index(")")].split(",")[:3]]

    def luminance(channels: list[int]) -> float:
        linear = [
            c / 255 / 12.92 if c / 255 <= 0.03928 else ((c / 255 + 0.055) / 1.055) ** 2.4
            for c in channels
        ]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    ratio = (1.0 + 0.05) / (luminance(rgb) + 0.05)  # against the white page
    assert ratio >= 3.0, (colour, ratio)
