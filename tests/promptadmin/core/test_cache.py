"""The content cache's keys carry the format of what is stored under them."""

from __future__ import annotations

from typing import Any

import pytest

from promptadmin.content.assembly import EntryBundle, NpcBundle, load_content
from promptadmin.core import cache as content_cache
from promptadmin.core.cache import BUNDLE_FORMAT
from tests.factories import EntryFactory, NPCFactory

# The format of the single-app layout, whose pickled bundles name modules that moved.
SINGLE_APP_FORMAT = 2


def test_a_bundle_key_carries_the_bundle_format() -> None:
    assert content_cache.key("g1", "entry", "drowned-bell") == (
        f"assembly:v{BUNDLE_FORMAT}:g1:entry:drowned-bell"
    )
    # Bundles are pickled: one cached by the layout before the move must never be read.
    assert BUNDLE_FORMAT > SINGLE_APP_FORMAT
    assert EntryBundle.__module__ == NpcBundle.__module__ == "promptadmin.content.assembly"


@pytest.mark.django_db
def test_assembly_caches_its_bundles_under_keys_of_the_current_format(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    entry, npc = EntryFactory(), NPCFactory()
    stored: list[str] = []
    set_many = content_cache.set_many

    def recording(values: dict[str, Any]) -> None:
        stored.extend(values)
        set_many(values)

    monkeypatch.setattr(content_cache, "set_many", recording)
    content_cache.cache.clear()
    load_content(entry.slug, [npc.slug])
    assert len(stored) == 2
    assert all(key.startswith(f"assembly:v{BUNDLE_FORMAT}:") for key in stored)
