"""The studio's lore: the page (filters, server pagination, keys, total tokens, batch
edit, the test box), the editor (stale saves merged or refused, the draft's test box),
history and restore, and lore in the preview."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from promptadmin.lore import services
from promptadmin.lore.models import LoreEntry

LIST = reverse("studio:lore_list")


def make(world: Any = None, **fields: Any) -> LoreEntry:
    values = {"content": "The chapel bell has not rung.", "keys": ["bell"], **fields}
    return services.lore_entry_create(actor=None, world=world, **values)


def form_data(entry: LoreEntry, **changes: Any) -> dict[str, Any]:
    data = {
        "world": entry.world.slug if entry.world else "*",
        "title": entry.title,
        "keys": "\n".join(entry.keys),
        "content": entry.content,
        "priority": entry.priority,
        "group": entry.group,
        "expected_revision": entry.revision,
        **{name: "on" for name in ("whole_words", "recursive", "active")},
    }
    data.update(changes)
    return data


def test_the_page_filters_pages_and_totals_a_worlds_lore(viewer: Client, content: Any) -> None:
    world = content["world"]
    for index in range(30):
        make(world, title=f"Relic {index:02}", keys=[f"relic{index}"], group="relics")
    make(None, title="Moon", keys=["moon"])
    page = viewer.get(LIST, {"world": "iron-coast"})
    assert page.status_code == 200
    assert page.context["page"].total == 30
    assert len(page.context["page"].items) == 25
    html = page.content.decode()
    assert html.count('<li class="key-chip">') == 25  # keys as chips
    assert page.context["total_tokens"] == sum(
        e.token_count for e in LoreEntry.objects.filter(world=world)
    )
    count = re.search(r'<p class="result-count" role="status">(.*?)</p>', html, re.S)
    assert count is not None
    total = sum(e.token_count for e in LoreEntry.objects.filter(world=world))
    # No space before the punctuation that follows the count, whatever the template's lines.
    assert (
        " ".join(count.group(1).split()) == f"30 lore entries, page 1 of 2; {total} tokens in all"
    )
    second = viewer.get(LIST, {"world": "iron-coast", "page": 2}, HTTP_HX_REQUEST="true")
    assert second.content.decode().count('<li class="key-chip">') == 5
    assert "<html" not in second.content.decode()  # the results alone, swapped in place
    assert viewer.get(LIST, {"q": "moon"}).context["page"].total == 1
    assert viewer.get(LIST, {"world": "*"}).context["page"].total == 1
    assert viewer.get(LIST, {"group": "relics"}).context["page"].total == 30


def test_the_page_costs_the_same_queries_whatever_the_book(  # type: ignore[no-untyped-def]
    viewer: Client, content: Any, django_assert_max_num_queries
) -> None:
    for index in range(40):
        make(content["world"], title=f"Relic {index}")
    with django_assert_max_num_queries(12):
        assert viewer.get(LIST, {"world": "iron-coast"}).status_code == 200


def test_the_test_box_shows_what_fires_and_why(viewer: Client, content: Any) -> None:
    bell = make(content["world"], title="Bell", content="It fell in the flood.")
    flood = make(None, title="Flood", content="The flood came.", keys=["flood"])
    response = viewer.post(
        reverse("studio:lore_test"), {"world": "iron-coast", "text": "Who rang the bell?"}
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "Who rang the <mark>bell</mark>?" in html
    assert reverse("studio:lore_edit", args=[bell.pk]) in html
    assert reverse("studio:lore_edit", args=[flood.pk]) in html
    assert "key &#x27;bell&#x27; in the text" in html
    assert "key &#x27;flood&#x27; in lore entry" in html
    nothing = viewer.post(reverse("studio:lore_test"), {"world": "iron-coast", "text": "Hello"})
    assert "Nothing fires" in nothing.content.decode()


def test_the_editors_test_box_tries_the_entry_as_typed(author: Client, content: Any) -> None:
    response = author.post(
        reverse("studio:lore_check"),
        {
            "keys": "Gate\nportcullis",
            "content": "x",
            "case_sensitive": "on",
            "test_text": "the gate, the Gate",
        },
    )
    html = response.content.decode()
    assert "the gate, the <mark>Gate</mark>" in html
    blank = author.post(reverse("studio:lore_check"), {"keys": "", "test_text": "gate"})
    assert "at least one key" in blank.content.decode()


def test_authors_create_and_edit_entries_text_stored_with_newlines(
    author: Client, content: Any
) -> None:
    response = author.post(
        reverse("studio:lore_create"),
        {
            "world": "iron-coast",
            "title": "Bell",
            "keys": "bell\r\nchapel bell",
            "content": "One.\r\nTwo.",
            "priority": 2,
            "whole_words": "on",
            "recursive": "on",
            "active": "on",
        },
    )
    entry = LoreEntry.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse(
        "studio:lore_edit", args=[entry.pk]
    )
    assert (entry.keys, entry.content, entry.world, entry.priority) == (
        ["bell", "chapel bell"],
        "One.\nTwo.",
        content["world"],
        2,
    )
    edit = author.post(
        reverse("studio:lore_edit", args=[entry.pk]), form_data(entry, group="bells")
    )
    assert edit.status_code == 302
    entry.refresh_from_db()
    assert (entry.group, entry.revision) == ("bells", 2)


def test_bad_input_is_shown_on_its_field(author: Client, content: Any) -> None:
    response = author.post(
        reverse("studio:lore_create"),
        {"world": "iron-coast", "keys": "", "content": "x", "priority": 0, "active": "on"},
    )
    assert response.status_code == 200
    assert "at least one key" in str(response.context["form"].errors["keys"])
    assert not LoreEntry.objects.exists()


def test_viewers_read_but_cannot_write(viewer: Client, content: Any) -> None:
    entry = make(content["world"])
    assert viewer.get(reverse("studio:lore_edit", args=[entry.pk])).status_code == 200
    assert (
        viewer.post(reverse("studio:lore_edit", args=[entry.pk]), form_data(entry)).status_code
        == 403
    )
    assert viewer.get(reverse("studio:lore_create")).status_code == 403


def test_a_stale_save_keeps_the_other_authors_change_and_applies_mine(
    author: Client, content: Any
) -> None:
    entry = make(content["world"], title="Bell")
    loaded = form_data(entry)
    services.lore_entry_update(actor=None, entry=entry, priority=7)  # someone else, meanwhile
    response = author.post(
        reverse("studio:lore_edit", args=[entry.pk]), {**loaded, "title": "Great bell"}
    )
    assert response.status_code == 302
    entry.refresh_from_db()
    assert (entry.title, entry.priority, entry.revision) == ("Great bell", 7, 3)


def test_a_stale_save_of_the_same_field_asks_for_a_decision(author: Client, content: Any) -> None:
    entry = make(content["world"], title="Bell")
    loaded = form_data(entry)
    services.lore_entry_update(actor=None, entry=entry, title="Their bell")
    response = author.post(
        reverse("studio:lore_edit", args=[entry.pk]), {**loaded, "title": "My bell"}
    )
    assert response.status_code == 409
    assert [field.name for field in response.context["conflict"].fields] == ["title"]
    assert LoreEntry.objects.get().title == "Their bell"
    choose = {**loaded, "title": "My bell", "expected_revision": 2, "resolve_title": "theirs"}
    assert author.post(reverse("studio:lore_edit", args=[entry.pk]), choose).status_code == 302
    assert LoreEntry.objects.get().title == "Their bell"


def test_a_batch_edit_changes_the_ticked_entries(author: Client, content: Any) -> None:
    a, b, c = (make(content["world"], title=t) for t in "ABC")
    response = author.post(
        reverse("studio:lore_batch"),
        {
            "entry": [f"{a.pk}:1", f"{b.pk}:1"],
            "set_group": "on",
            "group": "letters",
            "set_active": "no",
            "next": LIST,
        },
    )
    assert response.status_code == 302
    rows = {row.pk: (row.group, row.active) for row in LoreEntry.objects.all()}
    assert rows == {a.pk: ("letters", False), b.pk: ("letters", False), c.pk: ("", True)}
    stale = author.post(
        reverse("studio:lore_batch"), {"entry": [f"{a.pk}:1"], "set_priority": "on", "priority": 4}
    )
    assert stale.status_code == 302
    assert LoreEntry.objects.get(pk=a.pk).priority == 0


def test_history_compares_and_restores(author: Client, content: Any) -> None:
    entry = make(content["world"], title="Bell")
    services.lore_entry_update(actor=None, entry=entry, title="Great bell", keys=["gong"])
    url = reverse("studio:lore_history", args=[entry.pk])
    page = author.get(url)
    assert page.status_code == 200
    labels = [change.label for change in page.context["diff"]["fields"]]
    assert labels == ["Title", "Keys"]
    restored = author.post(url, {"revision": 1, "expected_revision": 2})
    assert restored.status_code == 302
    entry.refresh_from_db()
    assert (entry.title, entry.keys, entry.revision) == ("Bell", ["bell"], 3)


def test_history_of_an_entry_written_without_history_says_so(author: Client, content: Any) -> None:
    # A bulk load or a script can write rows without history records.
    entry = make(content["world"], title="Bell")
    entry.history.all().delete()
    url = reverse("studio:lore_history", args=[entry.pk])
    page = author.get(url)
    assert page.status_code == 200
    assert "No revision of this lore entry is recorded" in page.content.decode()
    assert author.get(url, {"a": 1, "b": 2}, HTTP_HX_REQUEST="true").status_code == 200
    services.lore_entry_update(actor=None, entry=entry, title="Great bell")
    assert author.get(url).status_code == 200  # its next save starts its history


def test_delete_needs_the_revision_seen(author: Client, content: Any) -> None:
    entry = make(content["world"])
    url = reverse("studio:lore_delete", args=[entry.pk])
    author.post(url, {"expected_revision": 9})
    assert LoreEntry.objects.exists()
    author.post(url, {"expected_revision": 1})
    assert not LoreEntry.objects.exists()


@pytest.mark.usefixtures("content")
def test_the_preview_shows_lore_and_its_trigger(viewer: Client, content: Any) -> None:
    bell = make(content["world"], title="The bell", content="It was cast from a sunken ship.")
    response = viewer.get(
        reverse("studio:preview"),
        {
            "entry": "drowned-bell",
            "token_budget": 8000,
            "npc_budget": 600,
            "input": "Who rang the bell last night?",
        },
    )
    assert response.status_code == 200
    page = response.context["preview"]
    assert [row["id"] for row in page.lore] == [bell.pk]
    html = response.content.decode()
    assert "layer-lore" in html
    assert "Who rang the <mark>bell</mark> last night?" in html
    assert "It was cast from a sunken ship." in html


@pytest.mark.parametrize("world", ["<script>", "nowhere", "x" * 500])
def test_a_bad_world_in_the_url_lists_nothing_and_offers_no_world(
    viewer: Client, content: Any, world: str
) -> None:
    make(content["world"])
    response = viewer.get(LIST, {"world": world})
    assert response.status_code == 200
    assert response.context["page"].total == 0
    assert response.context["test_world"] == ""


def test_a_nul_in_the_url_is_a_400(viewer: Client, content: Any) -> None:
    assert viewer.get(LIST, {"world": "a\x00b", "q": "\x00"}).status_code == 400


# The request's lore option in the preview and in scenarios

PREVIEW = reverse("studio:preview")
TURN = {
    "entry": "drowned-bell",
    "token_budget": 8000,
    "npc_budget": 600,
    "input": "Who rang the bell last night?",
}


def test_the_preview_form_takes_the_lore_option(viewer: Client, content: Any) -> None:
    bell = make(content["world"], title="The bell", content="It was cast from a sunken ship.")
    html = viewer.get(PREVIEW, TURN).content.decode()
    assert 'name="lore_budget"' in html and "sunken ship" in html
    off = viewer.get(PREVIEW, {**TURN, "lore": "off"})
    assert off.context["preview"].lore == [] and "sunken ship" not in off.content.decode()
    tight = viewer.get(PREVIEW, {**TURN, "lore_budget": 1}).context["preview"]
    assert [(row["id"], row["status"]) for row in tight.lore] == [(bell.pk, "left_out")]
    none_scanned = viewer.get(PREVIEW, {**TURN, "lore_recursion": 0, "lore_scan_depth": 0})
    assert [row["id"] for row in none_scanned.context["preview"].lore] == [bell.pk]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("lore_budget", "-1"),
        ("lore_budget", str(10**12)),
        ("lore_scan_depth", "100000"),
        ("lore_recursion", "many"),
        ("lore", "maybe"),
        ("lore_budget", "1\x00"),
    ],
)
def test_a_bad_lore_option_is_shown_on_its_field(
    viewer: Client, content: Any, field: str, value: str
) -> None:
    response = viewer.get(PREVIEW, {**TURN, field: value})
    if "\x00" in value:
        assert response.status_code == 400
        return
    form = response.context["form"]
    assert form.errors.get(field), form.errors


def test_saving_the_preview_as_a_scenario_keeps_its_lore_option(
    author: Client, content: Any
) -> None:
    from urllib.parse import urlencode

    from promptadmin.releases.models import Scenario

    query = {**TURN, "lore_budget": 300, "lore": "off"}
    response = author.post(f"{PREVIEW}?{urlencode(query)}", {"scenario-name": "bell, no lore"})
    assert response.status_code == 302
    assert Scenario.objects.get(name="bell, no lore").lore == {"budget": 300, "enabled": False}


def test_the_scenario_form_and_list_show_and_save_the_lore_option(
    author: Client, content: Any
) -> None:
    from promptadmin.releases import services as releases

    scenario = releases.scenario_create(
        actor=None, name="Bell", entry="drowned-bell", lore={"budget": 300}
    )
    url = reverse("studio:scenario_edit", args=[scenario.pk])
    form = author.get(url).content.decode()
    assert 'name="lore_budget"' in form and 'value="300"' in form
    assert "lore: 300 tokens" in author.get(reverse("studio:scenario_list")).content.decode()
    base = {"name": "Bell", "entry": "drowned-bell", "token_budget": "900", "npc_budget": "100"}
    response = author.post(url, {**base, "lore": "off", "expected_revision": "1"})
    assert response.status_code == 302
    scenario.refresh_from_db()
    assert scenario.lore == {"enabled": False}
    assert "lore: off" in author.get(reverse("studio:scenario_list")).content.decode()
    bad = author.post(url, {**base, "lore_scan_depth": "100000", "expected_revision": "2"})
    assert bad.status_code == 400
    assert bad.context["form"].errors.get("lore_scan_depth")
    scenario.refresh_from_db()
    assert scenario.revision == 2


# Importing a SillyTavern World Info file from the lore page

IMPORT = reverse("studio:lore_import")


def world_info(count: int = 3) -> bytes:
    import json

    entries = {
        str(uid): {
            "uid": uid,
            "key": [f"relic{uid}"],
            "comment": f"Relic {uid}",
            "content": f"Relic {uid} hums at night.",
            "order": 100 + uid,
            "position": 1,
        }
        for uid in range(count)
    }
    return json.dumps({"entries": entries}).encode()


def upload(client: Client, world: str, action: str, data: bytes, **extra: Any) -> Any:
    from django.core.files.uploadedfile import SimpleUploadedFile

    file = SimpleUploadedFile("book.json", data, content_type="application/json")
    return client.post(IMPORT, {"world": world, "action": action, "file": file, **extra})


def test_the_lore_page_offers_the_import_form_to_authors(
    author: Client, viewer: Client, content: Any
) -> None:
    html = author.get(LIST).content.decode()
    assert 'id="lore-import-form"' in html and 'enctype="multipart/form-data"' in html
    assert 'value="dry_run"' in html and 'value="import"' in html
    assert 'id="lore-import-form"' not in viewer.get(LIST).content.decode()


def test_a_dry_run_shows_what_would_change_and_writes_nothing(author: Client, content: Any) -> None:
    world = content["world"].slug
    response = upload(author, world, "dry_run", world_info())
    assert response.status_code == 200
    report = response.context["report"]
    assert report.dry_run and [entry.action for entry in report.entries] == ["created"] * 3
    html = response.content.decode()
    assert "Would create 3, update 0; 0 unchanged, 0 skipped. Nothing was written." in html
    assert "Relic 1" in html
    assert not LoreEntry.objects.exists()


def test_an_import_writes_and_the_same_file_again_changes_nothing(
    author: Client, content: Any
) -> None:
    world = content["world"].slug
    response = upload(author, world, "import", world_info())
    assert response.status_code == 200
    assert "Created 3, updated 0; 0 unchanged, 0 skipped." in response.content.decode()
    assert LoreEntry.objects.filter(world=content["world"]).count() == 3
    entry = LoreEntry.objects.get(title="Relic 1")
    assert reverse("studio:lore_edit", args=[entry.pk]) in response.content.decode()
    again = upload(author, world, "import", world_info()).context["report"]
    assert [e.action for e in again.entries] == ["unchanged"] * 3
    changed = world_info().replace(b"Relic 2 hums", b"Relic 2 sings")
    would = upload(author, world, "dry_run", changed).context["report"]
    assert [e.action for e in would.entries] == ["unchanged", "unchanged", "updated"]
    assert LoreEntry.objects.get(title="Relic 2").content == "Relic 2 hums at night."


@pytest.mark.parametrize(
    ("world", "action", "data", "field"),
    [
        ("coast", "dry_run", b"{", "file"),
        ("coast", "dry_run", b'{"entries": {"0": {"k\\ud800": 1}}}', "file"),
        ("coast", "dry_run", b"\xff\xfe", "file"),
        ("coast", "dry_run", b'{"entries": "x\\u0000"}', "file"),
        ("", "dry_run", b'{"entries": {}}', "world"),
        ("nowhere", "dry_run", b'{"entries": {}}', "world"),
        ("coast", "guess", b'{"entries": {}}', "action"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(
    author: Client, content: Any, world: str, action: str, data: bytes, field: str
) -> None:
    world = content["world"].slug if world == "coast" else world
    response = upload(author, world, action, data)
    assert response.status_code == 400
    assert response.context["form"].errors.get(field), response.context["form"].errors
    assert not LoreEntry.objects.exists()


def test_an_upload_over_the_limit_is_a_413(
    author: Client, content: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from promptadmin.studio.views import lore as views

    monkeypatch.setattr(views, "MAX_FILE_BYTES", 100)
    response = upload(author, content["world"].slug, "import", world_info(20))
    assert response.status_code == 413
    assert "The file is over 100\xa0bytes, the most an import takes." in response.content.decode()
    assert not LoreEntry.objects.exists()


def test_viewers_cannot_import(viewer: Client, content: Any) -> None:
    response = upload(viewer, content["world"].slug, "import", world_info())
    assert response.status_code == 403 and not LoreEntry.objects.exists()


def test_csrf_is_checked_as_browsers_send_it(content: Any) -> None:
    """The CSRF check reads the form: it runs after the upload limit is installed, and
    still runs (the test client skips it unless asked; a browser does not)."""
    from tests.promptadmin.studio.conftest import user_with_role

    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user_with_role("author"))
    token = browser.get(LIST).context["csrf_token"]
    world = content["world"].slug
    refused = upload(browser, world, "import", world_info())
    assert refused.status_code == 403 and not LoreEntry.objects.exists()
    done = upload(browser, world, "import", world_info(), csrfmiddlewaretoken=token)
    assert done.status_code == 200 and LoreEntry.objects.count() == 3
