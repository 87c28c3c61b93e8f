"""Browser tests: Playwright for Python driving Debian's Chromium against the live server.

Never a downloaded browser: the root conftest skips ``browser`` tests (with a notice) where
``chromium`` is missing, and CI installs it with apt-get and fails if any was skipped.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.core.cache import cache
from django.core.management import call_command

from promptadmin.core.roles import ROLE_GROUPS
from tests.factories import UserFactory

SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
# How long an action or an assertion waits for the page (Playwright's default for
# assertions is 5 s): long enough for a busy machine running tests on every core.
WAIT_MS = 10_000
PASSWORD = "pw-for-browser-tests"
VIEWPORT = {"width": 1366, "height": 900}  # a common laptop screen


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=WAIT_MS)

    # Playwright's sync API runs an event loop in this thread; the ORM calls the tests make
    # in between (fixtures, assertions) are still plain synchronous code.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(
                executable_path=shutil.which("chromium") or "/usr/bin/chromium",
                args=CHROMIUM_ARGS,
            )
            yield chromium
            chromium.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture(autouse=True)
def fast_password_hashing(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def restore_role_groups(django_db_blocker: Any) -> Iterator[None]:
    """Put back the role groups the migrations made, once the test has emptied the tables.

    Autouse, so it is set up before the database fixtures and torn down after their flush:
    tests that run later find the database as migrated.
    """
    yield
    with django_db_blocker.unblock():
        for name in ROLE_GROUPS:
            Group.objects.get_or_create(name=name)


@pytest.fixture
def demo(transactional_db: None) -> None:
    """The demo game, committed so that the live server sees it."""
    cache.clear()
    call_command("seed_demo", stdout=StringIO())


@pytest.fixture
def make_user(transactional_db: None) -> Callable[[str, str], Any]:
    def make(username: str, role: str) -> Any:
        user = UserFactory(username=username, password=PASSWORD)
        # Created here, not assumed: each transactional test empties every table.
        user.groups.add(Group.objects.get_or_create(name=role)[0])
        return user

    return make


@pytest.fixture
def new_page(browser: Any, live_server: Any) -> Iterator[Callable[[], Any]]:
    """Open pages in fresh browser contexts (separate cookies: separate people).

    Fails the test if a page raises a JavaScript error or a sub-resource fails to load.
    (Pages themselves may answer 4xx on purpose: a conflict is a 409.)
    """
    contexts = []
    errors: list[str] = []

    def open_page() -> Any:
        context = browser.new_context(base_url=live_server.url, viewport=VIEWPORT)
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("response", lambda response: _check_resource(response, errors))
        return page

    yield open_page
    for context in contexts:
        context.close()
    assert errors == []


def _check_resource(response: Any, errors: list[str]) -> None:
    if response.status >= 400 and response.request.resource_type != "document":
        errors.append(f"{response.status} for {response.request.resource_type} {response.url}")


@pytest.fixture
def page(new_page: Callable[[], Any]) -> Any:
    return new_page()


@pytest.fixture
def sign_in() -> Callable[..., None]:
    """Sign ``username`` in through the form, starting from ``path``."""

    def sign_in(page: Any, username: str, path: str = "/") -> None:
        page.goto(path)
        page.get_by_label("Username").fill(username)
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(lambda url: "/accounts/login/" not in url)

    return sign_in


@pytest.fixture(scope="session")
def screenshot() -> Callable[[Any, str], None]:
    """Save a full-page screenshot under artifacts/screenshots/ (kept out of git)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def save(page: Any, name: str) -> None:
        page.screenshot(path=SCREENSHOTS / f"{name}.png", full_page=True)

    return save
