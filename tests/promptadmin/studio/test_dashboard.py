"""The dashboard: counts per scope, lint errors across entries, recent changes."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from promptadmin.content.models import Entry, Segment
from promptadmin.content.services import catalog, segments
from tests.factories import EntryFactory, UserFactory, make_segment

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
    editor = UserFactory(username="ida", role="author")
    segments.segment_update(actor=editor, segment=content["tone"], content="Fog.")
    changes = viewer.get(URL).context["changes"]
    latest = changes[0]
    assert (str(latest.who), latest.action, latest.kind) == ("ida", "changed", "world segment")
    assert latest.label == f"#{content['tone'].pk} Tone (revision 2)"
    assert latest.url == reverse("studio:segment_history", args=[content["tone"].pk])
    assert any(change.kind == "entry" and change.label == "The Drowned Bell" for change in changes)


def test_the_dashboard_costs_the_same_queries_with_50_entries_after_every_edit(
    viewer: Client,
    content: dict,
    django_assert_max_num_queries: Any,
) -> None:
    for n in range(50):
        entry = EntryFactory(slug=f"entry-{n}", world=content["world"])
        make_segment(scope="entry", ref=entry, content=f"Scene {n}.")
    # An edit makes every cached finding stale: the next load works them out again.
    segments.segment_update(actor=None, segment=content["tone"], content="Fog.")
    # 16: the findings' three queries, counts, recent changes, and what is unpublished.
    with django_assert_max_num_queries(16) as first_queries:
        first = viewer.get(URL)
    # The findings are kept until the next change: the next load does not redo them.
    with django_assert_max_num_queries(13) as again_queries:
        again = viewer.get(URL)
    assert len(again_queries) <= len(first_queries) - 3
    assert len(first.context["entry_lints"]) == len(again.context["entry_lints"]) == 51
    bare = {item.entry.slug: item.errors for item in again.context["entry_lints"]}
    assert bare["entry-7"] == []


def test_the_headline_counts_entries_that_lose_content_and_names_the_cause(
    viewer: Client, content: dict
) -> None:
    # What was seen (4): an oversized paste guts an entry while the headline said 0 errors.
    paste = make_segment(
        scope="world", ref=content["world"], content="word " * 8999 + "word", title="Paste"
    )
    entry = Entry.objects.get(slug="drowned-bell")
    catalog.entry_update(actor=None, entry=entry, cast=[catalog.CastMember(npc=content["npc"])])
    response = viewer.get(URL)
    (losing,) = response.context["losing"]
    assert losing.entry.slug == "drowned-bell"
    assert [loss.turn for loss in losing.losses] == ["First turn", "Later turn"]
    assert losing.losses[0].lost == [f"World segment #{paste.pk} 'Paste'"]
    assert (
        losing.losses[0].cause == f"World segment #{paste.pk} 'Paste' (9000 tokens) is the largest"
    )
    assert any("'Paste' has 9000 tokens" in error for error in losing.errors)
    html = response.content.decode()
    assert '<span class="stat-n">1</span> entry loses content at the default budgets' in html


def test_active_segments_without_text_are_flagged(viewer: Client, content: dict) -> None:
    # Saved before the services refused them: the dashboard still says where they are.
    Segment.objects.filter(pk=content["tone"].pk).update(content="   ")
    html = viewer.get(URL).content.decode()
    assert f"World segment #{content['tone'].pk}</a> is active but has no text" in html


def test_the_page_head_holds_only_head_elements(viewer: Client) -> None:
    # Text in <head> (a template comment spread over lines renders as text) makes the
    # browser open <body> there, so the scripts land in the body and htmx runs them again
    # on every history restore.
    from html.parser import HTMLParser

    class Head(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.inside = False
            self.text: list[str] = []
            self.tags: list[str] = []

        def handle_starttag(self, tag: str, attrs: Any) -> None:
            if tag == "head":
                self.inside = True
            elif self.inside:
                self.tags.append(tag)

        def handle_endtag(self, tag: str) -> None:
            if tag == "head":
                self.inside = False

        def handle_data(self, data: str) -> None:
            if self.inside and data.strip() and self.tags[-1:] != ["title"]:
                self.text.append(data.strip())

    head = Head()
    head.feed(viewer.get(URL).content.decode())
    assert head.text == []
    assert set(head.tags) <= {"meta", "title", "link", "script"}
    assert head.tags.count("script") == 2
