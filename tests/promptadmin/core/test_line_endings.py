"""Text authors write is stored with ``\\n`` line endings, whatever the service and the
entry point (studio, API, admin, import, Langfuse): ``core.text`` is the rule, the
services apply it."""

from __future__ import annotations

import doctest
import json
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from promptadmin.content.models import NPC, Entry, Segment, World
from promptadmin.content.services import catalog, deprecated, segments
from promptadmin.content.services.api_keys import api_key_create
from promptadmin.content.services.legacy_import import segments_import
from promptadmin.core import text
from promptadmin.core.tokens import tokenizer
from promptadmin.prompts.models import AdapterInstruction, Prompt, PromptVersion
from promptadmin.prompts.services.interfaces import (
    adapter_instruction_create,
    adapter_instruction_update,
    interface_create,
)
from promptadmin.prompts.services.prompts import prompt_create, prompt_version_create
from promptadmin.releases import services as releases
from promptadmin.releases.models import ReleaseLabelMove
from tests.factories import EntryFactory, NPCFactory, UserFactory, WorldFactory, make_segment
from tests.promptadmin.api.conftest import key_client
from tests.promptadmin.api.prompts import basic_client

pytestmark = pytest.mark.django_db

CRLF = "Two guards stand at the gate.\r\nOne is asleep.\r\nThe other counts coins.\r"
LF = "Two guards stand at the gate.\nOne is asleep.\nThe other counts coins.\n"


def test_the_rule_and_its_examples() -> None:
    assert doctest.testmod(text).failed == 0
    assert text.normalize_newlines("a\r\r\nb\n\rc") == "a\n\nb\n\nc"
    assert text.normalize_newlines(None) is None


# Services -----------------------------------------------------------------------------


def test_segment_create_update_and_restore_store_newlines() -> None:
    segment = make_segment(title="Gate\r\nnorth", content=CRLF)
    assert (segment.title, segment.content) == ("Gate\nnorth", LF)
    assert segment.token_count == tokenizer().count(LF)
    assert segment.history.get().content == LF
    updated = segments.segment_update(actor=None, segment=segment, content="One.\r\nTwo.")
    assert updated.content == "One.\nTwo."
    # The same words with other line endings are no change at all.
    again = segments.segment_update(actor=None, segment=updated, content="One.\rTwo.")
    assert again.revision == updated.revision


def test_a_deprecated_segment_kept_from_old_content_stores_newlines() -> None:
    kept = segments.segment_import_legacy(actor=None, scope="player", content=CRLF)
    assert kept.content == LF


def test_catalog_names_and_descriptions_store_newlines() -> None:
    world = catalog.catalog_create(
        actor=None, model=World, slug="ash", name="Ash", description=CRLF
    )
    assert World.objects.get(pk=world.pk).description == LF
    catalog.catalog_update(actor=None, obj=world, description="a\r\nb")
    assert World.objects.get(pk=world.pk).description == "a\nb"
    entry = catalog.entry_create(
        actor=None, slug="gate", name="Gate", world=world, description=CRLF
    )
    assert Entry.objects.get(pk=entry.pk).description == LF
    catalog.entry_update(actor=None, entry=entry, description="c\rd")
    assert Entry.objects.get(pk=entry.pk).description == "c\nd"


def test_prompts_and_versions_store_newlines() -> None:
    prompt = prompt_create(
        actor=None, component="c", agent="a", description=CRLF, expected_system="S.\r\nT."
    )
    prompt.refresh_from_db()
    assert (prompt.description, prompt.expected_system) == (LF, "S.\nT.")
    version = prompt_version_create(
        actor=None,
        prompt=prompt,
        system="S.\r\nT.",
        user_templates={"default": "Q:\r\n{{ q }}\r\n"},
        commit_message="first\r\nline",
    )
    version = PromptVersion.objects.get(pk=version.pk)
    assert version.system == "S.\nT."
    assert version.user_templates == {"default": "Q:\n{{ q }}\n"}
    assert version.commit_message == "first\nline"
    assert version.variables == ["q"]


def test_adapter_instructions_store_newlines() -> None:
    interface = interface_create(actor=None, name="langchain")
    instruction = adapter_instruction_create(
        actor=None, interface=interface, task="t", system_addition=CRLF, user_addition="u\r"
    )
    stored = AdapterInstruction.objects.get(pk=instruction.pk)
    assert (stored.system_addition, stored.user_addition) == (LF, "u\n")
    adapter_instruction_update(actor=None, instruction=stored, user_addition="v\r\nw")
    assert AdapterInstruction.objects.get(pk=instruction.pk).user_addition == "v\nw"


def test_release_notes_label_notes_and_scenarios_store_newlines() -> None:
    entry = EntryFactory()
    NPCFactory(slug="oren")
    release = releases.release_create(actor=None, notes=CRLF)
    assert release.notes == LF
    releases.release_label_set(actor=None, label="staging", release=release, note="n\r\no")
    assert ReleaseLabelMove.objects.get(label="staging").note == "n\no"
    scenario = releases.scenario_create(
        actor=None,
        name="Gate\r\n",
        entry=entry.slug,
        npcs=["oren"],
        state={"game_state": "Night.\r\nRain.", "player": {"hp": 3}},
        expectations=[{"kind": "contains", "text": "gate.\r\nOne"}],
    )
    scenario.refresh_from_db()
    assert scenario.name == "Gate"
    assert scenario.state == {"game_state": "Night.\nRain.", "player": {"hp": 3}}
    assert scenario.expectations == [{"kind": "contains", "text": "gate.\nOne"}]
    releases.scenario_update(actor=None, scenario=scenario, state={"input": "Knock.\r\n"})
    scenario.refresh_from_db()
    assert scenario.state == {"input": "Knock.\n"}


def test_a_dismissal_reason_stores_newlines() -> None:
    kept = segments.segment_import_legacy(actor=None, scope="player", content="old")
    dismissed = deprecated.deprecated_dismiss(actor=None, segment=kept, reason="Stale.\r\nGone.")
    assert dismissed.metadata["review_status"] == "dismissed"
    assert dismissed.metadata["review_reason"] == "Stale.\nGone."


def test_an_import_stores_newlines_and_a_second_run_changes_nothing() -> None:
    WorldFactory(slug="ash")
    export = json.dumps(
        [
            {"id": "7", "scope": "world", "ref_id": "ash", "content": CRLF,
             "metadata": {"title": "Gate"}},
            {"id": "8", "scope": "player", "content": "Old\rtext"},
        ]
    ).encode()  # fmt: skip
    report = segments_import(actor=None, data=export, fmt="json")
    assert not report.errors
    assert Segment.objects.get(legacy_id="7").content == LF
    assert Segment.objects.get(legacy_id="8").content == "Old\ntext"
    # The fingerprint is the exported row's: the same file again is "unchanged".
    again = segments_import(actor=None, data=export, fmt="json")
    assert sum(again.unchanged.values()) == 2 and not again.conflicts


def test_a_csv_export_with_windows_line_endings_inside_a_cell_imports_newlines() -> None:
    export = b'id,scope,ref_id,content\r\n9,core,,"Line one.\r\nLine two."\r\n'
    segments_import(actor=None, data=export, fmt="csv")
    assert Segment.objects.get(legacy_id="9").content == "Line one.\nLine two."


# Entry points -------------------------------------------------------------------------


@pytest.fixture
def write_key(db: None) -> str:
    return api_key_create(actor=None, name="content-pipeline", scope="write")[1]


def signed_in(client: Client, role: str, **user: Any) -> Client:
    person = UserFactory(**user)
    person.groups.add(Group.objects.get(name=role))
    client.force_login(person)
    return client


def test_the_studio_stores_a_textarea_s_lines_with_newlines(client: Client) -> None:
    author = signed_in(client, "author")
    world = WorldFactory(slug="ash")
    response = author.post(
        "/segments/new/",
        {"scope": "world", "object": f"world:{world.slug}", "title": "Gate", "content": CRLF,
         "metadata": "{}", "version": "1.0.0", "sort_order": "0", "tier": "0", "active": "on"},
    )  # fmt: skip
    assert response.status_code == 302
    assert Segment.objects.get().content == LF
    response = author.post(
        "/worlds/new/", {"slug": "dust", "name": "Dust", "description": "A.\r\nB."}
    )
    assert response.status_code == 302
    assert World.objects.get(slug="dust").description == "A.\nB."


def test_the_studio_version_editor_stores_newlines(client: Client) -> None:
    author = signed_in(client, "author")
    prompt = prompt_create(actor=None, component="c", agent="a")
    response = author.post(
        f"/prompts/{prompt.pk}/versions/new/",
        {"syntax": "curly", "system": "You grade.\r\nStrictly.", "template_name_0": "default",
         "template_text_0": "Q:\r\n{{ q }}\r\nA:", "variables": "q", "task": "",
         "config": "{}", "commit_message": ""},
    )  # fmt: skip
    assert response.status_code == 302, response.content.decode()[:2000]
    version = prompt.versions.get()
    assert (version.system, version.user_templates) == (
        "You grade.\nStrictly.",
        {"default": "Q:\n{{ q }}\nA:"},
    )


def test_the_api_stores_newlines(write_key: str) -> None:
    writer = key_client(write_key)
    created = writer.post("/api/v1/segments/", {"scope": "core", "content": CRLF}, format="json")
    assert created.status_code == 201
    assert created.json()["content"] == LF
    NPCFactory(slug="oren")
    etag = writer.get("/api/v1/npcs/oren/")["ETag"]
    changed = writer.patch(
        "/api/v1/npcs/oren/",
        {"description": "Old.\r\nTired."},
        format="json",
        headers={"If-Match": etag},
    )
    assert changed.status_code == 200, changed.json()
    assert NPC.objects.get(slug="oren").description == "Old.\nTired."
    prompt_create(actor=None, component="verifier", agent="judge")
    version = writer.post(
        "/api/v1/prompts/verifier/judge/versions/",
        {"system": "S.\r\n", "user_templates": {"default": "{{ q }}\r\n"}, "variables": ["q"]},
        format="json",
    )
    assert version.status_code == 201, version.json()
    fetched = writer.get("/api/v1/prompts/verifier/judge/", {"label": "latest"}).json()
    assert "\r" not in json.dumps(fetched)


def test_the_admin_stores_newlines(client: Client) -> None:
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    response = client.post(
        "/admin/promptadmin/segment/add/",
        {"scope": "core", "title": "T\r\nU", "content": "One.\r\nTwo.", "metadata": "{}",
         "version": "1.0.0", "active": "on", "sort_order": "0", "tier": "0"},
    )  # fmt: skip
    assert response.status_code == 302
    segment = Segment.objects.get()
    assert (segment.title, segment.content) == ("T\nU", "One.\nTwo.")


def test_the_langfuse_create_stores_newlines(write_key: str) -> None:
    client = basic_client(write_key)
    response = client.post(
        "/api/public/v2/prompts",
        {"name": "summarizer/writer", "type": "chat",
         "prompt": [{"role": "system", "content": "You summarize.\r\nBriefly."},
                    {"role": "user", "content": "Text:\r\n{{ text }}"}]},
        format="json",
    )  # fmt: skip
    assert response.status_code == 201, response.json()
    assert "\r" not in json.dumps(response.json())
    version = Prompt.objects.get(component="summarizer").versions.get()
    assert version.system == "You summarize.\nBriefly."
    assert version.user_templates == {"default": "Text:\n{{ text }}"}
