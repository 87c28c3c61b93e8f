"""Names and titles people type are shown isolated: a right-to-left override in one cannot
reorder the text around it."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django import forms
from django.test import Client
from django.urls import reverse

from promptadmin.content.models import NPC, Entry, Ruleset, Segment, World
from promptadmin.content.services import deprecated, segments
from promptadmin.releases.services import release_create
from promptadmin.studio.forms.common import AutoDirSelect
from tests.factories import UserFactory

pytestmark = pytest.mark.usefixtures("content")

RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE: "Evil\u202eeman" shows as "Evilname" reversed
# The element, FIRST STRONG ISOLATE, or an option isolated by its own direction.
ISOLATED_BEFORE = ("<bdi>", "\u2068", 'dir="auto"')


def plant_hostile_names() -> dict[str, str]:
    # Published first, so the dashboard's unpublished list and the publish page's impact
    # report show the hostile names as changes.
    release_create(actor=UserFactory(is_superuser=True), labels=["production"])
    names = {}
    for model, name in ((World, "world"), (Ruleset, "ruleset"), (NPC, "npc"), (Entry, "entry")):
        hostile = f"{name} {RLO}txt.exe"
        model.objects.update(name=hostile)
        names[name] = hostile
    segment = Segment.objects.filter(scope="core").first()
    assert segment is not None
    segments.segment_update(
        actor=UserFactory(username=f"ida{RLO}nimda", role="author"),
        segment=segment,
        title=f"title {RLO}gnp.exe",
    )
    return names


def test_every_typed_name_on_every_page_is_isolated(author: Client) -> None:
    plant_hostile_names()
    segment = Segment.objects.filter(scope="core").first()
    assert segment is not None
    pages = [
        reverse("studio:dashboard"),
        reverse("studio:segment_list"),
        reverse("studio:object_picker") + "?kinds=world,ruleset,entry,npc",
        reverse("studio:segment_edit", args=[segment.pk]),
        reverse("studio:segment_history", args=[segment.pk]),
        reverse("studio:entry_list"),
        reverse("studio:entry_create"),
        reverse("studio:entry_edit", args=["drowned-bell"]),
        reverse("studio:world_list"),
        reverse("studio:world_edit", args=["iron-coast"]),
        reverse("studio:ruleset_list"),
        reverse("studio:npc_list"),
        reverse("studio:npc_edit", args=["marta-vell"]),
        reverse("studio:preview")
        + "?entry=drowned-bell&npc=marta-vell&tier=2&first_turn=on&token_budget=8000",
        reverse("studio:release_publish"),
    ]
    for url in pages:
        assert_names_isolated(url, author.get(url).content.decode())


def test_the_deprecated_review_isolates_titles_suggested_names_and_reasons(
    client_as: Callable[[str], Client],
) -> None:
    names = plant_hostile_names()
    admin = client_as("admin")
    pending, dismissed = (
        segments.segment_import_legacy(
            actor=None, scope="player", content="Old text.", metadata={"original_ref": ref}
        )
        for ref in ("iron-coast", "drowned-bell")
    )
    Segment.objects.filter(pk__in=[pending.pk, dismissed.pk]).update(title=f"old {RLO}fdp.exe")
    deprecated.deprecated_dismiss(
        actor=UserFactory(is_superuser=True), segment=dismissed, reason=f"dup {RLO}txt.exe"
    )
    url = reverse("studio:deprecated_review")
    html = admin.get(url).content.decode()
    assert names["world"] in html  # the suggestion for the pending row
    assert html.count(f"old {RLO}fdp.exe") == 2 and f"dup {RLO}txt.exe" in html
    assert_names_isolated(url, html)


def assert_names_isolated(url: str, html: str) -> None:
    """Every name holding U+202E in the page ``url`` answered is inside an isolate."""
    # What sits in a box being edited stays as typed (a picker's box takes ``data-label``),
    # an override in it closed before anything follows (see bidi.labelled).
    html = re.sub(r"<textarea[^>]*>[\s\S]*?</textarea>", "<textarea></textarea>", html)
    for label in re.findall(r'\sdata-label="([^"]*)"', html):
        assert RLO not in label or f"{RLO}txt.exe\u202c (" in label, (url, label)
    html = re.sub(r'\s(?:data-label|value)="[^"]*"', "", html)
    # A <pre> block (diffs, prompts) is a bidi paragraph of its own: nothing outside it
    # can be reordered by what it holds.
    html = re.sub(r"<pre[^>]*>[\s\S]*?</pre>", "<pre></pre>", html)
    found = 0
    for match in re.finditer(r"[\w ]*\u202e[\w.]*", html):
        found += 1
        start = match.start()
        # An isolate opens shortly before the name and is still open where it starts.
        opened = max(html.rfind(mark, 0, start) for mark in ISOLATED_BEFORE)
        between = html[opened:start]
        context = f"{url}: {html[start - 60 : match.end()]!r}"
        assert opened >= 0 and len(between) < 24, context
        assert "</bdi>" not in between and "\u2069" not in between, context
        assert "</option>" not in between, context
    assert found, url


def test_the_deprecated_review_isolates_original_ids_and_references(
    client_as: Callable[[str], Client],
) -> None:
    # A legacy export's id and reference are text someone typed, like a title.
    segments.segment_import_legacy(
        actor=None,
        scope="rng",
        content="Old text.",
        metadata={"original_id": f"id {RLO}fdp.exe", "original_ref": f"ref {RLO}txt.exe"},
    )
    url = reverse("studio:deprecated_review")
    html = client_as("admin").get(url).content.decode()
    assert f"id {RLO}fdp.exe" in html and f"ref {RLO}txt.exe" in html
    assert_names_isolated(url, html)


def test_options_hold_no_invisible_characters_and_isolate_by_direction(author: Client) -> None:
    """Typing a letter in a select picks the first option starting with it: an invisible
    isolate before every name stopped that (and screen readers and tests reading it)."""
    plant_hostile_names()
    segment = Segment.objects.filter(scope="core").first()
    assert segment is not None
    pages = [
        reverse("studio:segment_list"),
        reverse("studio:segment_create") + "?scope=world",
        reverse("studio:segment_edit", args=[segment.pk]),
        reverse("studio:entry_create"),
        reverse("studio:entry_edit", args=["drowned-bell"]),
        reverse("studio:preview") + "?entry=drowned-bell&npc=marta-vell&tier=2",
        reverse("studio:lore_list"),
        reverse("studio:lore_create"),
    ]
    named = 0
    for url in pages:
        html = author.get(url).content.decode()
        for attrs, text in re.findall(r"<option([^>]*)>([^<]*)</option>", html):
            assert "\u2068" not in text and "\u2069" not in text, (url, text)
            if RLO in text:
                named += 1
                assert 'dir="auto"' in attrs, (url, attrs, text)
    # Entries, worlds and NPCs are searchable pickers now (tests/browser/test_pickers.py);
    # the selects left (rulesets, lore worlds, scopes) still show hostile names.
    assert named >= 3


@pytest.mark.parametrize("chosen", ["", "a&b", 3, "g2", None, '"><script>'])
def test_a_select_written_in_python_is_what_djangos_templates_write(chosen: object) -> None:
    class Templated(forms.Select):
        def create_option(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
            option: dict[str, Any] = super().create_option(*args, **kwargs)
            option["attrs"]["dir"] = "auto"
            return option

    choices = [
        ("", "Any <world>"),
        ("a&b", 'Q "x"'),
        (3, "three"),
        ("A group", [("g1", "G1"), ("g2", "G2")]),
        ("\u202eevil", "\u202eevil"),
        ('"><script>', "<script>alert(1)</script>"),
    ]
    attrs = {"id": "id_w", "required": True, "disabled": False, "data-x": '1"2', "title": None}
    ours = AutoDirSelect(choices=choices, attrs=dict(attrs)).render("world", chosen)
    django_s = Templated(choices=choices, attrs=dict(attrs)).render("world", chosen)
    # The same markup; only the blank lines between options differ.
    assert re.sub(r">\s+<", "><", ours) == re.sub(r">\s+<", "><", django_s)
