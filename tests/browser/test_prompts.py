"""Registered prompts in the browser: the version editor's live lint, diffs, labels, playground."""

from __future__ import annotations

import re
from io import StringIO
from typing import Any

import pytest
from django.core.cache import cache
from django.core.management import call_command
from playwright.sync_api import expect

from promptadmin.prompts.models import Label, Prompt

pytestmark = pytest.mark.browser


@pytest.fixture
def rubric(transactional_db: None) -> Prompt:
    """The demo prompts, committed so that the live server sees them."""
    cache.clear()
    call_command("seed_prompts", stdout=StringIO())
    return Prompt.objects.get(component="verifier", agent="judge", task_type="rubric")


LIVE_REGIONS = "[aria-live], [role=status], [role=alert], [role=log], output"


def assert_live_regions_hold_only_summaries(page: Any, shown: str) -> None:
    """``shown`` is on the page, and no live region holds it: only short summaries are
    announced."""
    expect(page.locator("main")).to_contain_text(shown)
    regions = page.locator(LIVE_REGIONS)
    for index in range(regions.count()):
        text = regions.nth(index).inner_text()
        assert shown not in text, text
        assert len(text) < 120, text


def test_editing_a_version_shows_a_lint_finding_as_you_type_then_saves(
    page: Any, make_user: Any, sign_in: Any, screenshot: Any, rubric: Prompt
) -> None:
    make_user("ada", "author")
    sign_in(page, "ada", f"/prompts/{rubric.pk}/versions/new/?from=2")
    live = page.locator("#live-check")
    expect(live).to_contain_text("No lint findings.")
    expect(page.get_by_test_id("variables")).to_contain_text("evidence")

    template = page.locator("#template_text_0")
    template.fill("You are a strict grader.\n" + template.input_value())
    expect(live.locator('[data-code="system_text_in_user"]')).to_be_visible()
    # A screen reader hears a summary of the checks, not the whole box on every keystroke.
    expect(page.locator("#live-check-status")).to_have_text(
        re.compile(r"^Checked: 3 variables, 1 lint finding \(1 warning\)\.$")
    )
    assert_live_regions_hold_only_summaries(page, "Counted with")
    page.locator("#template_text_0").press("End")
    page.locator("#template_text_0").type(" {{ tone }}")
    expect(live.locator('[data-code="undeclared_variable"]')).to_contain_text("'tone'")
    expect(page.get_by_test_id("variables")).to_contain_text("tone")
    screenshot(page, "20-prompt-version-editor-lint")

    page.get_by_label("Variables").fill("subject, evidence, trait, tone")
    expect(live.locator('[data-code="undeclared_variable"]')).to_have_count(0)
    page.get_by_label("Commit message").fill("Stricter")
    page.get_by_role("button", name="Save new version").click()
    expect(page.locator(".msg-success")).to_have_text("Saved version 3.")
    assert rubric.versions.get(number=3).commit_message == "Stricter"


def test_two_versions_are_diffed_in_place(
    page: Any, make_user: Any, sign_in: Any, screenshot: Any, rubric: Prompt
) -> None:
    make_user("vi", "viewer")
    sign_in(page, "vi", f"/prompts/{rubric.pk}/")
    compare = page.locator("#compare")
    expect(compare.locator("ins").first).to_contain_text("as")  # the newest change, at once
    page.get_by_label("Compare version", exact=True).select_option("2")
    expect(compare).to_contain_text("The text is the same in both.")
    page.get_by_label("Compare version", exact=True).select_option("1")
    expect(compare.locator("ins").first).to_contain_text("as")
    expect(compare).to_contain_text("System template")
    expect(page).to_have_url(re.compile(r"[?&]a=1&b=2$"))
    screenshot(page, "21-prompt-diff")


def test_moving_production_asks_first_and_the_history_records_it(
    page: Any, make_user: Any, sign_in: Any, screenshot: Any, rubric: Prompt
) -> None:
    make_user("ada", "admin")  # production is a protected label: admins move it
    sign_in(page, "ada", f"/prompts/{rubric.pk}/")
    page.get_by_role("button", name="Move production to version 2").click()
    # What services fetch by default changes: the studio asks first, saying so.
    expect(page.locator("main")).to_contain_text("get version 2 on their next request")
    assert Label.objects.get(prompt=rubric, name="production").version.number == 1
    page.get_by_role("button", name="Move production to version 2").click()
    expect(page.locator(".msg-success")).to_have_text("Label “production” now points at version 2.")
    expect(page.locator("tr[data-label=production]")).to_contain_text("version 2")
    expect(page.locator(".events li").first).to_contain_text("moved production from version 1 to 2")
    assert Label.objects.get(prompt=rubric, name="production").version.number == 2
    page.get_by_role("button", name="Remove label staging").click()
    expect(page.locator("tr[data-label=staging]")).to_have_count(0)
    screenshot(page, "22-prompt-labels")


def test_an_author_is_offered_no_move_of_the_protected_production_label(
    page: Any, make_user: Any, sign_in: Any, rubric: Prompt
) -> None:
    make_user("bo", "author")
    sign_in(page, "bo", f"/prompts/{rubric.pk}/")
    production = page.locator("tr[data-label=production]")
    expect(production).to_contain_text("Protected: only admins move or remove it.")
    expect(page.get_by_role("button", name="Move production to version 2")).to_have_count(0)
    page.get_by_role("button", name="Move staging to version 1").click()
    expect(page.locator(".msg-success")).to_have_text("Label “staging” now points at version 1.")
    page.get_by_label("New label").fill("production")
    page.get_by_role("button", name="Set label").click()
    expect(page.locator(".msg-error")).to_contain_text("protected label 'production'")
    assert Label.objects.get(prompt=rubric, name="production").version.number == 1


def test_the_playground_renders_the_final_messages_as_variables_are_filled(
    page: Any, make_user: Any, sign_in: Any, screenshot: Any, rubric: Prompt
) -> None:
    make_user("vi", "viewer")
    parser = Prompt.objects.get(component="verifier", agent="parser", task_type="")
    sign_in(page, "vi", f"/prompts/{parser.pk}/playground/")
    page.get_by_label("Interface").select_option("langchain")
    page.get_by_label("question").fill("How far is the lighthouse?")
    expect(page.locator("#result")).to_contain_text("Missing variables: response.")
    page.get_by_label("response").fill("About three kilometres.")
    page.get_by_label("Instruction context (JSON object)").fill(
        '{"json_schema": {"type": "object"}}'
    )
    messages = page.get_by_test_id("message")
    expect(messages).to_have_count(2)
    expect(messages.first).to_contain_text('JSON schema:\n{"type": "object"}')
    expect(messages.nth(1)).to_contain_text("About three kilometres.")
    expect(page.get_by_test_id("total-tokens")).not_to_have_text("0")
    # A screen reader hears how much was rendered, never the whole prompt after each change.
    status = page.locator("#playground-status")
    total = page.get_by_test_id("total-tokens").inner_text()
    expect(status).to_have_text(f"Rendered: 2 messages, {total} tokens.")
    assert_live_regions_hold_only_summaries(page, "About three kilometres")

    page.get_by_label("Interface").select_option("manual")
    expect(messages).to_have_count(1)
    expect(page.get_by_test_id("message-role")).to_contain_text("user")
    expect(status).to_have_text(re.compile(r"^Rendered: 1 message, [0-9]+ tokens\.$"))
    page.get_by_label("response").fill("")
    expect(status).to_have_text("Not rendered: Missing variables: response.")
    screenshot(page, "23-prompt-playground")


def test_choosing_another_version_in_the_playground_keeps_the_page_and_renders_it(
    page: Any, make_user: Any, sign_in: Any, rubric: Prompt
) -> None:
    make_user("vi", "viewer")
    sign_in(page, "vi", f"/prompts/{rubric.pk}/playground/")
    page.get_by_label("Version").select_option("label:staging")
    expect(page.locator("#playground-form")).to_contain_text("Version 2, task rubric")
    expect(page).to_have_url(re.compile(r"[?&]source=label%3Astaging"))
    for name, value in (("subject", "essay"), ("evidence", "Two sources."), ("trait", "rigour")):
        page.get_by_label(name, exact=True).fill(value)
    expect(page.get_by_test_id("message").first).to_contain_text("as [1], [2], ...")
    expect(page.locator("#playground-status")).to_have_text(
        re.compile(r"^Rendered: 2 messages, [0-9]+ tokens\.$")
    )
