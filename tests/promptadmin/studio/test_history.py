"""A segment's history: every revision, a diff between any two, restore as a new revision."""

from __future__ import annotations

import html

import pytest
from django.test import Client
from django.urls import reverse

from promptadmin.content.models import Segment
from promptadmin.content.services import segments
from promptadmin.content.services.api_keys import api_key_create

pytestmark = pytest.mark.usefixtures("content")


@pytest.fixture
def tone(content: dict) -> Segment:
    """The world's tone segment at revision 3: created, reworded, then versioned."""
    tone = content["tone"]
    tone = segments.segment_update(actor=None, segment=tone, content="Grey and wet.\nRust.")
    return segments.segment_update(
        actor=None, segment=tone, content="Grey and wet.\nSalt.", version="2.0.0"
    )


def history_url(segment: Segment) -> str:
    return reverse("studio:segment_history", args=[segment.pk])


def test_every_revision_is_listed_newest_first_with_what_changed(
    viewer: Client, tone: Segment
) -> None:
    response = viewer.get(history_url(tone))
    revisions = response.context["revisions"]
    assert [r.revision for r in revisions] == [3, 2, 1]
    assert [r.changed_fields for r in revisions] == [["text", "version label"], ["text"], []]
    html = response.content.decode()
    assert "Changed text, version label" in html
    assert "Created" in html


def test_the_default_diff_is_between_the_last_two_revisions(viewer: Client, tone: Segment) -> None:
    diff = viewer.get(history_url(tone)).context["diff"]
    assert (diff["a"], diff["b"]) == (2, 3)
    assert [(row.left.html, row.right.html) for row in diff["rows"]] == [
        ("Grey and wet.", "Grey and wet."),
        ("<del>Rust</del>.", "<ins>Salt</ins>."),
    ]
    assert [(c.label, c.old, c.new) for c in diff["fields"]] == [
        ("Version label", "1.0.0", "2.0.0")
    ]


def test_any_two_revisions_can_be_compared_in_either_order(viewer: Client, tone: Segment) -> None:
    diff = viewer.get(history_url(tone), {"a": 3, "b": 1}).context["diff"]
    assert (diff["a"], diff["b"]) == (1, 3)
    assert diff["left_title"] == "Revision 1"


def test_comparing_in_place_returns_only_the_diff(viewer: Client, tone: Segment) -> None:
    response = viewer.get(history_url(tone), {"a": 1, "b": 2}, headers={"HX-Request": "true"})
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="revision-diff"')
    assert "Changes from revision 1 to revision 2" in html


def test_unknown_revisions_fall_back_to_the_latest_two(viewer: Client, tone: Segment) -> None:
    diff = viewer.get(history_url(tone), {"a": 99, "b": "x"}).context["diff"]
    assert (diff["a"], diff["b"]) == (2, 3)


def test_a_segment_written_without_history_says_so(viewer: Client, tone: Segment) -> None:
    # A bulk load or a script can write rows without history records.
    tone.history.all().delete()  # type: ignore[attr-defined]
    page = viewer.get(history_url(tone))
    assert page.status_code == 200
    assert "No revision of this segment is recorded" in page.content.decode()
    assert (
        viewer.get(history_url(tone), {"a": 1, "b": 3}, HTTP_HX_REQUEST="true").status_code == 200
    )


def test_restoring_saves_the_old_revision_as_a_new_one(author: Client, tone: Segment) -> None:
    response = author.post(history_url(tone), {"revision": 1, "expected_revision": 3})
    assert response["Location"] == history_url(tone)
    tone.refresh_from_db()
    assert (tone.revision, tone.content, tone.version) == (
        4,
        "The Iron Coast is grey, wet and stubborn.",
        "1.0.0",
    )
    assert tone.history.count() == 4  # nothing rewritten
    assert (
        "Restored revision 1: saved as revision 4."
        in author.get(history_url(tone)).content.decode()
    )


def test_a_stale_restore_restores_nothing(author: Client, tone: Segment) -> None:
    response = author.post(history_url(tone), {"revision": 1, "expected_revision": 2})
    tone.refresh_from_db()
    assert tone.revision == 3
    assert "nothing was restored" in author.get(response["Location"]).content.decode()


def test_restoring_an_unknown_revision_says_so(author: Client, tone: Segment) -> None:
    response = author.post(history_url(tone), {"revision": 9, "expected_revision": 3}, follow=True)
    assert f"Segment #{tone.pk} has no revision 9." in response.content.decode()


def test_restoring_needs_a_revision(author: Client, tone: Segment) -> None:
    response = author.post(history_url(tone), {"revision": "", "expected_revision": 3}, follow=True)
    assert "Choose a revision to restore." in response.content.decode()


def test_restore_buttons_are_for_authors_only(
    viewer: Client, author: Client, tone: Segment
) -> None:
    assert "Restore revision 1" not in viewer.get(history_url(tone)).content.decode()
    assert "Restore revision 1" in author.get(history_url(tone)).content.decode()


def test_changes_made_with_an_api_key_name_the_key(viewer: Client, tone: Segment) -> None:
    key = api_key_create(actor=None, name="content-pipeline", scope="write")[0]
    segments.segment_update(actor=key, segment=tone, content="Changed by a pipeline.")
    html = viewer.get(history_url(tone)).content.decode()
    assert f"API key &#x27;content-pipeline&#x27; ({key.prefix})" in html
    dashboard = viewer.get(reverse("studio:dashboard"))
    assert dashboard.context["changes"][0].who == f"API key 'content-pipeline' ({key.prefix})"


@pytest.mark.parametrize("scope", ["game_state", "player", "rng", "input"])
def test_restoring_a_deprecated_segment_says_it_is_read_only(author: Client, scope: str) -> None:
    legacy = segments.segment_import_legacy(actor=None, scope=scope, content="Old text.")
    response = author.post(
        history_url(legacy), {"revision": 1, "expected_revision": 1}, follow=True
    )
    assert response.status_code == 200
    assert f"deprecated scope '{scope}' and is read-only" in html.unescape(
        response.content.decode()
    )
    legacy.refresh_from_db()
    assert (legacy.content, legacy.revision) == ("Old text.", 1)
