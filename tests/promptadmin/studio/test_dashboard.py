"""The dashboard: counts per scope, lint errors across entries, recent changes."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from promptadmin.services import segments
from tests.factories import EntryFactory, UserFactory

pytestmark = pytest.mark.usefixtures("content")

URL = reverse("studio:dashboard")


def test_segments_are_counted_per_scope_active_and_inactive(viewer: Client, content: dict) -> None:
    segments.segment_update(actor=None, segment=content["marta"], active=False)
    segments.segment_import_legacy(actor=None, scope="player", content="Old player text.")
    response = viewer.get(URL)
    counts = {row.scope: (row.active, row.inactive) for row in response.context["counts"]}
    assert counts == {
        "core": (1, 0),
        "ruleset": (2, 0),
        "world": (1, 0),
        "entry": (1, 0),
        "entry_start": (1, 0),
        "npc": (0, 1),
        "player": (0, 1),  # deprecated scopes appear only when they hold something
    }
    assert (response.context["total_active"], response.context["total_inactive"]) == (6, 2)


def test_lint_errors_across_entries_are_listed(viewer: Client, content: dict) -> None:
    EntryFactory(slug="bare", name="Bare entry", world=content["world"])
    response = viewer.get(URL)
    lints = {item.entry.slug: item for item in response.context["entry_lints"]}
    assert lints["drowned-bell"].errors == []
    assert lints["bare"].errors == ["The entry has no segments."]
    assert response.context["lint_errors"] == 1
    html = response.content.decode()
    assert '<span class="stat-n">1</span> lint error across 2 entries' in html
    assert "/preview/?entry=bare&amp;first_turn=on" in html


def test_recent_changes_say_who_changed_what_and_when(viewer: Client, content: dict) -> None:
    editor = UserFactory(username="ida")
    segments.segment_update(actor=editor, segment=content["tone"], content="Fog.")
    changes = viewer.get(URL).context["changes"]
    latest = changes[0]
    assert (str(latest.who), latest.action, latest.kind) == ("ida", "changed", "world segment")
    assert latest.label == f"#{content['tone'].pk} Tone (revision 2)"
    assert latest.url == reverse("studio:segment_history", args=[content["tone"].pk])
    assert any(change.kind == "entry" and change.label == "The Drowned Bell" for change in changes)
