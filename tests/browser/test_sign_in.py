"""Signing in and out in a real browser."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("demo")]


def test_a_person_signs_in_lands_where_they_were_going_and_signs_out(
    page: Any, make_user: Any, screenshot: Any
) -> None:
    make_user("ida", "author")
    page.goto("/segments/?scope=world")
    expect(page).to_have_url("/accounts/login/?next=/segments/%3Fscope%3Dworld")
    page.get_by_label("Username").fill("ida")
    page.get_by_label("Password").fill("wrong")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("Please enter a correct username")
    screenshot(page, "01-sign-in")

    page.get_by_label("Password").fill("pw-for-browser-tests")
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url("/segments/?scope=world")
    expect(page.locator(".account")).to_contain_text("ida")
    expect(page.locator(".role")).to_have_text("author")

    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url("/accounts/login/")
    page.goto("/")
    expect(page).to_have_url("/accounts/login/?next=/")
