"""What players get is exactly what writers wrote: lines typed in the studio reach the API
and the Langfuse SDK ended by ``\\n``, as the rest of the prompt is (a browser submits a
textarea's lines ended by ``\\r\\n``)."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest
from langfuse import Langfuse
from playwright.sync_api import expect

from promptadmin.content.models import Segment
from promptadmin.content.services.api_keys import api_key_create
from promptadmin.prompts.services.prompts import prompt_create

pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.usefixtures("demo")]

SEGMENT_LINES = ["Two guards stand at the gate.", "One is asleep.", "The other counts coins."]
SYSTEM_LINES = ["You narrate the Iron Coast.", "Keep it short.", "Never break character."]
TEMPLATE_LINES = ["The player says:", "{{ line }}", "Answer in character."]


def call(live_server: Any, key: str, path: str, body: dict[str, Any] | None = None) -> Any:
    request = urllib.request.Request(
        f"{live_server.url}{path}",
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Api-Key {key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def strings(value: Any) -> list[str]:
    """Every string in a JSON value (keys too)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for key, item in value.items() for s in [key, *strings(item)]]
    if isinstance(value, list):
        return [s for item in value for s in strings(item)]
    return []


def type_lines(field: Any, lines: list[str]) -> None:
    field.fill("")
    field.press_sequentially("\n".join(lines))  # Enter between lines, as a writer types


def test_lines_typed_in_the_studio_reach_the_api_and_the_sdk_with_newlines(
    page: Any, make_user: Any, sign_in: Any, live_server: Any
) -> None:
    make_user("ada", "author")
    segment = Segment.objects.get(import_key="w-iron-tone")
    sign_in(page, "ada", f"/segments/{segment.pk}/")
    type_lines(page.get_by_label("Content"), SEGMENT_LINES)
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".msg-success")).to_have_text("Saved revision 2.")

    prompt = prompt_create(actor=None, component="narrator", agent="coast")
    page.goto(f"/prompts/{prompt.pk}/versions/new/")
    type_lines(page.get_by_label("System"), SYSTEM_LINES)
    page.locator("#template_name_0").fill("default")
    type_lines(page.locator("#template_text_0"), TEMPLATE_LINES)
    page.get_by_role("button", name="Save new version").click()
    expect(page.locator(".msg-success")).to_have_text("Saved version 1.")

    _, key = api_key_create(actor=None, name="game-server", scope="read")
    assembled = call(live_server, key, "/api/v1/assemble", {"entry": "drowned-bell"})
    assert "\n".join(SEGMENT_LINES) in assembled["prompt"]
    fetched = call(live_server, key, "/api/v1/prompts/narrator/coast/?label=latest")
    assert "\n".join(SYSTEM_LINES) in strings(fetched)
    assert "\n".join(TEMPLATE_LINES) in strings(fetched)

    sdk = Langfuse(
        public_key=key.partition(".")[0],
        secret_key=key,
        base_url=live_server.url,
        tracing_enabled=False,
        timeout=10,
    )
    try:
        served = sdk.get_prompt("narrator/coast", label="latest", type="chat", cache_ttl_seconds=0)
    finally:
        sdk.shutdown()
    assert served.prompt[0]["content"] == "\n".join(SYSTEM_LINES)
    assert served.prompt[1]["content"] == "\n".join(TEMPLATE_LINES)
    for answer in (assembled, fetched, served.prompt, served.config):
        assert not [text for text in strings(answer) if "\r" in text]
