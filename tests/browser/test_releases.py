"""Releases in the browser: publish, change a segment, see the impact, publish, roll back."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from promptadmin.content.models import Segment
from promptadmin.content.services import segments
from promptadmin.releases import services

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("demo")]


def test_publish_a_change_see_its_impact_and_roll_back(
    page: Any, make_user: Any, sign_in: Any, screenshot: Any
) -> None:
    make_user("ada", "admin")
    services.scenario_create(
        actor=None,
        name="bell at 400 tokens",
        entry="drowned-bell",
        first_turn=True,
        token_budget=400,
        expectations=[{"kind": "max_tokens", "tokens": 400}],
    )
    sign_in(page, "ada", "/releases/")
    expect(page.get_by_text("No labels yet")).to_be_visible()
    page.get_by_role("link", name="Review and publish").first.click()
    expect(page.get_by_text("Nothing is published as 'production' yet")).to_be_visible()
    page.get_by_label("Release name").fill("r-launch")
    page.get_by_label("Notes").fill("Launch content")
    page.get_by_role("button", name="Publish as 'production'").click()
    expect(page.get_by_text("Published r-launch as 'production'")).to_be_visible()

    # An author's change: the world's tone grows far past what the scenario allows.
    tone = Segment.objects.get(import_key="w-iron-tone")
    page.goto(f"/segments/{tone.pk}/")
    expect(page.get_by_text("Changes here are not live until published")).to_be_visible()
    page.get_by_label("Content").fill("Grey water over grey iron, and the tide. " * 60)
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text("not live until published")).to_be_visible()

    page.goto("/")
    expect(page.get_by_text("1 changed")).to_be_visible()
    page.get_by_role("link", name="Review the impact and publish").click()
    impact = page.locator("table.impact")
    row = impact.locator("tr", has_text="bell at 400 tokens")
    expect(row).to_contain_text("new cut")
    expect(row).to_contain_text(f"World segment #{tone.pk}")
    page.locator("details.segment-change summary").first.click()
    expect(page.locator(".udiff .u-added").first).to_contain_text("Grey water over grey iron")
    screenshot(page, "20-release-publish-impact")

    row.get_by_role("link", name="side by side").click()
    # At 400 tokens the grown segment is left out: the prompts differ where it stood.
    expect(page.get_by_role("heading", name="drowned-bell: before and after")).to_be_visible()
    expect(page.locator("table.diff")).to_contain_text("=== WORLD_BEGIN ===")
    expect(page.locator("table.diff td.d-removed, table.diff td.d-changed").first).to_be_visible()
    screenshot(page, "22-release-prompts")
    page.go_back()

    # Someone saves an edit while the report is open: publishing it unseen is refused.
    segments.segment_update(actor=None, segment=Segment.objects.get(pk=tone.pk), title="Grey")
    page.get_by_label("Release name").fill("r-grey")
    page.get_by_role("button", name="Publish as 'production'").click()
    expect(page.get_by_text("The working copy changed since you reviewed it")).to_be_visible()
    expect(page.get_by_role("alert").filter(has_text="Saved since")).to_contain_text(
        f"#{tone.pk} Grey"
    )

    page.get_by_role("button", name="Publish as 'production'").click()
    expect(page.get_by_text("Published r-grey as 'production'")).to_be_visible()
    screenshot(page, "21-releases")

    # Roll back: production moves back to the launch release, and the history says so.
    launch = page.locator("tr", has_text="Launch content")
    launch.get_by_label("Note").fill("too grey")
    expect(launch.get_by_label("Label to move to r-launch")).to_have_value("production")
    launch.get_by_role("button", name="Move here").click()
    # What is live asks first, saying what game servers will get.
    expect(page.get_by_text("Move the production label from r-grey to r-launch?")).to_be_visible()
    page.get_by_role("button", name="Move production to r-launch").click()
    expect(page.get_by_text("'production' now points at r-launch.")).to_be_visible()
    history = page.locator("section", has_text="Label history").locator("tbody tr").first
    expect(history).to_contain_text("r-grey")
    expect(history).to_contain_text("r-launch")
    expect(history).to_contain_text("too grey")
    expect(history).to_contain_text("ada")
