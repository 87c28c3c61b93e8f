"""The impact report says what the preview says (issue 21, item 3).

What was seen: for a scenario with a budget of 700, an NPC budget of 60, Oren at tier 2
and Lysa at tier 1, the first publish's report said "new cut — NPC 'Oren Flint' (25
tokens) left out" while the preview showed Oren at tier 1, and its "before" column showed
raw errors ("No entry with slug 'cinder-gate'.; Unknown NPC slugs: …").
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlencode

import pytest
from django.core.cache import cache
from django.test import Client
from django.utils.html import escape

from promptadmin.content.models import Segment
from promptadmin.content.services import segments
from promptadmin.releases import selectors, services, serving
from tests.factories import make_cinder_gate

pytestmark = pytest.mark.django_db

SCENARIO = "Gate at night"


@pytest.fixture(autouse=True)
def fresh_process() -> None:
    serving._loaded.clear()


@pytest.fixture
def scene() -> dict[str, Any]:
    cache.clear()
    scene = make_cinder_gate()
    params = scene["params"]
    services.scenario_create(
        actor=None,
        name=SCENARIO,
        entry=params["entry"],
        npcs=[{"npc": slug, "tier": tier} for slug, tier in scene["cast"]],
        state={"input": params["input"]},
        token_budget=params["token_budget"],
        npc_budget=params["npc_budget"],
    )
    return scene


def preview_words(client: Client, scene: dict[str, Any]) -> list[str]:
    """What the preview says the prompt loses, as the page shows it."""
    query = [*scene["params"].items(), ("release", "working")]
    for slug, tier in scene["cast"]:
        query += [("npc", slug), ("tier", tier)]
    response = client.get(f"/preview/?{urlencode(query)}")
    assert response.status_code == 200
    words = [lost.explanation for lost in response.context["preview"].outcome]
    html = response.content.decode()
    assert all(escape(f"{said}.") in html for said in words)
    return words


def saved(report: dict[str, Any]) -> dict[str, Any]:
    return next(s for s in report["scenarios"] if s["scenario"] == SCENARIO)


def test_the_first_publish_says_what_the_preview_says(
    author: Client, scene: dict[str, Any]
) -> None:
    said = preview_words(author, scene)
    long_war = scene["long_war"].pk
    assert said[0] == (
        f"World segment #{long_war} 'The long war' (1201 tokens) left out: it alone is larger "
        "than the whole 700-token budget"
    )
    assert said[1].startswith("NPC 'Lysa Quill' (") and " left out: " in said[1]
    assert said[2].startswith("NPC 'Oren Flint' lowered from tier 2 to 1 (")
    assert len(said) == 3

    scenario = saved(selectors.compare_report(None, "working"))
    # The entry is new: no raw errors, and its outcome in the preview's words.
    assert scenario["new"] and scenario["error_before"] is None
    assert scenario["missing_before"] == [
        "entry 'The cinder gate'",
        "NPC 'Oren Flint'",
        "NPC 'Lysa Quill'",
    ]
    outcome = scenario["outcome_after"]
    assert [c["explanation"] for kind in outcome for c in outcome[kind]] == said
    assert sorted(scenario["cuts_added"]) == sorted(said)

    html = author.get("/releases/publish/").content.decode()
    assert "No entry with slug" not in html and "Unknown NPC slugs" not in html
    row = html[html.index(f">{SCENARIO}<") :]
    row = row[: row.index("</tr>")]
    assert "did not exist before" in row
    for words in said:
        assert escape(words) in row
    assert escape("lowered from tier 2 to 1") in row
    assert not re.search(r"Oren Flint&#x27; \(\d+ tokens\) left out", row)


def test_an_npc_lowered_further_is_a_new_cut_in_the_preview_s_words(
    author: Client, scene: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    services.release_create(actor=None, name="r-one", labels=["production"])
    past = Segment.objects.get(npc__slug="oren-flint", tier=1)
    # Oren's tier 1 no longer fits the NPC budget: he is shown at tier 0.
    with django_capture_on_commit_callbacks(execute=True):
        segments.segment_update(actor=None, segment=past, content=past.content * 6)
    said = preview_words(author, scene)
    oren = [words for words in said if "Oren Flint" in words]
    assert len(oren) == 1 and oren[0].startswith("NPC 'Oren Flint' lowered from tier 2 to 0")

    scenario = saved(selectors.compare_report("production", "working"))
    assert not scenario["new"] and scenario["missing_before"] == []
    assert scenario["cuts_added"] == oren
    assert scenario["cuts_removed"] == [
        c["explanation"] for c in scenario["outcome_before"]["lowered"]
    ]
    assert scenario["cuts_removed"][0].startswith("NPC 'Oren Flint' lowered from tier 2 to 1")


def test_the_report_shows_expectations_that_hold_beside_those_that_fail(
    author: Client, scene: dict[str, Any]
) -> None:
    """What was seen (issue 21, item 7): passing expectations were invisible in the report:
    only those that fail (or were fixed) were listed."""
    params = scene["params"]
    services.scenario_create(
        actor=None,
        name="Gate, expected",
        entry=params["entry"],
        npcs=[{"npc": slug, "tier": tier} for slug, tier in scene["cast"]],
        state={"input": params["input"]},
        token_budget=params["token_budget"],
        npc_budget=params["npc_budget"],
        expectations=[
            {"kind": "contains", "text": "cinder gate"},
            {"kind": "fits"},
            {"kind": "max_tokens", "tokens": 700},
        ],
    )
    report = selectors.compare_report(None, "working")
    scenario = next(s for s in report["scenarios"] if s["scenario"] == "Gate, expected")
    assert scenario["expectations_holding"] == ["contains 'cinder gate'", "at most 700 tokens"]
    assert [e["expectation"] for e in scenario["expectations_failing"]] == ["fits without cuts"]
    html = author.get("/releases/publish/").content.decode()
    row = html[html.index(">Gate, expected<") :]
    row = row[: row.index("</tr>")]
    assert re.search(r"holds</span> contains &#x27;cinder gate&#x27;", row)
    assert re.search(r"holds</span> at most 700 tokens", row)
    assert re.search(r"fails</span> fits without cuts", row)
