"""Playtests in the studio: start a run, follow its replies and cost, playtest the change
from the publish page, and confirm a publish while a reply expectation fails."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import pytest
from django.test import Client, override_settings

from promptadmin.content.services import segments
from promptadmin.playtests.endpoint import OFF
from promptadmin.playtests.models import PlaytestRun
from promptadmin.releases import services
from promptadmin.releases.models import ReleaseLabel, Scenario
from tests.promptadmin.conversations.fake_llm import Reply, fake_llm


@pytest.fixture
def admin(client_as: Any) -> Client:
    return client_as("admin")


def answer(body: dict[str, Any]) -> Reply:
    """The NPC repeats the system prompt's last words: a changed segment changes it."""
    system = body["messages"][0]["content"]
    return Reply(text="Aye. " + ("The bell is cracked." if "cracked" in system else "All calm."))


def calm_bell(**values: Any) -> Scenario:
    """A scenario whose reply must not say the bell is cracked."""
    return services.scenario_create(
        actor=None,
        name="calm bell",
        entry="drowned-bell",
        state={"input": "How is the bell?"},
        expectations=[{"kind": "reply_excludes", "text": "cracked"}],
        **values,
    )


def endpoint(url: str) -> Any:
    return override_settings(
        PLAYTEST_BASE_URL=url, PLAYTEST_MODEL="fake-model", PLAYTEST_MAX_RETRIES=0
    )


def test_playtests_off_say_how_to_turn_them_on(viewer: Client) -> None:
    with override_settings(PLAYTEST_BASE_URL=""):
        for url in ("/playtests/", "/releases/publish/"):
            page = unescape(viewer.get(url).content.decode())
            assert OFF in page, url


def test_playtest_a_scenario_then_the_change_and_confirm_the_publish(  # type: ignore[no-untyped-def]
    author: Client, admin: Client, content: Any, django_capture_on_commit_callbacks
) -> None:
    calm_bell()
    services.release_create(actor=None, name="r-one", labels=["production"])
    with fake_llm() as llm, endpoint(llm.url):
        llm.respond = answer
        with django_capture_on_commit_callbacks(execute=True):
            started = author.post("/playtests/", {"scenarios": ["calm bell"], "release": "working"})
        assert started.status_code == 302
        page = author.get(started["Location"]).content.decode()
        assert "Aye. All calm." in page and "✓ reply_excludes" in page
        assert "1 call to the model, 1 token in, 1 token out" in page
        # The fragment htmx polls is the run's section alone.
        fragment = author.get(started["Location"], HTTP_HX_REQUEST="true").content.decode()
        assert fragment.lstrip().startswith('<section id="playtest-run"')

        with django_capture_on_commit_callbacks(execute=True):
            segments.segment_update(
                actor=None, segment=content["tone"], content="The bell is cracked."
            )
        publish = admin.get("/releases/publish/").content.decode()
        assert "Playtest the change" in publish
        with django_capture_on_commit_callbacks(execute=True):
            started = admin.post(
                "/playtests/",
                {"scenarios": ["calm bell"], "release": "working", "compare_to": "production"},
            )
        page = admin.get(started["Location"]).content.decode()
        # Both replies side by side, with the word diff, and the failing expectation.
        assert (
            "Aye. <del>All calm</del>." in page and "Aye. <ins>The bell is cracked</ins>." in page
        )
        assert "✗ reply_excludes" in page

        publish = admin.get("/releases/publish/").content.decode()
        assert "reply expectations fail" in publish
        form = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', publish))
        form.pop("csrfmiddlewaretoken", None)
        form = {k: v for k, v in form.items() if k in ("reviewed", "reviewed_at", "playtest")}
        refused = admin.post("/releases/publish/", {"label": "production", **form})
        assert refused.status_code == 400
        assert "Reply expectations fail in playtest" in refused.content.decode()
        assert ReleaseLabel.objects.get(name="production").release.name == "r-one"
        with django_capture_on_commit_callbacks(execute=True):
            done = admin.post(
                "/releases/publish/", {"label": "production", "confirm": "on", **form}
            )
        assert done.status_code == 302
        run = PlaytestRun.objects.get(pk=form["playtest"])
        assert run.confirmed_at is not None and run.confirmed_by


def test_a_scenarios_page_playtests_it_against_what_is_live(  # type: ignore[no-untyped-def]
    author: Client, content: Any, django_capture_on_commit_callbacks
) -> None:
    scenario = calm_bell()
    services.release_create(actor=None, name="r-one", labels=["production"])
    with fake_llm() as llm, endpoint(llm.url):
        llm.respond = answer
        page = author.get(f"/scenarios/{scenario.pk}/").content.decode()
        form = page[page.index(f'action="/scenarios/{scenario.pk}/playtest/"') :]
        assert '<option value="production" selected>' in form  # before: what is live
        assert '<option value="working" selected>' in form  # after: the working copy
        # A refusal goes back to the scenario, saying why; no run is made.
        with override_settings(PLAYTEST_MAX_CALLS=0):
            refused = author.post(
                f"/scenarios/{scenario.pk}/playtest/", {"release": "working"}, follow=True
            )
        assert "PLAYTEST_MAX_CALLS=0" in refused.content.decode()
        assert refused.redirect_chain[-1][0] == f"/scenarios/{scenario.pk}/"
        assert not PlaytestRun.objects.exists()
        with django_capture_on_commit_callbacks(execute=True):
            started = author.post(
                f"/scenarios/{scenario.pk}/playtest/",
                {"release": "working", "compare_to": "production"},
            )
        assert started.status_code == 302
        run = PlaytestRun.objects.get()
        assert started["Location"] == f"/playtests/{run.pk}/"
        assert (run.release, run.compare_to) == ("working", "production")
        assert [item["scenario"] for item in run.plan] == ["calm bell", "calm bell"]
        assert "Aye. All calm." in author.get(started["Location"]).content.decode()


def test_the_playtest_button_is_disabled_saying_how_to_turn_playtests_on(  # type: ignore[no-untyped-def]
    author: Client, viewer: Client, content: Any
) -> None:
    scenario = services.scenario_create(actor=None, name="calm bell", entry="drowned-bell")
    with override_settings(PLAYTEST_BASE_URL=""):
        page = author.get(f"/scenarios/{scenario.pk}/").content.decode()
        assert re.search(
            r'<button type="button" class="btn" disabled aria-describedby="playtest-off">', page
        )
        assert "Playtests are off: set PLAYTEST_BASE_URL" in page
        refused = author.post(
            f"/scenarios/{scenario.pk}/playtest/", {"release": "working"}, follow=True
        )
        assert "Playtests are off" in refused.content.decode()
        assert not PlaytestRun.objects.exists()
    with fake_llm() as llm, endpoint(llm.url):
        page = viewer.get(f"/scenarios/{scenario.pk}/").content.decode()
        assert "Playtesting needs the author role." in page
        assert viewer.post(f"/scenarios/{scenario.pk}/playtest/").status_code == 403
