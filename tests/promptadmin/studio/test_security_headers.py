"""Headers on studio pages: a Content-Security-Policy every page passes (no inline script or
style anywhere), and nothing a signed-in person sees is kept by a cache."""

from __future__ import annotations

import re
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from promptadmin.content.models import Segment
from promptadmin.conversations.services import conversation_append
from promptadmin.prompts.models import Prompt
from tests.factories import UserFactory

pytestmark = pytest.mark.usefixtures("content")

INLINE = [
    (re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.I), "inline <script>"),
    (re.compile(r"<style\b", re.I), "<style> element"),
    (re.compile(r"\sstyle\s*=", re.I), "style attribute"),
    (re.compile(r"\son[a-z]+\s*=", re.I), "event handler attribute"),
    (re.compile(r"\shx-on", re.I), "hx-on attribute (evaluated inline)"),
    (re.compile(r"javascript:", re.I), "javascript: URL"),
    (re.compile(r"hx-trigger=\"[^\"]*\[", re.I), "htmx trigger filter (evaluated as script)"),
    (re.compile(r"hx-vals='js:|hx-vals=\"js:", re.I), "hx-vals js: (evaluated as script)"),
]


def studio_pages() -> list[str]:
    segment = Segment.objects.filter(scope="core").first()
    assert segment is not None
    if not Prompt.objects.exists():
        call_command("seed_prompts", stdout=StringIO())
        conversation_append(actor=None, key="c-1", messages=[{"role": "user", "content": "Hello."}])
    prompt = Prompt.objects.order_by("pk").first()
    assert prompt is not None
    preview = (
        reverse("studio:preview") + "?entry=drowned-bell&npc=marta-vell&tier=2&token_budget=60"
    )
    return [
        reverse("studio:dashboard"),
        reverse("studio:segment_list"),
        reverse("studio:segment_create"),
        reverse("studio:segment_edit", args=[segment.pk]),
        reverse("studio:segment_history", args=[segment.pk]),
        reverse("studio:entry_list"),
        reverse("studio:entry_create"),
        reverse("studio:entry_edit", args=["drowned-bell"]),
        reverse("studio:world_list"),
        reverse("studio:world_edit", args=["iron-coast"]),
        reverse("studio:npc_list"),
        reverse("studio:ruleset_list"),
        reverse("studio:preview"),
        preview,
        reverse("studio:prompt_list"),
        reverse("studio:prompt_create"),
        reverse("studio:prompt_detail", args=[prompt.pk]),
        reverse("studio:prompt_version_create", args=[prompt.pk]),
        reverse("studio:prompt_playground", args=[prompt.pk]),
        reverse("studio:conversation_list"),
        reverse("studio:conversation_detail", args=["c-1"]),
        reverse("studio:release_list"),
        reverse("studio:release_publish"),
        reverse("studio:release_compare") + "?before=working&after=working",
    ]


ADMIN_PAGES = ["studio:deprecated_review", "studio:legacy_import"]


def test_every_studio_page_has_a_strict_content_security_policy(author: Client) -> None:
    for url in studio_pages():
        response = author.get(url)
        assert response.status_code == 200, url
        policy = response["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "style-src 'self'" in policy, url
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy, url


@pytest.mark.parametrize("htmx", [False, True])
def test_no_studio_page_needs_inline_script_or_style(
    author: Client, client_as: Any, htmx: bool
) -> None:
    headers = {"HX-Request": "true"} if htmx else {}
    admin = client_as("admin")
    pages = [(author, url) for url in studio_pages()]
    pages += [(admin, reverse(name)) for name in ADMIN_PAGES]
    for client, url in pages:
        response = client.get(url, headers=headers)
        assert response.status_code == 200, url
        html = response.content.decode()
        for pattern, what in INLINE:
            found = pattern.search(html)
            assert found is None, f"{url}: {what}: {html[found.start() : found.start() + 80]!r}"


def test_the_sign_in_and_lockout_pages_have_no_inline_script_or_style(
    client: Client, settings: Any
) -> None:
    html = client.get(reverse("login")).content.decode()
    assert not any(pattern.search(html) for pattern, _what in INLINE)
    UserFactory(username="ida")
    for _ in range(settings.AXES_FAILURE_LIMIT):
        locked = client.post(reverse("login"), {"username": "ida", "password": "wrong"})
    assert locked.status_code == 429, locked.status_code
    html = locked.content.decode()
    assert "locked" in html.lower()
    assert not any(pattern.search(html) for pattern, _what in INLINE)
    assert "unsafe-inline" not in locked["Content-Security-Policy"]


def test_signed_in_pages_are_private_and_never_stored(author: Client) -> None:
    for url in studio_pages():
        cache_control = author.get(url)["Cache-Control"]
        assert "private" in cache_control and "no-store" in cache_control, url


def test_htmx_is_told_not_to_inject_styles_or_evaluate_script(author: Client) -> None:
    html = author.get(reverse("studio:dashboard")).content.decode()
    assert '"includeIndicatorStyles": false, "allowEval": false' in html


def test_the_page_cannot_be_framed(author: Client) -> None:
    response = author.get(reverse("studio:dashboard"))
    assert response["X-Frame-Options"] == "DENY"
    assert "frame-ancestors 'none'" in response["Content-Security-Policy"]
