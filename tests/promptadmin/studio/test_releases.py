"""The studio's releases pages: publish with the impact report, roll back, compare, notices."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from promptadmin.content.models import NPC
from promptadmin.content.services import catalog, segments
from promptadmin.releases import reports, selectors, services, serving, tasks
from promptadmin.releases.models import ReleaseLabel, ReleaseLabelMove
from promptadmin.studio.views import releases as releases_views

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_process() -> None:
    serving.forget()


@pytest.fixture
def admin(client_as: Any) -> Client:
    return client_as("admin")


def grow_tone(content: dict[str, Any], capture: Any) -> None:
    with capture(execute=True):
        segments.segment_update(
            actor=None, segment=content["tone"], content="Grey water, grey iron. " * 200
        )


def reviewed_fields(page: str) -> dict[str, str]:
    return dict(re.findall(r'<input type="hidden" name="(reviewed\w*)" value="([^"]*)"', page))


def test_every_role_reads_the_releases_pages(viewer: Client, content: Any) -> None:
    services.release_create(actor=None, name="r-one", labels=["production"])
    for path in (
        "/releases/",
        "/releases/publish/",
        "/releases/compare/?before=production&after=working",
        "/releases/prompts/?before=production&after=working&entry=drowned-bell&token_budget=8000&npc_budget=600",
    ):
        assert viewer.get(path).status_code == 200, path


def test_only_admins_publish_and_move_labels(author: Client, content: Any) -> None:
    response = author.post("/releases/publish/", {"label": "production", "notes": "x"})
    assert response.status_code == 403
    services.release_create(actor=None, name="r-one")
    response = author.post(
        "/releases/labels/move/", {"label": "production", "release": "r-one", "note": ""}
    )
    assert response.status_code == 403
    assert not ReleaseLabel.objects.exists()


def test_publish_shows_the_impact_then_publishes(  # type: ignore[no-untyped-def]
    admin: Client, content: Any, django_capture_on_commit_callbacks
) -> None:
    services.scenario_create(actor=None, name="tight", entry="drowned-bell", token_budget=300)
    page = admin.get("/releases/publish/").content.decode()
    assert "Nothing is published as 'production' yet" in page
    form = {"label": "production", "notes": "launch", **reviewed_fields(page)}
    with django_capture_on_commit_callbacks(execute=True):
        response = admin.post("/releases/publish/", form)
    assert response.status_code == 302
    assert serving.resolve(None).label == "production"

    grow_tone(content, django_capture_on_commit_callbacks)
    page = admin.get("/releases/publish/").content.decode()
    assert "Compared with r-" in page and "new cut" in page
    assert f"World segment #{content['tone'].pk} &#x27;Tone&#x27;" in page and "left out" in page


def test_publishing_while_an_expectation_fails_asks_for_confirmation(  # type: ignore[no-untyped-def]
    admin: Client, content: Any, django_capture_on_commit_callbacks
) -> None:
    services.scenario_create(
        actor=None,
        name="bell fits",
        entry="drowned-bell",
        token_budget=300,
        expectations=[{"kind": "fits"}],
    )
    services.release_create(actor=None, name="r-one", labels=["production"])
    grow_tone(content, django_capture_on_commit_callbacks)
    form = {"label": "production", "name": "r-two"}
    reviewed = reviewed_fields(admin.get("/releases/publish/").content.decode())
    refused = admin.post("/releases/publish/", {**form, **reviewed})
    assert refused.status_code == 400
    assert "Expectations fail on this content" in refused.content.decode()
    assert ReleaseLabel.objects.get(name="production").release.name == "r-one"
    confirmed = admin.post("/releases/publish/", {**form, **reviewed, "confirm": "on"})
    assert confirmed.status_code == 302
    move = ReleaseLabelMove.objects.filter(label="production").first()
    assert move is not None and move.to_release.name == "r-two" and move.confirmed_failures


def test_roll_back_from_the_releases_page(admin: Client, content: Any) -> None:
    services.release_create(actor=None, name="r-one", labels=["production"])
    services.release_create(actor=None, name="r-two", labels=["production"])
    move = {"label": "production", "release": "r-one", "note": "undo"}
    asked = admin.post("/releases/labels/move/", move)
    assert asked.status_code == 200
    html = asked.content.decode()
    assert "Move the production label from r-two to r-one?" in html
    assert "Game servers read r-one on their next request." in html
    assert ReleaseLabel.objects.get(name="production").release.name == "r-two"
    response = admin.post("/releases/labels/move/", {**move, "live_confirmed": "yes"})
    assert response.status_code == 302
    assert ReleaseLabel.objects.get(name="production").release.name == "r-one"
    page = admin.get("/releases/").content.decode()
    assert "undo" in page and "r-two" in page


def test_the_label_to_move_is_picked_among_existing_ones_or_named_new(
    admin: Client, content: Any
) -> None:
    services.release_create(actor=None, name="r-one", labels=["production"])
    services.release_create(actor=None, name="r-two", labels=["staging"])
    page = admin.get("/releases/").content.decode()
    rows = {
        name: re.search(rf"value=\"{name}\">\s*<label[^>]*>Label to move[\s\S]*?</select>", page)
        for name in ("r-one", "r-two")
    }
    offered = {
        name: re.findall(r'<option value="([^"]+)"', row.group(0)) for name, row in rows.items()
    }
    # No "Move here" for a label the release already holds.
    assert offered == {"r-one": ["staging", "+new"], "r-two": ["production", "+new"]}
    # A typo cannot make a label: only existing labels, or one named as new.
    typo = admin.post("/releases/labels/move/", {"label": "stagign", "release": "r-one"})
    assert typo.status_code == 302
    assert not ReleaseLabel.objects.filter(name="stagign").exists()
    unnamed = admin.post(
        "/releases/labels/move/", {"label": "+new", "release": "r-one"}, follow=True
    )
    assert "Name the new label" in unnamed.content.decode()
    admin.post(
        "/releases/labels/move/", {"label": "+new", "new_label": "canary", "release": "r-one"}
    )
    assert ReleaseLabel.objects.get(name="canary").release.name == "r-one"
    admin.post("/releases/labels/move/", {"label": "staging", "release": "r-one"})
    assert ReleaseLabel.objects.get(name="staging").release.name == "r-one"


def test_edit_pages_say_changes_are_not_live_once_production_exists(  # type: ignore[no-untyped-def]
    author: Client, admin: Client, content: Any, django_capture_on_commit_callbacks
) -> None:
    notice = "not live until published"
    changing = [
        (author, f"/segments/{content['tone'].pk}/"),
        (author, "/segments/new/"),
        (author, "/worlds/iron-coast/"),
        (author, "/rulesets/mystery/"),
        (author, "/npcs/marta-vell/"),
        (author, "/entries/drowned-bell/"),
        (author, "/entries/new/"),
        (admin, "/deprecated/"),
        (admin, "/deprecated/import/"),
    ]
    reading = [
        (author, "/"),
        (author, "/segments/"),
        (author, "/preview/?entry=drowned-bell&token_budget=8000&npc_budget=600"),
        (author, "/releases/"),
        (author, "/deprecated/"),  # refused: the 403 page changes nothing
    ]
    for client, path in changing:
        response = client.get(path)
        assert response.status_code == 200 and notice not in response.content.decode(), path
    with django_capture_on_commit_callbacks(execute=True):
        services.release_create(actor=None, name="r-one", labels=["production"])
    for client, path in changing:
        response = client.get(path)
        assert response.status_code == 200 and notice in response.content.decode(), path
    for client, path in reading:
        assert notice not in client.get(path).content.decode(), path


def test_the_dashboard_shows_what_is_unpublished(  # type: ignore[no-untyped-def]
    author: Client, content: Any, django_capture_on_commit_callbacks
) -> None:
    # A fragment the dashboard loads once shown (it reads the whole working copy).
    def unpublished() -> str:
        assert "?part=unpublished" in author.get("/").content.decode()
        return author.get("/", {"part": "unpublished"}).content.decode()

    assert "Nothing is published yet" in unpublished()
    services.release_create(actor=None, name="r-one", labels=["production"])
    assert "Everything is published" in unpublished()
    grow_tone(content, django_capture_on_commit_callbacks)
    page = unpublished()
    assert "1 changed" in page and f"#{content['tone'].pk} <bdi>Tone</bdi>" in page


def test_what_is_unpublished_is_worked_out_once_per_content_change(  # type: ignore[no-untyped-def]
    content: Any, django_capture_on_commit_callbacks
) -> None:
    # Reading the whole working copy costs about 0.3 s at 10,000 segments: not per view.
    with django_capture_on_commit_callbacks(execute=True):
        services.release_create(actor=None, name="r-one", labels=["production"])
    with CaptureQueriesContext(connection) as first:
        assert selectors.unpublished() == selectors.unpublished()
    with CaptureQueriesContext(connection) as again:
        before = selectors.unpublished()
    assert len(again) == 1 < len(first)  # the label, read every time
    assert before is not None and before["segments"]["changed"] == []
    grow_tone(content, django_capture_on_commit_callbacks)
    after = selectors.unpublished()
    assert after is not None and [s["id"] for s in after["segments"]["changed"]] == [
        content["tone"].pk
    ]


def test_the_preview_shows_any_release(  # type: ignore[no-untyped-def]
    viewer: Client, content: Any, django_capture_on_commit_callbacks
) -> None:
    services.release_create(actor=None, name="r-one")
    with django_capture_on_commit_callbacks(execute=True):
        segments.segment_update(actor=None, segment=content["tone"], content="Fog, always fog.")
    query = "/preview/?entry=drowned-bell&token_budget=8000&npc_budget=600"
    assert "Fog, always fog." in viewer.get(query).content.decode()
    page = viewer.get(query + "&release=r-one").content.decode()
    assert "Fog, always fog." not in page and "release r-one" in page


def test_compare_shows_what_an_object_change_was(  # type: ignore[no-untyped-def]
    viewer: Client, content: Any, django_capture_on_commit_callbacks
) -> None:
    services.release_create(actor=None, name="r-one")
    npc = NPC.objects.get(slug="marta-vell")
    with django_capture_on_commit_callbacks(execute=True):
        catalog.catalog_update(
            actor=None, obj=npc, name="Marta Orr", description=f"{npc.description}\nAnd more."
        )
    page = viewer.get("/releases/compare/?before=r-one&after=working").content.decode()
    assert f"<bdi>{npc.name}</bdi> → <bdi>Marta Orr</bdi>" in page
    assert '<span class="u-added">+And more.</span>' in page


def test_publish_refuses_edits_saved_after_the_report_was_shown(  # type: ignore[no-untyped-def]
    admin: Client, content: Any, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        services.release_create(actor=None, name="r-one", labels=["production"])
    reviewed = reviewed_fields(admin.get("/releases/publish/").content.decode())
    assert set(reviewed) == {"reviewed", "reviewed_at"}
    with django_capture_on_commit_callbacks(execute=True):
        segments.segment_update(actor=None, segment=content["tone"], title="Unreviewed")

    form = {"label": "production", "name": "r-two"}
    refused = admin.post("/releases/publish/", {**form, **reviewed})
    assert refused.status_code == 409
    page = refused.content.decode()
    assert "changed since you reviewed it" in page
    assert f"#{content['tone'].pk} Unreviewed" in page  # what changed, and the new report
    assert ReleaseLabel.objects.get(name="production").release.name == "r-one"

    published = admin.post("/releases/publish/", {**form, **reviewed_fields(page)})
    assert published.status_code == 302
    assert ReleaseLabel.objects.get(name="production").release.name == "r-two"
    # A form without the report's hash (a stale page, a script) publishes nothing.
    stale = admin.post("/releases/publish/", {**form, "name": "r-three"})
    assert stale.status_code == 400 and "reload it to review the impact" in stale.content.decode()
    assert ReleaseLabel.objects.get(name="production").release.name == "r-two"


def test_a_change_to_the_core_fills_the_publish_page_in_with_a_progress_bar(  # type: ignore[no-untyped-def]
    admin: Client, content: Any, monkeypatch, django_capture_on_commit_callbacks
) -> None:
    services.release_create(actor=None, name="r-one", labels=["production"])
    with django_capture_on_commit_callbacks(execute=True):
        segments.segment_update(actor=None, segment=content["core"], content="Be terse.")
    # Every scenario of the game is to assemble again: more than a page waits for, here.
    monkeypatch.setattr(reports, "INLINE_SCENARIOS", 0)
    sent: list[list[Any]] = []
    monkeypatch.setattr(reports.current_app.tasks[reports.TASK], "apply", _record(sent))

    page = admin.get("/releases/publish/").content.decode()

    assert "Waiting to assemble the scenarios" in page and "<progress" in page
    assert f"#{content['core'].pk}" in page  # what changed shows at once
    poll = re.search(r'hx-get="([^"]+)" hx-trigger="every 1s"', page)
    assert poll is not None and len(sent) == 1
    url = poll.group(1).replace("&amp;", "&")
    assert "Waiting" in admin.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert len(sent) == 1  # polling never sends the task again while it is on its way

    tasks.impact_report(*sent[0])
    done = admin.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "<progress" not in done and "hx-get" not in done
    assert "drowned-bell: first turn" in done
    assert "2 assembled from both versions" in done


def listed(page: str) -> list[str]:
    """The scenarios an impact report's table lists."""
    return [name.strip() for name in re.findall(r'<th scope="row">([^<]+)', page)]


def test_the_report_lists_a_page_of_changed_scenarios_those_starting_to_fail_first(  # type: ignore[no-untyped-def]
    admin: Client, content: Any, monkeypatch, django_capture_on_commit_callbacks
) -> None:
    """What was seen (issue 22, item 4): after a change to the core the publish page listed
    every scenario of the game, 2,200 rows (2.7 MB of HTML) at 100,000 segments."""
    services.scenario_create(
        actor=None,
        name="zz narrator",  # listed last in the report
        entry="drowned-bell",
        expectations=[{"kind": "contains", "text": "narrator"}],
    )
    services.release_create(actor=None, name="r-one", labels=["production"], confirm=True)
    with django_capture_on_commit_callbacks(execute=True):
        segments.segment_update(actor=None, segment=content["core"], content="Be terse.")
    monkeypatch.setattr(releases_views, "SCENARIOS_PER_PAGE", 2)

    first = admin.get("/releases/publish/").content.decode()
    assert listed(first) == ["zz narrator", "drowned-bell: first turn"]  # failing first
    assert "The 3 whose prompt changes come 2 at a time" in first and "Page 1 of 2" in first
    second = admin.get("/releases/publish/?scenarios_page=2").content.decode()
    assert listed(second) == ["drowned-bell: later turn"]

    # The table the publish page polls for links to the whole page, not to itself.
    old, new = selectors.side("production")[0], selectors.side("working")[0]
    key = reports.report_key(old, new, selectors._judged(old, new))
    polled = admin.get(f"/releases/publish/?report={key}", HTTP_HX_REQUEST="true").content.decode()
    assert 'href="?scenarios_page=2"' in polled and "report=" not in polled


def test_side_by_side_says_all_each_side_loses(  # type: ignore[no-untyped-def]
    viewer: Client, content: Any, django_capture_on_commit_callbacks
) -> None:
    """The report lists the cuts one side has and the other has not; the scenario opened
    says every cut of each side, worked out then."""
    services.release_create(actor=None, name="r-one", labels=["production"], confirm=True)
    grow_tone(content, django_capture_on_commit_callbacks)
    page = viewer.get(
        "/releases/prompts/?before=production&after=working&entry=drowned-bell"
        "&token_budget=300&npc_budget=600"
    ).content.decode()
    before, after = re.findall(r'<ul class="lints" data-testid="lost">(.*?)</ul>', page, re.S)
    assert "Nothing is cut." in before
    tone = content["tone"].pk
    assert f"World segment #{tone} &#x27;Tone&#x27;" in after and "left out" in after


def test_the_publish_page_polls_only_for_a_report_key(admin: Client, content: Any) -> None:
    response = admin.get("/releases/publish/?report=impact:report:nope", HTTP_HX_REQUEST="true")
    assert response.status_code == 400


def _record(sent: list[list[Any]]) -> Any:
    def apply(*, args: list[Any], throw: bool) -> None:
        sent.append(args)

    return apply
