"""The dashboard: counts per scope, lint errors across entries, recent changes."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from promptadmin.content.models import Entry, Segment
from promptadmin.content.services import catalog, health, segments
from tests.factories import EntryFactory, UserFactory, make_segment

pytestmark = pytest.mark.usefixtures("content")

URL = reverse("studio:dashboard")


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> None:
    """A check asked for stays queued (no worker has taken it yet)."""
    monkeypatch.setattr(health, "_enqueue", lambda: None)


def checked(client: Client, url: str = URL) -> Any:
    """The page once the background check has caught up (a task does it after every
    committed change; the tests' changes are never committed, so it runs here)."""
    health.entry_health_check()
    return client.get(url)


def test_segments_are_counted_per_scope_active_and_inactive(viewer: Client, content: dict) -> None:
    segments.segment_update(actor=None, segment=content["marta"], active=False)
    segments.segment_import_legacy(actor=None, scope="player", content="Old player text.")
    response = checked(viewer)
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
    response = checked(viewer)
    lints = {item.entry.slug: item for item in response.context["worst"]}
    assert "drowned-bell" not in lints  # nothing to say about it
    assert lints["bare"].errors == ["The entry has no segments."]
    assert response.context["totals"]["errors"] == 1
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


def test_the_dashboard_costs_the_same_queries_with_3_or_30_entries_after_every_edit(
    viewer: Client, content: dict, django_assert_num_queries: Any, queued: None
) -> None:
    def grow(count: int) -> None:
        for _n in range(count):
            entry = EntryFactory(world=content["world"])
            make_segment(scope="entry", ref=entry, content="Scene.")
        health.entry_health_check()
        # An edit: the page shows the last findings (and says they are being updated).
        segments.segment_update(actor=None, segment=content["tone"], content=f"Fog {count}.")
        health.health_changed()

    def load() -> list[str]:
        with django_assert_num_queries(len(queries)):
            response = viewer.get(URL)
        return [item.entry.slug for item in response.context["worst"]]

    grow(3)
    viewer.get(URL)  # warm the session
    with CaptureQueriesContext(connection) as queries:
        viewer.get(URL)
    assert len(load()) == 3  # each new entry has a finding
    grow(27)
    assert len(load()) == 11  # the worst ten, and one to know there are more
    # Nothing on the page is worked out from every entry on the request.
    assert not any("promptadmin_entryruleset" in q["sql"] for q in queries.captured_queries)


def test_findings_are_worked_out_in_the_background_and_the_page_says_when_they_are_stale(
    viewer: Client, content: dict, queued: None
) -> None:
    first = viewer.get(URL)
    assert first.context["updating"]  # never checked yet: nothing is worked out here
    assert first.context["totals"]["checked"] == 0
    assert "being worked out in the background" in first.content.decode()
    assert "updating" not in checked(viewer).content.decode().lower()
    EntryFactory(slug="bare", name="Bare entry", world=content["world"])
    health.health_changed()  # what the commit of that change does (with its task)
    stale = viewer.get(URL)
    # The last findings meanwhile (the new entry is not checked yet).
    assert stale.context["updating"] and stale.context["totals"]["checked"] == 1
    assert "Updating: content changed since" in stale.content.decode()
    fresh = checked(viewer)
    assert not fresh.context["updating"]
    assert [item.entry.slug for item in fresh.context["worst"]] == ["bare"]


def test_only_the_entries_an_edit_reaches_are_assembled_again(content: dict) -> None:
    other_world = EntryFactory(slug="elsewhere").world
    make_segment(scope="world", ref=other_world, content="Elsewhere.")
    assert health.entry_health_check() == 2
    assert health.check_all() == 0  # nothing changed
    segments.segment_update(actor=None, segment=content["tone"], content="Fog.")
    assert health.check_all() == 1  # the Iron Coast's entry only
    segments.segment_update(actor=None, segment=content["core"], content="You narrate.")
    assert health.check_all() == 2  # core reaches every entry


def test_the_findings_page_lists_every_entry_with_findings_a_page_at_a_time(
    viewer: Client, content: dict
) -> None:
    for n in range(30):
        EntryFactory(slug=f"bare-{n:02}", world=content["world"])
    dashboard = checked(viewer)
    assert len(dashboard.context["worst"]) == 11  # ten shown, and a link to them all
    assert reverse("studio:entry_health") in dashboard.content.decode()
    first = viewer.get(reverse("studio:entry_health"))
    assert (first.context["page"].total, len(first.context["page"].items)) == (30, 25)
    assert len(viewer.get(reverse("studio:entry_health"), {"page": 2}).context["page"]) == 5


def test_unpublished_changes_load_after_the_page(viewer: Client) -> None:
    page = viewer.get(URL).content.decode()
    assert 'hx-get="/?part=unpublished" hx-trigger="load"' in page
    part = viewer.get(URL, {"part": "unpublished"}, headers={"HX-Request": "true"})
    assert part.content.decode().lstrip().startswith('<div id="unpublished">')
    assert "Nothing is published yet" in part.content.decode()


def test_unpublished_changes_once_worked_out_read_no_release_manifest(viewer: Client) -> None:
    from promptadmin.releases import services as releases

    releases.release_create(actor=None, name="r-live", labels=["production"])
    segments.segment_update(actor=None, segment=Segment.objects.first(), content="Changed.")
    viewer.get(URL, {"part": "unpublished"}, headers={"HX-Request": "true"})  # worked out
    with CaptureQueriesContext(connection) as queries:
        part = viewer.get(URL, {"part": "unpublished"}, headers={"HX-Request": "true"})
    assert "r-live" in part.content.decode()
    # The manifest names every object's bundle: half a megabyte at 1,000 entries.
    assert not any('"manifest"' in q["sql"] for q in queries.captured_queries)


def test_the_headline_counts_entries_that_lose_content_and_names_the_cause(
    viewer: Client, content: dict
) -> None:
    # What was seen (4): an oversized paste guts an entry while the headline said 0 errors.
    paste = make_segment(
        scope="world", ref=content["world"], content="word " * 8999 + "word", title="Paste"
    )
    entry = Entry.objects.get(slug="drowned-bell")
    catalog.entry_update(actor=None, entry=entry, cast=[catalog.CastMember(npc=content["npc"])])
    response = checked(viewer)
    (losing,) = response.context["worst"]
    assert losing.entry.slug == "drowned-bell"
    assert [loss["turn"] for loss in losing.losses] == ["First turn", "Later turn"]
    assert losing.losses[0]["lost"] == [f"World segment #{paste.pk} 'Paste'"]
    assert (
        losing.losses[0]["cause"]
        == f"World segment #{paste.pk} 'Paste' (9000 tokens) is the largest"
    )
    assert any("'Paste' has 9000 tokens" in error for error in losing.errors)
    html = response.content.decode()
    assert '<span class="stat-n">1</span> entry loses content at the default budgets' in html


def test_active_segments_without_text_are_flagged(viewer: Client, content: dict) -> None:
    # Saved before the services refused them: the dashboard still says where they are.
    Segment.objects.filter(pk=content["tone"].pk).update(content="   ")
    html = checked(viewer).content.decode()
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


def test_a_stale_dashboard_asks_for_the_check_once_and_never_runs_it(
    viewer: Client, content: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A check lost on its way (a broker down, a bulk load that told no one) is asked again.
    asked: list[int] = []
    monkeypatch.setattr(health, "_enqueue", lambda: asked.append(1))
    viewer.get(URL)
    viewer.get(URL)
    assert asked == [1]
    health.entry_health_check()
    assert not viewer.get(URL).context["updating"]
    assert asked == [1]  # up to date: nothing to ask for
