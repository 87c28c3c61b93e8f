"""An admin uploads a legacy export, reviews it and copies a deprecated segment into a world."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from promptadmin.content.models import Segment
from promptadmin.content.services import deprecated
from tests.factories import EntryFactory, WorldFactory
from tests.legacy_exports import as_csv

pytestmark = [pytest.mark.browser]

EXPORT = [
    {"id": 11, "scope": "world", "ref_id": "iron-coast", "content": "Rust stains everything."},
    {"id": 12, "scope": "player", "ref_id": "drowned-bell", "content": "The player salvages."},
    {"id": 13, "scope": "game_state", "ref_id": "", "content": "Tide: {tide}."},
]


def test_an_admin_imports_reviews_and_copies_into_a_world_segment(
    page: Any, make_user: Any, sign_in: Any, screenshot: Any, tmp_path: Path
) -> None:
    world = WorldFactory(slug="iron-coast", name="The Iron Coast")
    EntryFactory(slug="drowned-bell", name="The Drowned Bell", world=world)
    make_user("ada", "admin")
    export = tmp_path / "prompt_segments.csv"
    export.write_bytes(as_csv(EXPORT))

    sign_in(page, "ada", "/")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Deprecated").click()
    page.get_by_role("link", name="Import a legacy export").first.click()
    page.get_by_label("Export file").set_input_files(str(export))
    # A dry run first (the first button): the job's page, then its report, nothing written.
    page.get_by_role("button", name="Run dry run").click()
    expect(page.locator("#job-title")).to_have_text("Dry run: nothing was written")
    assert not Segment.objects.exists()
    page.get_by_role("link", name="Import another file").click()
    page.get_by_label("Export file").set_input_files(str(export))
    page.get_by_role("button", name="Import", exact=True).click()
    expect(page.locator("#job-title")).to_have_text("Imported")
    screenshot(page, "20-legacy-import-report")
    assert Segment.objects.filter(legacy_id__in=["11", "12", "13"]).count() == 3

    page.get_by_role("link", name="Review deprecated segments").click()
    source = Segment.objects.get(legacy_id="13")
    item = page.locator(f"#deprecated-{source.pk}")
    expect(item).to_contain_text("Tide: {tide}.")
    page.get_by_label("Old scope").select_option("game_state")
    page.get_by_role("button", name="Apply").click()
    expect(page.locator("article.deprecated-item")).to_have_count(1)

    item.get_by_label("Scope").select_option("world")
    item.get_by_label("Belongs to").press_sequentially("iron")
    item.get_by_role("option", name=re.compile("The Iron Coast")).click()
    item.get_by_label("Content").fill("The tide decides when the coast is walkable.")
    item.get_by_label("Active (assembled from now on)").check()
    screenshot(page, "21-deprecated-review")
    item.get_by_role("button", name=f"Copy #{source.pk}").click()

    expect(page.locator(".msg-success")).to_contain_text(
        f"Copied #{source.pk} to the world segment"
    )
    expect(page.locator(".msg-success")).to_contain_text("a new active segment.")
    copy = Segment.objects.get(metadata__copied_from=source.pk)
    assert (copy.scope, copy.world, copy.active, copy.content) == (
        "world",
        world,
        True,
        "The tide decides when the coast is walkable.",
    )
    assert deprecated.status_of(Segment.objects.get(pk=source.pk)) == "copied"
    expect(page.locator(f"#deprecated-{source.pk}")).to_contain_text(f"Copied to #{copy.pk}")

    # The player row's legacy reference names an entry: that entry is suggested.
    page.goto("/deprecated/?scope=player")
    player = Segment.objects.get(legacy_id="12")
    expect(page.locator(f"#deprecated-{player.pk}")).to_contain_text(
        "Suggested: entry of The Drowned Bell (drowned-bell)"
    )
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, "22-deprecated-review-phone")
