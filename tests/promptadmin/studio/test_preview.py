"""The preview: any entry, turn, NPC set, budget and state, with every cut explained."""

from __future__ import annotations

import re
from html import unescape
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urlencode

import pytest
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from promptadmin.content.models import NPC, Entry, Segment
from promptadmin.content.services import catalog, segments
from promptadmin.releases import services
from promptadmin.releases.models import Scenario

pytestmark = pytest.mark.usefixtures("demo")

URL = reverse("studio:preview")
BELL = {"entry": "drowned-bell", "first_turn": "on", "token_budget": 8000, "npc_budget": 600}


def preview(client: Client, **params: Any) -> Any:
    response = client.get(URL, {**BELL, **params})
    assert response.status_code == 200
    return response


def opened(client: Client, part: str, **params: Any) -> Any:
    """What opening a folded part of the preview (``part``) loads into it."""
    response = client.get(URL, {**BELL, **params, "show": part}, headers={"HX-Request": "true"})
    assert response.status_code == 200
    return response


def test_without_an_entry_the_page_asks_for_one(viewer: Client) -> None:
    response = viewer.get(URL)
    assert response.context["preview"] is None
    assert "Choose an entry" in response.content.decode()


def test_the_prompt_is_shown_layer_by_layer_with_links_to_each_segment(viewer: Client) -> None:
    response = preview(viewer)
    page = response.context["preview"]
    assert [block.scope for block in page.blocks] == [
        "core",
        "ruleset",
        "world",
        "entry",
        "entry_start",
    ]
    assert "".join(block.text + "\n\n" for block in page.blocks).rstrip("\n") == page.prompt
    assert page.steps == []
    html = response.content.decode()
    assert '<div class="block layer-world">' in html
    old_wars = Segment.objects.get(import_key="w-iron-history")
    assert f'<a class="chip" href="/segments/{old_wars.pk}/"' in html
    assert "Nothing was cut" in html


def test_lowering_the_budget_explains_every_cut_in_plain_words(viewer: Client) -> None:
    assert preview(viewer, token_budget=500).context["preview"].steps == []
    response = preview(viewer, token_budget=250)
    page = response.context["preview"]
    opening = Segment.objects.get(import_key="es-bell-open")
    first, *later = [step.reason for step in page.steps]
    assert first.startswith(f"entry_start segment #{opening.pk} 'Opening' dropped: prompt ")
    assert first.endswith(" tokens over budget")
    assert later and later[0].endswith(f"after dropping entry_start segment #{opening.pk}")
    assert page.meta.tokens <= 250
    assert page.steps[0].segment_url == f"/segments/{opening.pk}/"
    # What was seen (5): the page shows the cut in an author's words, not the engineers'
    # (the steps, when the trace is opened).
    html = response.content.decode()
    steps = opened(viewer, "steps", token_budget=250).content.decode()
    words = page.steps[0].explanation
    assert words.startswith(f"Entry start segment #{opening.pk} 'Opening' (")
    assert "left out" in words and "250-token budget" in words
    assert escape(f"{words}.") in steps
    assert escape(f"{first}.") not in html + steps
    assert "Block:" not in html + steps


def test_npc_tier_changes_are_shown(viewer: Client) -> None:
    response = viewer.get(
        URL,
        [
            *BELL.items(),
            ("npc_budget", 60),
            ("npc", "marta-vell"),
            ("tier", 2),
            ("npc", "old-cobb"),
            ("tier", 1),
        ],
    )
    page = response.context["preview"]
    lowered = [s.reason for s in page.steps if s.action == "tier_lowered"]
    assert lowered and lowered[0].startswith("NPC 'Old Cobb' lowered from tier 1 to tier 0")
    assert [(n["npc"], n["requested_tier"]) for n in page.npcs] == [
        ("marta-vell", 2),
        ("old-cobb", 1),
    ]
    assert "asked 1, used <strong>0</strong>" in response.content.decode()


def test_npcs_keep_the_priority_order_given(viewer: Client) -> None:
    response = viewer.get(
        URL,
        [
            *BELL.items(),
            ("npc", "old-cobb"),
            ("tier", 0),
            ("npc", ""),
            ("tier", 0),
            ("npc", "marta-vell"),
            ("tier", 1),
        ],
    )
    assert [n["npc"] for n in response.context["preview"].npcs] == ["old-cobb", "marta-vell"]
    rows = response.context["form"].npc_rows()
    assert [row["slug"] for row in rows] == ["old-cobb", "marta-vell", ""]


def test_a_later_turn_skips_the_opening(viewer: Client) -> None:
    response = viewer.get(URL, {key: value for key, value in BELL.items() if key != "first_turn"})
    page = response.context["preview"]
    assert "entry_start" not in [block.scope for block in page.blocks]
    opening = next(s for s in page.segments if s["scope"] == "entry_start")
    assert opening["fate"] == "skipped"


def test_dynamic_state_takes_text_or_a_json_object(viewer: Client) -> None:
    page = preview(
        viewer, game_state='{"tide": "low", "bells": 3}', input="I ring the bell."
    ).context["preview"]
    assert "bells: 3\ntide: low" in page.prompt
    assert "I ring the bell." in page.prompt


def test_inactive_segments_are_listed_but_not_assembled(viewer: Client) -> None:
    magic = Segment.objects.get(import_key="w-iron-magic")
    segments.segment_update(actor=None, segment=magic, active=False)
    page = preview(viewer).context["preview"]
    assert {s["id"]: s["fate"] for s in page.segments}[magic.pk] == "inactive"
    assert magic.content not in page.prompt


def test_a_budget_the_core_alone_exceeds_is_flagged(viewer: Client) -> None:
    response = preview(viewer, token_budget=20)
    assert response.context["preview"].meta.over_budget
    assert "Over budget: the core and ruleset layers alone do not fit" in response.content.decode()


def test_changing_a_setting_in_place_returns_only_the_result(viewer: Client) -> None:
    response = viewer.get(URL, {**BELL, "token_budget": 300}, headers={"HX-Request": "true"})
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="preview-result"')
    assert "<form" not in html
    assert "of 300 tokens" in html


def test_the_preview_is_a_shareable_address(viewer: Client, author: Client) -> None:
    params = {**BELL, "token_budget": 300, "input": "Hello"}
    first = viewer.get(URL, params)
    second = author.get(URL, params)
    assert first.context["preview"].prompt == second.context["preview"].prompt
    form = second.context["form"]
    assert (form["token_budget"].value(), form["input"].value()) == ("300", "Hello")


@pytest.mark.parametrize(
    ("params", "problem"),
    [
        ({"entry": ""}, ">Entry</a>: Choose an entry to preview."),
        ({"entry": "atlantis"}, ">Entry</a>: No entry with slug &#x27;atlantis&#x27;."),
        (
            {"token_budget": -1},
            ">Token budget</a>: Ensure this value is greater than or equal to 0",
        ),
        ({"npc_budget": "lots"}, ">NPC budget</a>: Enter a whole number."),
        ({"game_state": '{"tide": }'}, ">Game state</a>: Game state is not valid JSON: Expecting"),
        ({"player": '{"name": "Ann"'}, ">Player</a>: Player is not valid JSON: Expecting"),
        ({"npc": "ghost", "tier": "0"}, "NPCs: Unknown NPC slugs: ghost."),
        ({"npc": "old-cobb", "tier": "-2"}, "NPCs: old-cobb: Expected an integer tier from 0"),
        ({"npc": "old-cobb", "tier": "two"}, "NPCs: old-cobb: Expected an integer tier from 0"),
        ({"token_budget": 2**31}, ">Token budget</a>: Ensure this value is less than or equal"),
    ],
)
def test_bad_settings_are_named_instead_of_a_preview(
    viewer: Client, params: dict, problem: str
) -> None:
    response = viewer.get(URL, {**BELL, **params})
    assert response.context["preview"] is None
    html = response.content.decode()
    assert "Fix these to see the preview" in html
    assert problem in html


def test_an_npc_listed_twice_is_named(viewer: Client) -> None:
    response = viewer.get(
        URL, [*BELL.items(), ("npc", "kestrel"), ("tier", 0), ("npc", "kestrel"), ("tier", 1)]
    )
    assert "Each NPC may be listed once; repeated: kestrel." in response.content.decode()


def test_a_link_naming_only_the_entry_previews_at_the_default_budgets(viewer: Client) -> None:
    response = viewer.get(URL, {"entry": "drowned-bell"})
    page = response.context["preview"]
    assert (page.meta.token_budget, page.meta.npc_budget) == (8000, 600)
    assert response.context["form"]["token_budget"].value() == "8000"
    assert page.blocks[-1].scope != "entry_start"  # a later turn unless asked


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('{"hp": NaN}', "Game state is not valid JSON: NaN is not a JSON number"),
        ('{"hp": 1e400}', "Game state is not valid JSON: the number 1e400"),
        ('{"name": "\\ud800"}', "At name: text may not contain lone surrogates"),
        ('{"n": 18446744073709551616}', "At n: integers must fit in 64 bits"),
        ("{" + '"a": {' * 2000 + "}" * 2001, "Game state nests objects or arrays too deeply"),
    ],
)
def test_a_shared_link_with_state_that_cannot_be_used_names_the_field(
    viewer: Client, value: str, message: str
) -> None:
    response = preview(viewer, game_state=value)
    assert response.context["preview"] is None
    assert any(error.startswith(message) for error in response.context["form"].errors["game_state"])


# While typing (what was seen, 6): the last good preview stays, the bad field says why


def htmx_preview(client: Client, **changes: Any) -> Any:
    return client.get(URL, {**BELL, **changes}, headers={"HX-Request": "true"})


@pytest.mark.parametrize(
    ("changes", "box", "message"),
    [
        ({"game_state": '{"weather": "fo'}, "errors-game_state", "Game state is not valid JSON"),
        ({"token_budget": "-5"}, "errors-token_budget", "greater than or equal to 0"),
    ],
)
def test_an_invalid_setting_keeps_the_last_preview_and_marks_only_its_field(
    viewer: Client, changes: dict, box: str, message: str
) -> None:
    response = htmx_preview(viewer, **changes)
    assert response["HX-Reswap"] == "none"
    html = response.content.decode()
    assert 'id="preview-result"' not in html
    start = html.index(f'<div id="{box}"')
    assert message in html[start : html.index("</div>", start)]
    # The other fields' boxes are cleared, and the notice says the preview is out of date.
    cleared = '<div id="errors-npc_budget" class="field-errors" data-errors-for="id_npc_budget"'
    assert f'{cleared} hx-swap-oob="true"></div>' in html
    assert "Out of date: fix" in html


def test_an_update_announces_a_summary_not_the_prompt(viewer: Client) -> None:
    html = htmx_preview(viewer, token_budget=250).content.decode()
    status = html[html.index('<p id="preview-status"') :]
    status = status[: status.index("</p>")]
    assert "Preview updated: " in status and "of 250 tokens" in status
    assert 'aria-live="polite"' not in html.split('id="preview-result"')[1].split(">")[0]


def test_a_link_naming_only_the_entry_starts_from_its_cast(viewer: Client) -> None:
    entry = Entry.objects.get(slug="drowned-bell")
    cobb, marta = NPC.objects.get(slug="old-cobb"), NPC.objects.get(slug="marta-vell")
    catalog.entry_update(
        actor=None,
        entry=entry,
        cast=[catalog.CastMember(npc=cobb, tier=1), catalog.CastMember(npc=marta, tier=0)],
    )
    response = viewer.get(URL, {"entry": "drowned-bell"})
    page = response.context["preview"]
    assert [(n["npc"], n["requested_tier"]) for n in page.npcs] == [
        ("old-cobb", 1),
        ("marta-vell", 0),
    ]


# Save as scenario: the preview shown, kept under a name with expectations


def save_scenario(client: Client, query: dict[str, Any], **fields: Any) -> Any:
    body = {f"scenario-{name}": value for name, value in fields.items()}
    return client.post(f"{URL}?{urlencode(query, doseq=True)}", body)


def test_an_author_saves_the_preview_as_a_scenario_with_expectations(
    author: Client, viewer: Client
) -> None:
    opening = Segment.objects.get(import_key="es-bell-open")
    query = {
        **BELL,
        "token_budget": 250,
        "npc": ["marta-vell"],
        "tier": ["2"],
        "input": "I ring the bell.",
    }
    assert "Save as scenario" in author.get(URL, query).content.decode()
    response = save_scenario(author, query, name="bell, tight", fits="on", keeps_segment=opening.pk)
    assert response.status_code == 302
    assert response["Location"] == f"{URL}?{urlencode(query, doseq=True)}"

    scenario = Scenario.objects.get(name="bell, tight")
    assert (scenario.entry, scenario.first_turn, scenario.token_budget, scenario.npc_budget) == (
        "drowned-bell",
        True,
        250,
        600,
    )
    assert scenario.npcs == [{"npc": "marta-vell", "tier": 2}]
    assert scenario.state == {"input": "I ring the bell."}
    assert scenario.expectations == [
        {"kind": "fits"},
        {"kind": "keeps_segment", "segment": opening.pk},
    ]
    page = author.get(response["Location"]).content.decode()
    assert "Saved the scenario &#x27;bell, tight&#x27;" in page
    # The impact report assembles it and names the expectation the prompt fails.
    impact = viewer.get(reverse("studio:release_publish")).content.decode()
    assert "bell, tight" in impact and f"keeps segment #{opening.pk}" in impact


def test_viewers_neither_see_nor_use_save_as_scenario(viewer: Client) -> None:
    assert "Save as scenario" not in preview(viewer).content.decode()
    response = save_scenario(viewer, BELL, name="mine")
    assert response.status_code == 403
    assert not Scenario.objects.exists()


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"name": ""}, "name", "Name the scenario."),
        ({"name": "x", "keeps_segment": "0"}, "keeps_segment", "greater than or equal to 1"),
        ({"name": "x", "max_tokens": "lots"}, "max_tokens", "Enter a whole number."),
        # Past what the form checks, the scenario service's word, at the same field.
        ({"name": "x", "keeps_segment": str(2**63)}, "keeps_segment", "Expected a whole number"),
        ({"name": "taken"}, "name", "There is already a scenario named 'taken'."),
    ],
)
def test_a_bad_expectation_or_a_taken_name_is_named_at_its_field(
    author: Client, fields: dict[str, str], field: str, message: str
) -> None:
    services.scenario_create(actor=None, name="taken", entry="drowned-bell")
    response = save_scenario(author, BELL, **fields)
    assert response.status_code == 400
    errors = response.context["scenario_form"].errors
    assert list(errors) == [field]
    assert any(message in error for error in errors[field])
    html = response.content.decode()
    assert escape(message) in html and 'id="save-scenario"' in html
    assert Scenario.objects.count() == 1


class Shown(HTMLParser):
    """What a reader of the preview sees of its prompt: the blocks' texts, the separator
    the page joins them with, and the plain-text box (when sent)."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.blocks: list[str] = []
        self.separator: str | None = None
        self.plain: str | None = None
        self._into: str | None = None
        self._first = False
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if "data-separator" in found:
            self.separator = found["data-separator"]
        if tag == "pre" and found.get("class") == "block-text":
            self.blocks.append("")
            self._into = "block"
            self._first = True
        if tag == "textarea" and "plain text" in (found.get("aria-label") or ""):
            self.plain = ""
            self._into = "plain"
            self._first = True

    def handle_endtag(self, tag: str) -> None:
        if tag in ("pre", "textarea"):
            self._into = None

    def handle_data(self, data: str) -> None:
        if self._first:
            # A browser drops one newline right after <pre> or <textarea> (HTML's parsing
            # rules; html.parser keeps it).
            data, self._first = data.removeprefix("\n"), False
        if self._into == "block":
            self.blocks[-1] += data
        elif self._into == "plain":
            self.plain = (self.plain or "") + data


def test_the_prompt_is_sent_once_and_its_blocks_join_into_it_exactly(viewer: Client) -> None:
    # What was seen (issue 22): the prompt went out twice, as blocks and as plain text.
    response = preview(viewer, input="I ring the bell.\n\nTwice.")
    prompt = response.context["preview"].prompt
    html = response.content.decode()
    shown = Shown(html)
    assert shown.plain is None
    old_wars = Segment.objects.get(import_key="w-iron-history").content
    assert old_wars in prompt and html.count(escape(old_wars)) == 1
    # What studio.js does when "Plain text" is opened: the blocks, joined as the page says.
    assert shown.separator is not None and shown.separator.join(shown.blocks) == prompt
    # Without JavaScript, the link in its place sends the page with the text in the box.
    link = re.search(r'<a href="([^"]*show=prompt[^"]*)#prompt-title">', html)
    assert link
    with_text = viewer.get(unescape(link.group(1)))
    assert Shown(with_text.content.decode()).plain == prompt
    assert 'class="plain-prompt" open' in with_text.content.decode()


def test_every_segment_considered_and_the_steps_are_sent_when_opened(viewer: Client) -> None:
    response = preview(viewer, token_budget=250)
    page = response.context["preview"]
    html = response.content.decode()
    assert '<tr class="row-' not in html and '<li class="step ' not in html
    assert f"<summary>{len(page.segments)} segments: " in html
    assert f"{page.fate_counts}</summary>" in html
    assert 'hx-trigger="toggle once"' in html
    table = opened(viewer, "segments", token_budget=250).content.decode()
    assert "<form" not in table and "<html" not in table
    assert table.count('<tr class="row-') == len(page.segments)
    for segment in page.segments:
        assert f'<a href="{segment["url"]}">#{segment["id"]}</a>' in table
    steps = opened(viewer, "steps", token_budget=250).content.decode()
    assert steps.count('<li class="step ') == len(page.steps) > 0
    # Without JavaScript, the link opens the whole page with the part unfolded.
    plain = viewer.get(URL, {**BELL, "token_budget": 250, "show": "segments"}).content.decode()
    assert 'data-testid="considered" open' in plain
    assert plain.count('<tr class="row-') == len(page.segments)


def test_a_part_opened_after_the_content_changed_says_so(
    viewer: Client, django_capture_on_commit_callbacks: Any
) -> None:
    working = {"release": "working"}
    shown = preview(viewer, **working).context["preview"].meta.content_hash
    now = opened(viewer, "segments", hash=shown, **working).content.decode()
    assert "has changed since" not in now
    opening = Segment.objects.get(import_key="es-bell-open")
    with django_capture_on_commit_callbacks(execute=True):  # as a committed edit does
        segments.segment_update(actor=None, segment=opening, content="A new opening.")
    later = opened(viewer, "segments", hash=shown, **working).content.decode()
    assert "The content has changed since this preview was assembled" in later


def test_a_part_of_a_preview_that_no_longer_assembles_sends_nothing(viewer: Client) -> None:
    response = viewer.get(
        URL, {**BELL, "token_budget": -5, "show": "steps"}, headers={"HX-Request": "true"}
    )
    assert response.status_code == 204
