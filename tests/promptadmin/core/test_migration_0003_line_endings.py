"""Migration core 0003 stores the working copy's authored text with ``\\n`` line endings,
as a new revision with a history record; prompt versions and releases are left alone.

The rows are written as the services used to store them (a textarea's ``\\r\\n`` kept),
then the migration runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from promptadmin.content.models import NPC, Segment, World
from promptadmin.prompts.models import AdapterInstruction, Interface, Prompt, PromptVersion
from promptadmin.releases.models import Release, ReleaseBundle, Scenario
from tests.factories import EntryFactory

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

BEFORE = [("promptadmin_core", "0002_repair_numbers_beyond_64_bits")]
AFTER = [("promptadmin_core", "0003_normalize_line_endings")]
CRLF = "Two guards stand at the gate.\r\nOne is asleep.\rThe gate is shut."
LF = "Two guards stand at the gate.\nOne is asleep.\nThe gate is shut."


def migrate(targets: list[tuple[str, str]]) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


@pytest.fixture
def old_rows() -> Iterator[dict[str, Any]]:
    migrate(BEFORE)
    world = World.objects.create(slug="ash", name="Ash", description=CRLF)
    npc = NPC.objects.create(slug="oren", name="Oren", description="Plain.\n")
    segment = Segment.objects.create(
        scope="world", world=world, title="Gate\r\n", content=CRLF, token_count=3,
        token_encoding="cl100k_base",
    )  # fmt: skip
    plain = Segment.objects.create(scope="core", content="Already fine.\nYes.")
    entry = EntryFactory(world=world)
    scenario = Scenario.objects.create(
        name="Gate",
        entry=entry.slug,
        state={"game_state": "Night.\r\nRain.", "player": {"hp": "3\r\n"}},
        expectations=[{"kind": "contains", "text": "gate.\r\nOne"}],
    )
    prompt = Prompt.objects.create(component="c", agent="a", description=CRLF)
    version = PromptVersion.objects.create(
        prompt=prompt, number=1, system=CRLF, user_templates={"default": CRLF}, content_hash="x"
    )
    interface = Interface.objects.create(name="langchain")
    instruction = AdapterInstruction.objects.create(
        interface=interface, task="t", system_addition=CRLF, user_addition="ok"
    )
    bundle = ReleaseBundle.objects.create(sha256="f" * 64, kind="world", content=CRLF)
    release = Release.objects.create(
        name="r1", notes=CRLF, content_hash="x", segment_count=0, catalog={}, manifest={}
    )
    yield {
        "world": world,
        "npc": npc,
        "segment": segment,
        "plain": plain,
        "scenario": scenario,
        "prompt": prompt,
        "version": version,
        "instruction": instruction,
        "bundle": bundle,
        "release": release,
    }
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


def test_working_copy_text_gets_newlines_as_a_new_revision_with_history(old_rows: Any) -> None:
    segment = old_rows["segment"]
    records_before = list(segment.history.values_list("history_id", "content"))

    migrate(AFTER)

    segment.refresh_from_db()
    assert (segment.content, segment.title) == (LF, "Gate\n")
    assert segment.revision == 2
    assert segment.token_count is None  # counted again, not left counting the "\r"s
    newest = segment.history.order_by("-history_id").first()
    assert newest is not None
    assert (newest.content, newest.revision, newest.history_type) == (LF, 2, "~")
    assert newest.history_change_reason == "Line endings normalized to \\n"
    # Earlier records are kept as they were.
    assert all(
        segment.history.get(history_id=pk).content == content for pk, content in records_before
    )
    world = World.objects.get(pk=old_rows["world"].pk)
    assert (world.description, world.revision, world.history.count()) == (LF, 2, 2)
    prompt = Prompt.objects.get(pk=old_rows["prompt"].pk)
    assert prompt.description == LF
    assert prompt.history.order_by("-history_id").first().description == LF
    instruction = AdapterInstruction.objects.get(pk=old_rows["instruction"].pk)
    assert (instruction.system_addition, instruction.user_addition) == (LF, "ok")
    scenario = Scenario.objects.get(pk=old_rows["scenario"].pk)
    assert scenario.state == {"game_state": "Night.\nRain.", "player": {"hp": "3\n"}}
    assert scenario.expectations == [{"kind": "contains", "text": "gate.\nOne"}]
    assert scenario.revision == 2


def test_rows_without_a_carriage_return_are_not_touched(old_rows: Any) -> None:
    plain, npc = old_rows["plain"], old_rows["npc"]
    migrate(AFTER)
    plain.refresh_from_db()
    assert (plain.revision, plain.history.count()) == (1, 1)
    npc.refresh_from_db()
    assert (npc.revision, npc.history.count()) == (1, 1)


def test_prompt_versions_and_releases_keep_what_was_written_then(old_rows: Any) -> None:
    migrate(AFTER)
    version = PromptVersion.objects.get(pk=old_rows["version"].pk)
    assert (version.system, version.user_templates) == (CRLF, {"default": CRLF})
    assert ReleaseBundle.objects.get(pk=old_rows["bundle"].pk).content == CRLF
    assert Release.objects.get(pk=old_rows["release"].pk).notes == CRLF
