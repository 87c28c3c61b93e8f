"""Object pickers: a searchable list of matches instead of a select of thousands, and a
text box that works without JavaScript."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from promptadmin.content.models import NPC, Entry, Segment, World
from promptadmin.releases.models import Scenario
from promptadmin.releases.services import scenario_create
from promptadmin.studio.forms.common import AmbiguousObject, ObjectPicker, resolve_picked
from tests.factories import NPCFactory, WorldFactory

pytestmark = pytest.mark.usefixtures("content")

PICK = reverse("studio:object_picker")


def options(client: Client, **query: str) -> list[str]:
    html = client.get(PICK, query).content.decode()
    return [part.split('"')[0] for part in html.split('data-value="')[1:]]


def test_the_picker_lists_matches_of_the_kinds_asked_for(viewer: Client) -> None:
    NPCFactory(slug="old-mart", name="Old Mart")
    assert options(viewer, kinds="npc", field="q", q="mar") == ["npc:marta-vell", "npc:old-mart"]
    assert options(viewer, kinds="world", field="q", q="mar") == []
    assert options(viewer, kinds="world,entry", field="q", q="") == [
        "entry:drowned-bell",
        "world:iron-coast",
    ]
    # The text comes in the picker's own input, named by ``field``.
    assert options(viewer, kinds="npc", field="s4-object_search", **{"s4-object_search": "vell"})
    assert "No NPC matches" in viewer.get(PICK, {"kinds": "npc", "q": "zzz"}).content.decode()


def test_the_picker_shows_a_bounded_number_of_matches(
    viewer: Client, django_assert_max_num_queries: Any
) -> None:
    for n in range(40):
        NPCFactory(slug=f"npc-{n}", name=f"Guard {n}")
    with django_assert_max_num_queries(4):  # session, user, role, NPCs
        assert len(options(viewer, kinds="npc", q="guard")) == 12


@pytest.mark.parametrize("typed", ["\x00", "a" * 5000, "%", "_", "'", "\u202e"])
def test_the_picker_takes_any_text(viewer: Client, typed: str) -> None:
    response = viewer.get(PICK, {"kinds": "npc,bogus", "q": typed})
    assert response.status_code in (200, 400)


def test_the_segment_filter_picks_an_owner_by_its_value_or_as_typed(viewer: Client) -> None:
    for value in ("entry:drowned-bell", "The Drowned Bell", "drowned-bell", "the drowned bell"):
        response = viewer.get("/segments/", {"object_search": value})
        assert {s.entry_id for s, _url in response.context["rows"]} == {
            Entry.objects.get(slug="drowned-bell").pk
        }, value
    unknown = viewer.get("/segments/", {"object_search": "Atlantis"})
    assert "Nothing is called &#x27;Atlantis&#x27;" in unknown.content.decode()


def test_a_pick_stands_until_the_text_stops_showing_it() -> None:
    picker = ObjectPicker()
    kept = {
        "object": "world:iron-coast",
        "object_search": "\u2068The Iron Coast\u2069 (iron-coast)",
    }
    assert picker.value_from_datadict(kept, {}, "object") == "world:iron-coast"
    retyped = {"object": "world:iron-coast", "object_search": "Marta"}
    assert picker.value_from_datadict(retyped, {}, "object") == "Marta"
    assert (
        picker.value_from_datadict({"object": "npc:marta-vell"}, {}, "object") == "npc:marta-vell"
    )


def test_a_name_several_objects_share_asks_which(content: dict) -> None:
    WorldFactory(slug="marta", name="Marta Vell")
    with pytest.raises(AmbiguousObject):
        resolve_picked("Marta Vell", ("world", "npc"))
    assert resolve_picked("marta-vell", ("world", "npc")) == content["npc"]
    assert resolve_picked("Marta Vell (marta-vell)", ("world", "npc")) == content["npc"]
    assert resolve_picked("\x00", ("npc",)) is None


def test_the_editor_saves_an_owner_typed_without_javascript(author: Client) -> None:
    response = author.post(
        reverse("studio:segment_create"),
        {
            "scope": "world",
            "object_search": "The Iron Coast",
            "content": "Gulls.",
            "version": "1.0.0",
            "sort_order": 0,
            "active": "on",
        },
    )
    assert response.status_code == 302
    assert Segment.objects.get(content="Gulls.").world.slug == "iron-coast"


def test_the_cast_adds_an_npc_picked_or_typed(author: Client, content: dict) -> None:
    NPCFactory(slug="cobb", name="Cobb the Ferryman")
    url = reverse("studio:entry_cast", args=["drowned-bell"])
    entry = Entry.objects.get(slug="drowned-bell")
    author.post(
        url, {"expected_revision": entry.revision, "action": "add", "npc": "npc:marta-vell"}
    )
    entry.refresh_from_db()
    author.post(
        url,
        {"expected_revision": entry.revision, "action": "add", "npc_search": "Cobb the Ferryman"},
    )
    assert [link.npc.slug for link in entry.ordered_cast()] == ["marta-vell", "cobb"]
    page = author.get(reverse("studio:entry_edit", args=["drowned-bell"])).content.decode()
    assert 'role="combobox"' in page and '<select id="add-npc"' not in page


def test_a_bare_picker_picks_slugs_and_reads_them_back() -> None:
    picker = ObjectPicker(("world",), bare=True)
    assert picker.chosen("iron-coast", "The Iron Coast (iron-coast)") == "iron-coast"
    assert picker.chosen("iron-coast", "Verdant") == "Verdant"  # retyped: the text stands
    html = picker.render("world", "iron-coast")
    assert 'value="iron-coast"' in html and "The Iron Coast (iron-coast)" in html
    assert "bare=1" in html
    with pytest.raises(ValueError):
        ObjectPicker(("world", "npc"), bare=True)


def test_a_bare_pickers_options_hold_slugs(viewer: Client) -> None:
    assert options(viewer, kinds="npc", field="q", q="mar", bare="1") == ["marta-vell"]
    # Only a picker of one kind is bare: several kinds need the kind to tell them apart.
    assert options(viewer, kinds="npc,world", field="q", q="iron", bare="1") == ["world:iron-coast"]


def _grow(n: int) -> None:
    """``n`` more worlds, entries and NPCs (bulk: only the counts matter here)."""
    start = World.objects.count()
    worlds = World.objects.bulk_create(
        [World(slug=f"world-{start + i}", name=f"World {start + i}") for i in range(n)]
    )
    Entry.objects.bulk_create(
        [
            Entry(slug=f"entry-{start + i}", name=f"Entry {start + i}", world=worlds[i])
            for i in range(n)
        ]
    )
    NPC.objects.bulk_create(
        [NPC(slug=f"npc-{start + i}", name=f"NPC {start + i}") for i in range(n)]
    )


FORMS_OVER_BIG_TABLES = [
    "/preview/",
    "/preview/?entry=drowned-bell&npc=marta-vell&tier=1",
    "/entries/new/",
    "/entries/drowned-bell/",
]


def test_forms_choosing_from_big_tables_do_not_grow_with_them(author: Client) -> None:
    """The preview's and a scenario's entry and NPCs and an entry's world are pickers, not
    selects of every row (issue 22: the preview page was 830 KB at 2,000 NPCs and 1,000
    entries): each page's HTML and queries are the same at 10 and at 310 of each."""
    scenario = scenario_create(
        actor=None,
        name="Bell",
        entry="drowned-bell",
        first_turn=True,
        npcs=[{"npc": "marta-vell", "tier": 0}],
    )

    def measure() -> dict[str, tuple[int, int]]:
        found = {}
        for url in [*FORMS_OVER_BIG_TABLES, f"/scenarios/{scenario.pk}/"]:
            with CaptureQueriesContext(connection) as queries:
                response = author.get(url)
            assert response.status_code == 200, url
            html = response.content.decode()
            assert "<select" not in html or "entry-" not in html, url
            found[url] = (len(response.content), len(queries))
        return found

    _grow(10)
    measure()  # warm: what a page keeps in the cache (the release labels) is read once
    few = measure()
    _grow(300)
    assert measure() == few


def test_the_preview_takes_names_typed_without_javascript(viewer: Client) -> None:
    response = viewer.get(
        "/preview/",
        {"entry": "", "entry_search": "The Drowned Bell", "npc": "", "npc_search": "Marta Vell"},
    )
    form = response.context["form"]
    assert form.is_valid(), form.errors
    assert form.params().entry == "drowned-bell"
    assert [slug for slug, _tier in form.params().npcs] == ["marta-vell"]
    # A picked option, shown back with its label, stands; an unknown name is the
    # assembly's error at the entry.
    shown = viewer.get("/preview/", {"entry": "drowned-bell", "npc": "marta-vell"}).content
    assert b"The Drowned Bell (drowned-bell)" in shown and b"Marta Vell (marta-vell)" in shown
    unknown = viewer.get("/preview/", {"entry": "", "entry_search": "Atlantis"})
    assert "entry" in unknown.context["form"].errors


def test_the_entry_form_takes_a_world_typed_without_javascript(author: Client) -> None:
    response = author.post(
        reverse("studio:entry_create"),
        {"name": "Salt Road", "slug": "salt-road", "world": "", "world_search": "The Iron Coast"},
    )
    assert response.status_code == 302
    assert Entry.objects.get(slug="salt-road").world.slug == "iron-coast"


def test_a_scenario_shows_an_entry_gone_since_and_takes_a_typed_one(
    author: Client,
) -> None:
    scenario = scenario_create(actor=None, name="Gone", entry="drowned-bell", first_turn=True)
    Entry.objects.filter(slug="drowned-bell").update(slug="renamed")
    url = f"/scenarios/{scenario.pk}/"
    base = {"name": "Gone", "token_budget": 2000, "npc_budget": 400}
    base["expected_revision"] = scenario.revision
    shown = author.get(url).content.decode()  # as it is, for the author to choose another
    assert 'name="entry" value="drowned-bell"' in shown
    refused = author.post(url, {**base, "entry": "", "entry_search": "Atlantis"})
    assert "No entry is called" in refused.content.decode()
    typed = author.post(url, {**base, "entry": "", "entry_search": "The Drowned Bell"})
    assert typed.status_code == 302
    assert Scenario.objects.get(pk=scenario.pk).entry == "renamed"
