"""Migration core 0002 repairs stored JSON holding numbers beyond 64 bits, reversibly.

The rows are poisoned as the API used to let them be (a float such as ``1e20`` that
PostgreSQL keeps as an integer), then the migration runs forwards, backwards and
forwards again.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from promptadmin.content.models import Segment
from promptadmin.prompts.models import PromptVersion
from promptadmin.releases.models import Scenario
from tests.factories import make_segment

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

BEFORE = [("promptadmin_core", "0001_stored_json_repair")]
AFTER = [("promptadmin_core", "0002_repair_numbers_beyond_64_bits")]
BIG = 10**20


def migrate(targets: list[tuple[str, str]]) -> Any:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return MigrationExecutor(connection).loader.project_state(targets).apps


def poison(table: str, column: str, pk: int, json_text: str) -> None:
    """Write a value as the old API let it through: Python's form of a float, in jsonb."""
    with connection.cursor() as cursor:
        cursor.execute("SET session_replication_role = replica")  # past the version trigger
        cursor.execute(f"UPDATE {table} SET {column} = %s::jsonb WHERE id = %s", [json_text, pk])
        cursor.execute("SET session_replication_role = DEFAULT")


@pytest.fixture
def poisoned() -> Iterator[dict[str, Any]]:
    migrate(BEFORE)
    call_command("seed_prompts", verbosity=0)
    bad = make_segment(content="Poisoned.", metadata={"n": 1, "keep": [1, 2]})
    good = make_segment(content="Fine.", metadata={"n": 2})
    poison(
        "promptadmin_segment",
        "metadata",
        bad.pk,
        '{"n": 1e+20, "keep": [1, {"deep": -1.5e+300}], "ok": 18446744073709551615}',
    )
    scenario = Scenario.objects.create(name="s", entry="drowned-bell")
    poison("releases_scenario", "state", scenario.pk, '{"game_state": {"gold": 1e+20}}')
    version = PromptVersion.objects.order_by("pk").first()
    assert version is not None
    poison("prompts_promptversion", "config", version.pk, '{"temperature": 0.5, "seed": 1e+20}')
    yield {"bad": bad, "good": good, "scenario": scenario, "version": version}
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


def test_forward_keeps_each_number_as_text_and_records_the_repair(poisoned: Any) -> None:
    bad = Segment.objects.get(pk=poisoned["bad"].pk)
    assert bad.metadata["n"] == BIG  # what every read choked on
    revision = bad.revision
    records = bad.history.count()

    apps = migrate(AFTER)

    bad.refresh_from_db()
    assert bad.metadata == {
        "n": str(BIG),
        "keep": [1, {"deep": "-15" + "0" * 299}],
        "ok": 18446744073709551615,  # within what the encoders write: left alone
    }
    assert bad.revision == revision + 1
    # A new history record; the earlier ones are left as they were.
    assert bad.history.count() == records + 1
    newest = bad.history.order_by("-history_id").first()
    assert newest.history_change_reason.startswith("Repaired: numbers beyond 64 bits")
    assert newest.metadata["n"] == str(BIG)
    assert bad.history.order_by("history_id").last().metadata["n"] == str(BIG)
    assert Segment.objects.get(pk=poisoned["good"].pk).metadata == {"n": 2}

    scenario = Scenario.objects.get(pk=poisoned["scenario"].pk)
    assert scenario.state == {"game_state": {"gold": str(BIG)}}
    assert scenario.revision == 2
    repaired = scenario.history.order_by("-history_id").first()  # type: ignore[attr-defined]
    assert repaired.history_change_reason.startswith("Repaired: numbers beyond 64 bits")
    assert repaired.state == {"game_state": {"gold": str(BIG)}}

    version = PromptVersion.objects.get(pk=poisoned["version"].pk)
    assert version.config == {"temperature": 0.5, "seed": str(BIG)}
    assert version.content_hash == poisoned["version"].content_hash
    with pytest.raises(Exception, match="never changes"):  # the trigger is back
        PromptVersion.objects.filter(pk=version.pk).update(config={})

    repairs = apps.get_model("promptadmin_core", "StoredJsonRepair").objects
    assert sorted((r.model, r.field, tuple(r.path)) for r in repairs.all()) == [
        ("promptadmin.Segment", "metadata", ("keep", 1, "deep")),
        ("promptadmin.Segment", "metadata", ("n",)),
        ("prompts.PromptVersion", "config", ("seed",)),
        ("releases.Scenario", "state", ("game_state", "gold")),
    ]


def test_backward_puts_every_number_back_and_forward_again_repairs(poisoned: Any) -> None:
    bad = Segment.objects.get(pk=poisoned["bad"].pk)
    before = bad.metadata
    hash_before = PromptVersion.objects.get(pk=poisoned["version"].pk).content_hash
    migrate(AFTER)
    apps = migrate(BEFORE)
    bad.refresh_from_db()
    assert bad.metadata == before
    assert (
        bad.history.order_by("-history_id")
        .first()
        .history_change_reason.startswith("Repair undone")
    )
    assert Scenario.objects.get(pk=poisoned["scenario"].pk).state["game_state"]["gold"] == BIG
    version = PromptVersion.objects.get(pk=poisoned["version"].pk)
    assert version.config["seed"] == BIG and version.content_hash == hash_before
    assert not apps.get_model("promptadmin_core", "StoredJsonRepair").objects.exists()
    migrate(AFTER)
    bad.refresh_from_db()
    assert bad.metadata["n"] == str(BIG)


def test_backward_leaves_a_value_edited_since_the_repair(poisoned: Any) -> None:
    migrate(AFTER)
    Segment.objects.filter(pk=poisoned["bad"].pk).update(metadata={"n": "edited"})
    migrate(BEFORE)
    assert Segment.objects.get(pk=poisoned["bad"].pk).metadata == {"n": "edited"}
