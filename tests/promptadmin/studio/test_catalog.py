"""Worlds, rulesets and NPCs: list, create, edit, delete, through the services."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from promptadmin.content.models import NPC, Ruleset, World
from promptadmin.content.services import catalog
from tests.factories import WorldFactory

pytestmark = pytest.mark.usefixtures("content")


@pytest.mark.parametrize(
    ("kind", "model", "slug"),
    [("world", World, "iron-coast"), ("ruleset", Ruleset, "mystery"), ("npc", NPC, "marta-vell")],
)
def test_each_kind_is_listed_with_its_use(viewer: Client, kind: str, model: Any, slug: str) -> None:
    response = viewer.get(reverse(f"studio:{kind}_list"))
    html = response.content.decode()
    assert f'href="/{kind}s/{slug}/"' in html
    assert f"?object={kind}:{slug}" in html
    assert [obj.slug for obj in response.context["objects"]] == list(
        model.objects.order_by("name", "slug").values_list("slug", flat=True)
    )


def test_the_world_list_takes_the_same_queries_whatever_the_number_of_worlds(
    viewer: Client, django_assert_max_num_queries: Any
) -> None:
    viewer.get(reverse("studio:world_list"))
    # session, user, role, the capped count, a page of worlds, their segments and entries
    with django_assert_max_num_queries(7):
        viewer.get(reverse("studio:world_list"))
    WorldFactory.create_batch(30)
    with django_assert_max_num_queries(7):
        viewer.get(reverse("studio:world_list"))


def test_an_author_creates_a_world(author: Client) -> None:
    response = author.post(
        reverse("studio:world_create"),
        {"name": "The Verdant Reach", "slug": "verdant-reach", "description": "Green."},
    )
    assert response["Location"] == "/worlds/verdant-reach/"
    world = World.objects.get(slug="verdant-reach")
    assert world.history.first().history_user.username == "author-person"


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"slug": "Iron Coast"}, "slug", "Use lowercase letters, digits"),
        ({"slug": "iron-coast"}, "slug", "World with this Slug already exists."),
        ({"slug": ""}, "slug", "This field is required."),
        ({"name": ""}, "name", "This field is required."),
    ],
)
def test_the_world_form_names_what_is_wrong(
    author: Client, data: dict, field: str, message: str
) -> None:
    response = author.post(
        reverse("studio:world_create"), {"name": "New", "slug": "new-world", **data}
    )
    assert response.status_code == 200
    errors = response.context["form"].errors[field]
    assert any(error.startswith(message) for error in errors), errors
    assert not World.objects.filter(name="New").exists()


def test_an_author_renames_an_npc_and_its_slug(author: Client, content: dict) -> None:
    response = author.post(
        reverse("studio:npc_edit", args=["marta-vell"]),
        {
            "name": "Marta the Harbourmaster",
            "slug": "marta",
            "description": "",
            "expected_revision": 1,
        },
    )
    assert response["Location"] == "/npcs/marta/"
    content["npc"].refresh_from_db()
    assert (content["npc"].slug, content["npc"].name) == ("marta", "Marta the Harbourmaster")


def test_an_edit_with_a_taken_slug_is_refused(author: Client) -> None:
    response = author.post(
        reverse("studio:ruleset_edit", args=["mystery"]),
        {"name": "Mystery", "slug": "combat-lite", "description": "", "expected_revision": 1},
    )
    assert response.context["form"].errors["slug"] == ["Ruleset with this Slug already exists."]


def test_the_edit_page_lists_the_segments_and_entries_using_it(
    viewer: Client, content: dict
) -> None:
    response = viewer.get(reverse("studio:world_edit", args=["iron-coast"]))
    assert list(response.context["segments"]) == [content["tone"]]
    assert list(response.context["entries"]) == [content["entry"]]


def test_an_object_in_use_cannot_be_deleted_and_the_page_says_why(author: Client) -> None:
    response = author.post(
        reverse("studio:world_delete", args=["iron-coast"]), {"expected_revision": 1}, follow=True
    )
    assert World.objects.filter(slug="iron-coast").exists()
    html = response.content.decode()
    assert "World &#x27;iron-coast&#x27; is still used by 1 entries, 1 segments" in html


def test_an_unused_object_is_deleted(author: Client) -> None:
    WorldFactory(slug="empty-world")
    response = author.post(
        reverse("studio:world_delete", args=["empty-world"]), {"expected_revision": 1}
    )
    assert response["Location"] == reverse("studio:world_list")
    assert not World.objects.filter(slug="empty-world").exists()


# Versioned forms (what was seen, 10): two authors open the same world, both save


def edit(kind: str, slug: str) -> str:
    return reverse(f"studio:{kind}_edit", args=[slug])


def test_the_edit_form_carries_the_revision_it_was_loaded_at(author: Client) -> None:
    form = author.get(edit("world", "iron-coast")).context["form"]
    assert form["expected_revision"].value() == 1
    assert (
        'name="expected_revision" value="1"'
        in author.get(edit("world", "iron-coast")).content.decode()
    )


def test_a_save_from_an_older_copy_keeps_the_other_authors_change(
    author: Client, content: dict
) -> None:
    world = content["world"]
    loaded = {"name": world.name, "slug": world.slug, "description": "", "expected_revision": 1}
    author.post(edit("world", "iron-coast"), {**loaded, "name": "The Rusted Coast"})
    response = author.post(edit("world", "iron-coast"), {**loaded, "description": "Grey."})
    assert response.status_code == 302
    world.refresh_from_db()
    assert (world.name, world.description, world.revision) == ("The Rusted Coast", "Grey.", 3)


def test_a_field_both_changed_needs_a_decision_and_nothing_is_saved(
    author: Client, content: dict
) -> None:
    world = content["world"]
    loaded = {"name": world.name, "slug": world.slug, "description": "", "expected_revision": 1}
    author.post(edit("world", "iron-coast"), {**loaded, "name": "The Rusted Coast"})
    response = author.post(edit("world", "iron-coast"), {**loaded, "name": "The Wet Coast"})
    assert response.status_code == 409
    world.refresh_from_db()
    assert (world.name, world.revision) == ("The Rusted Coast", 2)
    conflict = response.context["conflict"]
    assert [(f.label, f.base, f.mine, f.theirs) for f in conflict.fields] == [
        ("Name", "The Iron Coast", "The Wet Coast", "The Rusted Coast")
    ]
    assert response.context["form"]["expected_revision"].value() == "2"
    decided = {**loaded, "name": "The Wet Coast", "expected_revision": 2, "resolve_name": "theirs"}
    assert author.post(edit("world", "iron-coast"), decided).status_code == 302
    world.refresh_from_db()
    assert (world.name, world.revision) == ("The Rusted Coast", 2)


def test_a_description_both_changed_shows_each_sides_changes_against_the_base(
    author: Client, content: dict
) -> None:
    base = "Grey cliffs.\nCold water.\nOld wrecks."
    world = catalog.catalog_update(actor=None, obj=content["world"], description=base)
    loaded = {"name": world.name, "slug": world.slug, "expected_revision": 2}
    catalog.catalog_update(actor=None, obj=world, description=base.replace("Cold", "Warm"))

    response = author.post(
        edit("world", "iron-coast"), {**loaded, "description": base.replace("Old", "New")}
    )

    assert response.status_code == 409
    page = response.content.decode()
    section = page[page.index('id="conflict"') : page.index("</section>")]
    # Like a segment's text: two diffs against revision 2, each marking only its own change.
    assert section.count('<table class="diff diff-conflict">') == 2
    yours, theirs = section.split("<h4", 2)[1:]
    assert "Your changes to revision 2" in yours and "<ins>New</ins>" in yours
    assert "<ins>Warm</ins>" not in yours
    assert "changes (revision 3)" in theirs and "<ins>Warm</ins>" in theirs
    assert "<ins>New</ins>" not in theirs
    assert "conflict-values" not in section  # no plain before / yours / theirs


@pytest.mark.parametrize("posted", [{}, {"expected_revision": 1}])
def test_a_delete_needs_the_current_revision(author: Client, posted: dict) -> None:
    world = WorldFactory(slug="empty-world")
    world = catalog.catalog_update(actor=None, obj=world, name="Renamed meanwhile")
    response = author.post(reverse("studio:world_delete", args=["empty-world"]), posted)
    assert response["Location"] == edit("world", "empty-world")
    assert World.objects.filter(slug="empty-world").exists()
