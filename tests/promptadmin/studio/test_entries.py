"""Entries: list, create, edit, and the order of their rulesets (works without JavaScript)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from promptadmin.content.models import Entry
from tests.factories import EntryFactory, NPCFactory, RulesetFactory, WorldFactory

pytestmark = pytest.mark.usefixtures("content")

RULESETS = reverse("studio:entry_rulesets", args=["drowned-bell"])


def revision() -> int:
    """The entry's revision as the page shows it, which its forms post back."""
    return Entry.objects.get(slug="drowned-bell").revision


def order() -> list[str]:
    return [r.slug for r in Entry.objects.get(slug="drowned-bell").ordered_rulesets()]


def test_the_list_shows_each_entrys_world_rulesets_and_preview(viewer: Client) -> None:
    html = viewer.get(reverse("studio:entry_list")).content.decode()
    assert (
        '<span class="chip">1. <bdi>Mystery and clues</bdi></span> '
        '<span class="chip">2. <bdi>Light combat' in html
    )
    assert "/preview/?entry=drowned-bell&amp;first_turn=on" in html


def test_the_entry_list_takes_the_same_queries_whatever_the_number_of_entries(
    viewer: Client, content: dict, django_assert_max_num_queries: Any
) -> None:
    viewer.get(reverse("studio:entry_list"))
    # session, user, role, the capped count, a page of entries, their rulesets and segments
    with django_assert_max_num_queries(7):
        viewer.get(reverse("studio:entry_list"))
    EntryFactory.create_batch(30, world=content["world"])
    with django_assert_max_num_queries(7):
        viewer.get(reverse("studio:entry_list"))


def test_the_entry_page_links_to_its_segments_and_its_preview(viewer: Client) -> None:
    html = viewer.get(reverse("studio:entry_edit", args=["drowned-bell"])).content.decode()
    assert 'href="/segments/?object=entry%3Adrowned-bell"' in html
    assert 'href="/preview/?entry=drowned-bell&amp;first_turn=on"' in html


def test_an_author_creates_an_entry_with_rulesets(author: Client, content: dict) -> None:
    response = author.post(
        reverse("studio:entry_create"),
        {
            "name": "Salvage War",
            "slug": "salvage-war",
            "world": "iron-coast",
            "rulesets": ["combat-lite", "mystery"],
        },
    )
    assert response["Location"] == "/entries/salvage-war/"
    entry = Entry.objects.get(slug="salvage-war")
    assert entry.world == content["world"]
    assert {r.slug for r in entry.ordered_rulesets()} == {"combat-lite", "mystery"}


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"world": ""}, "world", "This field is required."),
        ({"world": "atlantis"}, "world", "No world is called 'atlantis'"),
        ({"slug": "drowned-bell"}, "slug", "Entry with this Slug already exists."),
        ({"rulesets": ["nope"]}, "rulesets", "Select a valid choice."),
    ],
)
def test_the_entry_form_names_what_is_wrong(
    author: Client, data: dict, field: str, message: str
) -> None:
    base = {"name": "New", "slug": "new-entry", "world": "iron-coast"}
    response = author.post(reverse("studio:entry_create"), {**base, **data})
    errors = response.context["form"].errors[field]
    assert any(error.startswith(message) for error in errors), errors


def test_an_author_moves_an_entry_to_another_world(author: Client) -> None:
    WorldFactory(slug="verdant-reach")
    author.post(
        reverse("studio:entry_edit", args=["drowned-bell"]),
        {
            "name": "The Drowned Bell",
            "slug": "drowned-bell",
            "world": "verdant-reach",
            "expected_revision": revision(),
        },
    )
    assert Entry.objects.get(slug="drowned-bell").world.slug == "verdant-reach"
    assert order() == ["mystery", "combat-lite"]


def test_up_and_down_buttons_reorder_without_javascript(author: Client) -> None:
    response = author.post(RULESETS, {"expected_revision": revision(), "action": "down:mystery"})
    assert response["Location"] == "/entries/drowned-bell/"
    assert order() == ["combat-lite", "mystery"]
    author.post(RULESETS, {"expected_revision": revision(), "action": "up:mystery"})
    assert order() == ["mystery", "combat-lite"]


def test_moving_the_first_ruleset_up_changes_nothing(author: Client) -> None:
    author.post(RULESETS, {"expected_revision": revision(), "action": "up:mystery"})
    assert order() == ["mystery", "combat-lite"]


def test_rulesets_are_added_at_the_end_and_removed(author: Client) -> None:
    RulesetFactory(slug="narrative-core")
    author.post(
        RULESETS, {"expected_revision": revision(), "action": "add", "ruleset": "narrative-core"}
    )
    assert order() == ["mystery", "combat-lite", "narrative-core"]
    author.post(RULESETS, {"expected_revision": revision(), "action": "remove:mystery"})
    assert order() == ["combat-lite", "narrative-core"]


def test_with_htmx_the_ruleset_list_is_swapped_in_place(author: Client) -> None:
    response = author.post(
        RULESETS,
        {"expected_revision": revision(), "action": "down:mystery"},
        headers={"HX-Request": "true"},
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="entry-rulesets"')
    assert html.index("Light combat") < html.index("Mystery and clues")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"action": "add", "ruleset": "mystery"}, "A ruleset can appear once per entry"),
        ({"action": "add", "ruleset": ""}, "Choose a ruleset to add."),
        ({"action": "add", "ruleset": "\x00"}, "Choose a ruleset to add."),
        ({"action": "add", "ruleset": "mystery\x00"}, "Choose a ruleset to add."),
        ({"action": "up:nope"}, "Ruleset &#x27;nope&#x27; is no longer part of this entry."),
        ({"action": "sideways"}, "Use the buttons next to a ruleset."),
    ],
)
def test_ruleset_changes_that_cannot_be_made_are_explained(
    author: Client, data: dict, message: str
) -> None:
    response = author.post(
        RULESETS, {**data, "expected_revision": revision()}, headers={"HX-Request": "true"}
    )
    assert message in response.content.decode()
    assert order() == ["mystery", "combat-lite"]


def test_the_entry_edit_form_names_what_is_wrong(author: Client) -> None:
    EntryFactory(slug="salvage-war", world=Entry.objects.get(slug="drowned-bell").world)
    response = author.post(
        reverse("studio:entry_edit", args=["drowned-bell"]),
        {"name": "", "slug": "salvage-war", "world": "iron-coast", "expected_revision": revision()},
    )
    assert response.context["form"].errors == {"name": ["This field is required."]}
    response = author.post(
        reverse("studio:entry_edit", args=["drowned-bell"]),
        {
            "name": "Bell",
            "slug": "salvage-war",
            "world": "iron-coast",
            "expected_revision": revision(),
        },
    )
    assert response.context["form"].errors == {"slug": ["Entry with this Slug already exists."]}
    assert Entry.objects.filter(slug="drowned-bell").exists()


def test_a_ruleset_move_from_an_older_copy_changes_nothing(author: Client) -> None:
    stale = revision()
    author.post(RULESETS, {"expected_revision": stale, "action": "down:mystery"})
    response = author.post(
        RULESETS,
        {"expected_revision": stale, "action": "remove:mystery"},
        headers={"HX-Request": "true"},
    )
    assert "Someone changed this entry after you opened it" in response.content.decode()
    assert order() == ["combat-lite", "mystery"]


# The cast

CAST = reverse("studio:entry_cast", args=["drowned-bell"])


def cast() -> list[tuple[str, int]]:
    entry = Entry.objects.get(slug="drowned-bell")
    return [(link.npc.slug, link.tier) for link in entry.ordered_cast()]


def test_an_author_builds_the_cast_in_priority_order_with_usual_tiers(author: Client) -> None:
    NPCFactory(slug="cobb", name="Cobb")
    author.post(CAST, {"expected_revision": revision(), "action": "add", "npc": "marta-vell"})
    author.post(CAST, {"expected_revision": revision(), "action": "add", "npc": "cobb"})
    assert cast() == [("marta-vell", 0), ("cobb", 0)]
    author.post(
        CAST,
        {
            "expected_revision": revision(),
            "action": "up:cobb",
            "tier_marta-vell": "1",
            "tier_cobb": "2",
        },
    )
    assert cast() == [("cobb", 2), ("marta-vell", 1)]
    page = author.get(reverse("studio:entry_edit", args=["drowned-bell"])).content.decode()
    assert page.index("Cobb") < page.index("Marta")


def test_a_bad_cast_tier_is_explained_and_nothing_changes(author: Client) -> None:
    author.post(CAST, {"expected_revision": revision(), "action": "add", "npc": "marta-vell"})
    response = author.post(
        CAST,
        {"expected_revision": revision(), "action": "save", "tier_marta-vell": "-5"},
        headers={"HX-Request": "true"},
    )
    assert "is a whole number from 0 to 32767" in response.content.decode()
    assert cast() == [("marta-vell", 0)]
