"""Every main page at phone (390 px) and laptop (1366 px) width: axe-core finds no serious
or critical violation, nothing scrolls sideways, and a screenshot is kept for review."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from django.core.management import call_command
from playwright.sync_api import expect

from promptadmin.content.models import Segment, World
from promptadmin.content.services.catalog import catalog_update
from promptadmin.content.services.segments import segment_update
from promptadmin.conversations.services import conversation_append
from promptadmin.prompts.models import Prompt
from promptadmin.releases import serving
from promptadmin.releases.services import release_create, scenario_create

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
    ("world-new", "/worlds/new/"),
    ("entries", "/entries/"),
    ("entry", "/entries/drowned-bell/"),
    ("entry-new", "/entries/new/"),
    ("lore", "/lore/?world=iron-coast"),
    ("lore-new", "/lore/new/?world=iron-coast"),
    ("rulesets", "/rulesets/"),
    ("ruleset", "/rulesets/mystery/"),
    ("npcs", "/npcs/"),
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
    ("scenarios", "/scenarios/?release=working"),
    ("release-compare", "/releases/compare/?before=production&after=working"),
    (
        "release-prompts",
        "/releases/prompts/?before=production&after=working&entry=drowned-bell"
        "&first_turn=on&token_budget=8000&npc_budget=600",
    ),
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
    if name.startswith("release-"):
        # Something to compare: production, then a change in the working copy.
        serving.forget()
        release_create(actor=None, name="r-one", labels=["production"])
        segment_update(actor=None, segment=segment, content="Forty years ago the sea won.")
    if name == "scenarios":
        scenario_create(
            actor=None,
            name="Bell at night",
            entry="drowned-bell",
            expectations=[{"kind": "fits"}, {"kind": "contains", "text": "dragons"}],
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


def segment_conflict(page: Any, sign_in: Any) -> None:
    segment = Segment.objects.get(import_key="w-iron-tone")
    sign_in(page, "ada", f"/segments/{segment.pk}/")
    segment_update(actor=None, segment=segment, content="Someone else's coast.", sort_order=7)
    page.get_by_label("Content").fill("Ada's coast: rust and rain.")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#conflict")).to_be_visible()


def segment_failed_save(page: Any, sign_in: Any) -> None:
    segment = Segment.objects.get(import_key="w-iron-tone")
    sign_in(page, "ada", f"/segments/{segment.pk}/")
    page.get_by_label("Metadata").fill('{"source": ')
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#error-summary")).to_be_visible()


def world_conflict(page: Any, sign_in: Any) -> None:
    sign_in(page, "ada", "/worlds/iron-coast/")
    world = World.objects.get(slug="iron-coast")
    catalog_update(actor=None, obj=world, description=world.description + "\nTheir line.")
    page.get_by_label("Description").fill(world.description + "\nAda's line.")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#conflict table.diff")).to_have_count(2)


def preview_edit_panel(page: Any, sign_in: Any) -> None:
    segment = Segment.objects.get(import_key="w-iron-tone")
    sign_in(page, "ada", "/preview/?entry=drowned-bell&first_turn=on&token_budget=8000")
    page.locator(f'.chip[href="/segments/{segment.pk}/"]').click()
    expect(page.locator("#preview-editor").get_by_label("Content")).to_be_visible()


STATES = {
    "segment-conflict": segment_conflict,
    "segment-failed-save": segment_failed_save,
    "world-conflict": world_conflict,
    "preview-edit-panel": preview_edit_panel,
}


@pytest.mark.parametrize("width", list(WIDTHS))
@pytest.mark.parametrize("state", list(STATES))
def test_conflicts_failed_saves_and_the_preview_editor_pass_axe_and_fit_the_screen(
    browser: Any,
    live_server: Any,
    make_user: Any,
    sign_in: Any,
    screenshot: Any,
    state: str,
    width: str,
) -> None:
    make_user("ada", "author")
    context = browser.new_context(base_url=live_server.url, viewport=WIDTHS[width])
    try:
        page = context.new_page()
        STATES[state](page, sign_in)
        screenshot(page, f"a11y-{width}-{state}")
        assert serious_violations(page) == []
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
