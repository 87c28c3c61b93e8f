"""Migrations of registered prompts: the version counter starts where the numbers are, and
the immutability trigger comes and goes with its migration."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import DatabaseError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

BEFORE_COUNTER = [("prompts", "0001_registered_prompts")]
COUNTER = [("prompts", "0002_prompt_version_counter")]
TRIGGER = [("prompts", "0003_prompt_versions_immutable")]


def migrate(targets: list[tuple[str, str]]) -> Any:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return MigrationExecutor(connection).loader.project_state(targets).apps


@pytest.fixture
def at_latest_afterwards() -> Iterator[None]:
    yield
    # Leave the test database at the latest migration for the tests that follow.
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


def test_the_counter_starts_at_each_prompts_highest_version(at_latest_afterwards: None) -> None:
    apps = migrate(BEFORE_COUNTER)
    Prompt = apps.get_model("prompts", "Prompt")
    PromptVersion = apps.get_model("prompts", "PromptVersion")
    used = Prompt.objects.create(component="a", agent="b")
    for number in (1, 2, 5):
        PromptVersion.objects.create(prompt=used, number=number, content_hash="h")
    Prompt.objects.create(component="a", agent="c")

    apps = migrate(COUNTER)
    Prompt = apps.get_model("prompts", "Prompt")
    counters = dict(Prompt.objects.values_list("agent", "last_version_number"))
    assert counters == {"b": 5, "c": 0}


def test_the_trigger_is_dropped_backwards_and_made_again_forwards(
    at_latest_afterwards: None,
) -> None:
    apps = migrate(COUNTER)
    Prompt = apps.get_model("prompts", "Prompt")
    PromptVersion = apps.get_model("prompts", "PromptVersion")
    version = PromptVersion.objects.create(
        prompt=Prompt.objects.create(component="a", agent="b"), number=1, content_hash="h"
    )
    PromptVersion.objects.filter(pk=version.pk).update(system="before the trigger")

    migrate(TRIGGER)
    with pytest.raises(DatabaseError, match="never changes"), transaction.atomic():
        PromptVersion.objects.filter(pk=version.pk).update(system="after")
    migrate(COUNTER)
    assert PromptVersion.objects.filter(pk=version.pk).update(system="after it is gone") == 1
