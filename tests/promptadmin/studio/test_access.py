"""Every studio page enforces the same roles as the API: viewers read, authors write."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client
from django.urls import reverse

from promptadmin.content.models import NPC, Entry, EntryRuleset, Ruleset, Segment, World

pytestmark = pytest.mark.usefixtures("content")


def content_state() -> list[list[tuple[object, ...]]]:
    """Everything a write could change, to check that a refused one changed nothing."""
    return [
        list(Segment.objects.order_by("pk").values_list("pk", "revision")),
        *(
            list(model.objects.order_by("slug").values_list("slug"))
            for model in (World, Ruleset, NPC, Entry)
        ),
        list(EntryRuleset.objects.order_by("pk").values_list("entry_id", "ruleset_id", "position")),
    ]


def segment_id() -> int:
    return Segment.objects.get(title="Tone").pk


Args = Callable[[], list[object]]

# (name, args) of every page a viewer may read.
READABLE: list[tuple[str, Args]] = [
    ("studio:dashboard", lambda: []),
    ("studio:segment_list", lambda: []),
    ("studio:segment_edit", lambda: [segment_id()]),
    ("studio:segment_history", lambda: [segment_id()]),
    ("studio:world_list", lambda: []),
    ("studio:world_edit", lambda: ["iron-coast"]),
    ("studio:ruleset_list", lambda: []),
    ("studio:ruleset_edit", lambda: ["mystery"]),
    ("studio:npc_list", lambda: []),
    ("studio:npc_edit", lambda: ["marta-vell"]),
    ("studio:entry_list", lambda: []),
    ("studio:entry_edit", lambda: ["drowned-bell"]),
    ("studio:preview", lambda: []),
    ("studio:scenario_list", lambda: []),
]

# (name, args) of every URL that changes something, or whose page only exists to change.
WRITES: list[tuple[str, Args]] = [
    ("studio:segment_create", lambda: []),
    ("studio:segment_check", lambda: []),
    ("studio:segment_edit", lambda: [segment_id()]),
    ("studio:segment_delete", lambda: [segment_id()]),
    ("studio:segment_history", lambda: [segment_id()]),
    ("studio:world_create", lambda: []),
    ("studio:world_edit", lambda: ["iron-coast"]),
    ("studio:world_delete", lambda: ["iron-coast"]),
    ("studio:ruleset_create", lambda: []),
    ("studio:ruleset_edit", lambda: ["mystery"]),
    ("studio:ruleset_delete", lambda: ["mystery"]),
    ("studio:npc_create", lambda: []),
    ("studio:npc_edit", lambda: ["marta-vell"]),
    ("studio:npc_delete", lambda: ["marta-vell"]),
    ("studio:entry_create", lambda: []),
    ("studio:entry_edit", lambda: ["drowned-bell"]),
    ("studio:entry_rulesets", lambda: ["drowned-bell"]),
    ("studio:entry_delete", lambda: ["drowned-bell"]),
]

AUTHOR_ONLY_PAGES = ["studio:segment_create", "studio:world_create", "studio:entry_create"]


@pytest.mark.parametrize(
    ("name", "args"), READABLE + WRITES, ids=lambda v: v if isinstance(v, str) else ""
)
def test_anonymous_people_are_sent_to_sign_in(client: Client, name: str, args: Args) -> None:
    url = reverse(name, args=args())
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('login')}?next={url}"


def test_anonymous_htmx_requests_redirect_the_whole_window(client: Client) -> None:
    response = client.get(
        reverse("studio:segment_list"),
        headers={"HX-Request": "true", "HX-Current-URL": "http://testserver/segments/?scope=npc"},
    )
    assert response.status_code == 200
    assert response["HX-Redirect"] == f"{reverse('login')}?next=/segments/%3Fscope%3Dnpc"


@pytest.mark.parametrize(("name", "args"), READABLE, ids=lambda v: v if isinstance(v, str) else "")
def test_viewers_can_read_every_page(viewer: Client, name: str, args: Args) -> None:
    response = viewer.get(reverse(name, args=args()))
    assert response.status_code == 200


@pytest.mark.parametrize(("name", "args"), WRITES, ids=lambda v: v if isinstance(v, str) else "")
def test_viewers_cannot_change_anything(viewer: Client, name: str, args: Args) -> None:
    before = content_state()
    response = viewer.post(reverse(name, args=args()), {"content": "x", "action": "up:mystery"})
    assert response.status_code == 403
    assert b"needs the <strong>author</strong> role" in response.content
    assert b"you are a <strong>viewer</strong>" in response.content
    assert content_state() == before


def test_the_refusal_names_the_role_with_its_article(author: Client) -> None:
    response = author.post(reverse("studio:release_publish"), {})
    assert response.status_code == 403
    assert b"you are an <strong>author</strong>." in response.content


@pytest.mark.parametrize("name", AUTHOR_ONLY_PAGES)
def test_pages_that_only_create_are_refused_to_viewers(viewer: Client, name: str) -> None:
    assert viewer.get(reverse(name)).status_code == 403


@pytest.mark.parametrize("name", AUTHOR_ONLY_PAGES)
def test_authors_can_open_the_pages_that_create(author: Client, name: str) -> None:
    assert author.get(reverse(name)).status_code == 200


def test_viewers_see_the_editor_read_only(viewer: Client) -> None:
    response = viewer.get(reverse("studio:segment_edit", args=[segment_id()]))
    html = response.content.decode()
    assert "you can read and preview, but not edit" in html
    assert '<fieldset class="plain" disabled>' in html
    assert ">Save</button>" not in html


def test_the_users_role_is_shown(client_as: Callable[[str], Client]) -> None:
    for role in ("viewer", "author", "admin"):
        html = client_as(role).get(reverse("studio:dashboard")).content.decode()
        assert f'<span class="role role-{role}"' in html


def test_a_user_in_no_group_is_a_viewer(client_as: Callable[[str], Client]) -> None:
    client = client_as("none")
    assert client.get(reverse("studio:dashboard")).status_code == 200
    assert client.post(reverse("studio:world_create"), {}).status_code == 403


def test_only_admins_get_a_link_to_the_django_admin(client_as: Callable[[str], Client]) -> None:
    assert b'href="/admin/"' not in client_as("author").get("/").content
    assert b'href="/admin/"' in client_as("admin").get("/").content
