"""Fixtures for studio tests: the demo content and a signed-in client per role."""

from __future__ import annotations

from collections.abc import Callable
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.core.cache import cache
from django.core.management import call_command
from django.test import Client

from promptadmin.content.services import catalog
from tests.factories import (
    EntryFactory,
    NPCFactory,
    RulesetFactory,
    UserFactory,
    WorldFactory,
    make_segment,
)


@pytest.fixture(autouse=True)
def fast_password_hashing(settings: Any) -> None:
    # Every test creates users; the real hasher is slow on purpose.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def demo(db: None) -> None:
    """The whole demo game (slower: use ``content`` unless the test needs real prompts)."""
    cache.clear()
    call_command("seed_demo", stdout=StringIO())


@pytest.fixture
def content(db: None) -> dict[str, object]:
    """A small game: one world, entry, two rulesets, an NPC, a segment of every scope."""
    cache.clear()
    world = WorldFactory(slug="iron-coast", name="The Iron Coast")
    mystery = RulesetFactory(slug="mystery", name="Mystery and clues")
    combat = RulesetFactory(slug="combat-lite", name="Light combat")
    entry = EntryFactory(slug="drowned-bell", name="The Drowned Bell", world=world)
    catalog.entry_update(actor=None, entry=entry, rulesets=[mystery, combat])
    npc = NPCFactory(slug="marta-vell", name="Marta Vell")
    return {
        "world": world,
        "mystery": mystery,
        "combat": combat,
        "entry": entry,
        "npc": npc,
        "core": make_segment(scope="core", content="You are the narrator."),
        "rule": make_segment(scope="ruleset", ref=mystery, content="Three clues per truth."),
        "roll": make_segment(scope="ruleset", ref=combat, content="One roll per fight."),
        "tone": make_segment(
            scope="world",
            ref=world,
            content="The Iron Coast is grey, wet and stubborn.",
            title="Tone",
        ),
        "premise": make_segment(scope="entry", ref=entry, content="A bell rings underwater."),
        "opening": make_segment(scope="entry_start", ref=entry, content="Open on the pier."),
        "marta": make_segment(scope="npc", ref=npc, content="Marta, harbourmaster."),
    }


def user_with_role(role: str) -> object:
    user = UserFactory(username=f"{role}-person")
    if role != "none":
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


@pytest.fixture
def client_as(db: None) -> Callable[[str], Client]:
    """A client signed in as a person with ``role`` (viewer, author or admin)."""

    def make(role: str) -> Client:
        client = Client()
        client.force_login(user_with_role(role))
        return client

    return make


@pytest.fixture
def viewer(client_as: Callable[[str], Client]) -> Client:
    return client_as("viewer")


@pytest.fixture
def author(client_as: Callable[[str], Client]) -> Client:
    return client_as("author")
