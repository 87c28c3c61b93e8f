"""The segment list, the editor, stale-edit detection and deletion."""

from __future__ import annotations

import html
import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

import assembler
from promptadmin.content.models import Segment
from promptadmin.content.services import segments
from promptadmin.core.tokens import tokenizer
from tests.factories import make_segment

pytestmark = pytest.mark.usefixtures("content")

LIST = reverse("studio:segment_list")
CREATE = reverse("studio:segment_create")
CHECK = reverse("studio:segment_check")


def edit_url(segment: Segment) -> str:
    return reverse("studio:segment_edit", args=[segment.pk])


def form_data(segment: Segment, **changes: Any) -> dict[str, Any]:
    """What the editor posts for ``segment`` as loaded, with ``changes``."""
    ref = segment.ref
    data = {
        "object": f"{type(ref).__name__.lower()}:{ref.slug}" if ref is not None else "",
        "tier": segment.tier,
        "title": segment.title,
        "content": segment.content,
        "metadata": json.dumps(segment.metadata),
        "version": segment.version,
        "sort_order": segment.sort_order,
        "expected_revision": segment.revision,
    }
    if segment.active:
        data["active"] = "on"
    data.update(changes)
    return {key: value for key, value in data.items() if value is not None}


def ids_in(response: Any) -> list[int]:
    return [segment.pk for segment, _url in response.context["rows"]]


# The list


def test_the_list_shows_every_segment_with_its_details(viewer: Client, content: dict) -> None:
    response = viewer.get(LIST)
    html = response.content.decode()
    assert set(ids_in(response)) == set(Segment.objects.values_list("pk", flat=True))
    tone = content["tone"]
    assert f'href="{edit_url(tone)}"' in html
    assert "The Iron Coast is grey, wet and stubborn." in html
    assert 'href="/worlds/iron-coast/"><bdi>The Iron Coast</bdi></a>' in html


def test_the_list_filters_by_scope_object_and_status(viewer: Client, content: dict) -> None:
    assert ids_in(viewer.get(LIST, {"scope": "entry_start"})) == [content["opening"].pk]
    assert set(ids_in(viewer.get(LIST, {"object": "entry:drowned-bell"}))) == {
        content["premise"].pk,
        content["opening"].pk,
    }
    segments.segment_update(actor=None, segment=content["core"], active=False)
    assert ids_in(viewer.get(LIST, {"active": "no"})) == [content["core"].pk]
    assert content["core"].pk not in ids_in(viewer.get(LIST, {"active": "yes"}))


def test_search_needs_every_word_to_match(viewer: Client, content: dict) -> None:
    assert ids_in(viewer.get(LIST, {"q": "grey stubborn"})) == [content["tone"].pk]
    assert ids_in(viewer.get(LIST, {"q": "grey pier"})) == []
    # Titles and the names of the objects segments belong to are searched too.
    assert ids_in(viewer.get(LIST, {"q": "tone"})) == [content["tone"].pk]
    assert ids_in(viewer.get(LIST, {"q": "marta"})) == [content["marta"].pk]
    assert ids_in(viewer.get(LIST, {"q": f"#{content['core'].pk}"})) == [content["core"].pk]


def test_the_list_sorts(viewer: Client) -> None:
    by_tokens = ids_in(viewer.get(LIST, {"sort": "-tokens"}))
    counts = dict(Segment.objects.values_list("pk", "token_count"))
    assert [counts[pk] for pk in by_tokens] == sorted(counts.values(), reverse=True)
    assert ids_in(viewer.get(LIST, {"sort": "id"})) == sorted(counts)


def test_column_headers_link_to_the_next_sort_keeping_the_filters(viewer: Client) -> None:
    response = viewer.get(LIST, {"scope": "world", "sort": "-tokens", "page": "1"})
    assert response.context["sorts"]["tokens"] == {
        "url": "?scope=world&sort=tokens",
        "state": "descending",
    }
    assert response.context["sorts"]["id"]["state"] == "none"


def test_the_list_pages_25_at_a_time(viewer: Client) -> None:
    for number in range(30):
        make_segment(scope="core", content=f"Extra core text {number}.")
    first = viewer.get(LIST, {"scope": "core", "sort": "id"})
    second = viewer.get(LIST, {"scope": "core", "sort": "id", "page": 2})
    assert len(ids_in(first)) == 25
    assert len(ids_in(second)) == 6
    assert "?scope=core&amp;sort=id&amp;page=2" in first.content.decode()


def test_an_htmx_request_gets_only_the_results(viewer: Client) -> None:
    response = viewer.get(LIST, {"scope": "world"}, headers={"HX-Request": "true"})
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="segment-results"')
    assert "<html" not in html
    assert response["Vary"] == "HX-Request, Cookie"


def test_going_back_in_history_gets_the_whole_page(viewer: Client) -> None:
    headers = {"HX-Request": "true", "HX-History-Restore-Request": "true"}
    assert b"<html" in viewer.get(LIST, {"scope": "world"}, headers=headers).content


def test_an_unknown_filter_value_is_reported_not_ignored(viewer: Client) -> None:
    response = viewer.get(LIST, {"scope": "bogus"})
    assert ids_in(response) == []
    assert "Select a valid choice" in response.content.decode()


def test_the_list_takes_the_same_queries_whatever_the_number_of_segments(
    viewer: Client, content: dict, django_assert_max_num_queries: Any
) -> None:
    viewer.get(LIST)  # warm the session and the tokenizer
    # session, user, role, count, page, and one query per kind in the object filter
    with django_assert_max_num_queries(9):
        viewer.get(LIST)
    for number in range(40):
        make_segment(scope="npc", ref=content["npc"], content=f"Marta line {number}.")
    with django_assert_max_num_queries(9):
        viewer.get(LIST)


# Creating


def test_the_scope_choices_never_offer_a_deprecated_scope(author: Client) -> None:
    choices = [
        value for value, _label in author.get(CREATE).context["form"].fields["scope"].choices
    ]
    assert choices == ["", "core", "ruleset", "world", "entry", "entry_start", "npc"]


def test_the_object_picker_lists_only_what_the_scope_allows(author: Client) -> None:
    response = author.get(CREATE, {"scope": "world"})
    form = response.context["form"]
    assert form.fields["object"].widget.kinds == ("world",)
    assert "/pick/?kinds=world&amp;field=object_search" in response.content.decode()
    assert not form.shows_tier
    assert author.get(CREATE, {"scope": "npc"}).context["form"].shows_tier
    assert not author.get(CREATE, {"scope": "core"}).context["form"].shows_object


def test_changing_the_scope_swaps_in_only_the_scope_fields(author: Client) -> None:
    response = author.get(
        CREATE,
        {"scope": "entry_start"},
        headers={"HX-Request": "true", "HX-Target": "scope-fields"},
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="scope-fields"')
    assert "kinds=entry&amp;" in html
    assert "kinds=world" not in html


def test_an_author_creates_a_segment(author: Client, content: dict) -> None:
    response = author.post(
        CREATE,
        {
            "scope": "npc",
            "object": "npc:marta-vell",
            "tier": 2,
            "content": "She hides a key.",
            "metadata": '{"title": "Secret"}',
            "version": "1.1.0",
            "active": "on",
            "sort_order": 5,
        },
    )
    segment = Segment.objects.get(content="She hides a key.")
    assert response.status_code == 302
    assert response["Location"] == edit_url(segment)
    assert (segment.npc, segment.tier, segment.metadata, segment.version) == (
        content["npc"],
        2,
        {"title": "Secret"},
        "1.1.0",
    )
    assert segment.created_by.username == "author-person"


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"metadata": '{"title": "Old'}, "metadata", "Metadata is not valid JSON: Unterminated"),
        ({"metadata": "[1, 2]"}, "metadata", "Metadata must be a JSON object in braces"),
        ({"object": ""}, "object", "Choose the world this segment belongs to."),
        ({"object": "entry:drowned-bell"}, "object", "Choose the world this segment belongs to."),
        ({"object": "world:atlantis"}, "object", "That object no longer exists"),
        ({"tier": 2}, "tier", "Tiers apply to NPC segments only"),
        ({"content": ""}, "content", "Write the text of the segment."),
        ({"version": ""}, "version", "This field is required."),
        ({"scope": "game_state"}, "scope", "Select a valid choice."),
        ({"scope": "core", "object": "world:iron-coast"}, "object", "A core segment belongs to no"),
        # Values that could be stored but never read back, or not parsed at all.
        ({"metadata": '{"n": 18446744073709551616}'}, "metadata", "Metadata: At n: integers must"),
        ({"metadata": '{"a": ' * 40 + "1" + "}" * 40}, "metadata", "Metadata: At a.a.a"),
        ({"metadata": "[" * 5000 + "]" * 5000}, "metadata", "Metadata nests objects or arrays"),
        ({"metadata": '{"a": NaN}'}, "metadata", "Metadata is not valid JSON: NaN is not"),
        ({"metadata": '{"a": 1e400}'}, "metadata", "Metadata is not valid JSON: the number"),
        ({"metadata": '{"a": [1e20]}'}, "metadata", "Metadata: At a.0: 1e+20 is stored as the"),
        ({"metadata": '{"a": "\\ud800"}'}, "metadata", "Metadata: At a: text may not contain"),
        ({"metadata": '{"a\\u0000": 1}'}, "metadata", "Metadata: At a\\u0000: key: text may not"),
        ({"object": "world:iron\x00coast"}, "object", "Null characters are not allowed."),
    ],
)
def test_the_create_form_names_what_is_wrong(
    author: Client, changes: dict, field: str, message: str
) -> None:
    data = {
        "scope": "world",
        "object": "world:iron-coast",
        "content": "Fog.",
        "version": "1.0.0",
        "sort_order": 0,
        **changes,
    }
    before = Segment.objects.count()
    response = author.post(CREATE, data)
    assert response.status_code == 200
    errors = response.context["form"].errors[field]
    assert any(error.startswith(message) for error in errors), errors
    assert Segment.objects.count() == before
    # What the author typed is kept.
    assert response.context["form"].data["content"] == data["content"]


def test_a_world_page_links_to_a_prefilled_new_segment(author: Client) -> None:
    html = author.get(reverse("studio:world_edit", args=["iron-coast"])).content.decode()
    assert f"{CREATE}?scope=world&amp;object=world%3Airon-coast" in html
    form = author.get(CREATE, {"scope": "world", "object": "world:iron-coast"}).context["form"]
    assert form["object"].value() == "world:iron-coast"


# Editing


def test_the_editor_carries_the_revision_it_loaded(viewer: Client, content: dict) -> None:
    tone = content["tone"]
    segments.segment_update(actor=None, segment=tone, content="Rain.")
    html = viewer.get(edit_url(tone)).content.decode()
    assert '<input type="hidden" name="expected_revision" value="2"' in html


def test_an_author_saves_a_new_revision(author: Client, content: dict) -> None:
    tone = content["tone"]
    response = author.post(
        edit_url(tone), form_data(tone, content="Fog, always fog.", version="1.1")
    )
    assert response.status_code == 302
    tone.refresh_from_db()
    assert (tone.content, tone.version, tone.revision) == ("Fog, always fog.", "1.1", 2)
    assert tone.updated_by.username == "author-person"
    assert tone.history.first().history_user.username == "author-person"
    assert "Saved revision 2." in author.get(edit_url(tone)).content.decode()


def test_saving_without_a_change_makes_no_revision(author: Client, content: dict) -> None:
    tone = content["tone"]
    author.post(edit_url(tone), form_data(tone))
    tone.refresh_from_db()
    assert tone.revision == 1


def test_the_scope_cannot_change_after_creation(author: Client, content: dict) -> None:
    tone = content["tone"]
    author.post(edit_url(tone), form_data(tone, scope="core", object="", content="Moved?"))
    tone.refresh_from_db()
    assert (tone.scope, tone.content) == ("world", "The Iron Coast is grey, wet and stubborn.")


def test_an_edit_can_move_a_segment_to_another_object_of_its_kind(
    author: Client, content: dict
) -> None:
    rule = content["rule"]
    author.post(edit_url(rule), form_data(rule, object="ruleset:combat-lite"))
    rule.refresh_from_db()
    assert rule.ruleset == content["combat"]


def test_the_edit_form_names_bad_metadata(author: Client, content: dict) -> None:
    tone = content["tone"]
    response = author.post(edit_url(tone), form_data(tone, metadata='{"title": }'))
    assert response.context["form"].errors["metadata"] == [
        "Metadata is not valid JSON: Expecting value (line 1, column 11)."
    ]


def test_a_deprecated_segment_cannot_be_activated(author: Client) -> None:
    legacy = segments.segment_import_legacy(actor=None, scope="rng", content="Rolls: {rolls}")
    html = author.get(edit_url(legacy)).content.decode()
    assert "is deprecated" in html
    response = author.post(edit_url(legacy), form_data(legacy, active="on"))
    assert response.context["form"].errors["active"] == [
        "Scope 'rng' is deprecated: this segment must stay inactive."
    ]
    legacy.refresh_from_db()
    assert not legacy.active


def test_a_deprecated_segment_is_read_only_in_the_editor(author: Client) -> None:
    legacy = segments.segment_import_legacy(actor=None, scope="rng", content="Rolls: {rolls}")
    response = author.post(edit_url(legacy), form_data(legacy, content="Rolls, reworded."))
    assert "deprecated scope 'rng' and is read-only" in html.unescape(response.content.decode())
    legacy.refresh_from_db()
    assert (legacy.scope, legacy.content, legacy.active, legacy.revision) == (
        "rng",
        "Rolls: {rolls}",
        False,
        1,
    )


def test_deleting_a_deprecated_segment_in_the_studio_is_refused(author: Client) -> None:
    legacy = segments.segment_import_legacy(actor=None, scope="rng", content="Rolls: {rolls}")
    url = reverse("studio:segment_delete", args=[legacy.pk])
    response = author.post(url, {"expected_revision": 1}, follow=True)
    assert "read-only" in response.content.decode()
    assert Segment.objects.filter(pk=legacy.pk).exists()


# Stale edits


def test_a_stale_save_merges_fields_only_one_author_changed(author: Client, content: dict) -> None:
    # What was seen (2): another author raised the tier 0 -> 2 and retitled the segment; the
    # second author changed only the text. Both changes must survive.
    marta = content["marta"]
    loaded = form_data(marta)  # the second author opens the editor at revision 1
    segments.segment_update(actor=None, segment=marta, tier=2, title="Marta, older")
    response = author.post(edit_url(marta), {**loaded, "content": "Marta, tired of bells."})
    assert response.status_code == 302
    marta.refresh_from_db()
    assert (marta.content, marta.tier, marta.title, marta.revision) == (
        "Marta, tired of bells.",
        2,
        "Marta, older",
        3,
    )
    message = author.get(edit_url(marta)).content.decode()
    assert "their changes (title, tier) were kept and yours (text) applied" in message


def test_a_field_both_authors_changed_is_shown_for_a_decision_and_nothing_is_saved(
    author: Client, content: dict
) -> None:
    tone = content["tone"]
    loaded = form_data(tone)  # the author opens the editor at revision 1
    segments.segment_update(actor=None, segment=tone, content="Someone else's fog.", version="2.0")
    response = author.post(edit_url(tone), {**loaded, "content": "My rain."})
    assert response.status_code == 409
    tone.refresh_from_db()
    assert (tone.content, tone.revision) == ("Someone else's fog.", 2)
    html = response.content.decode()
    assert "saved this segment while you were editing" in html
    conflict = response.context["conflict"]
    assert conflict.yours_revision == 1
    # Only the text needs a decision; their version label is kept without asking.
    assert [field.label for field in conflict.fields] == ["Text"]
    assert conflict.kept_theirs == ["Version label"]
    (text,) = conflict.fields
    # Each side's change is shown against the revision both started from.
    assert [(row.left.html, row.right.html) for row in text.mine_rows] == [
        ("<del>The Iron Coast is grey, wet and stubborn</del>.", "<ins>My rain</ins>.")
    ]
    assert [row.right.html for row in text.theirs_rows] == ["<ins>Someone else&#x27;s fog</ins>."]
    # The form keeps the author's text, holds their version label, and is now based on 2.
    form = response.context["form"]
    assert form["content"].value() == "My rain."
    assert form["version"].value() == "2.0"
    assert form["expected_revision"].value() == "2"
    # Labels say whose value is whose; discarding one's own work asks first.
    assert "Your changes to revision 1" in html
    assert "Keep yours" in html
    assert "Take theirs (Someone, revision 2)" in html
    assert '<summary class="btn">Discard all my changes…</summary>' in html


def test_taking_theirs_for_a_conflicting_field_saves_their_value(
    author: Client, content: dict
) -> None:
    tone = content["tone"]
    loaded = form_data(tone)
    segments.segment_update(actor=None, segment=tone, content="Someone else's fog.")
    author.post(edit_url(tone), {**loaded, "content": "My rain.", "title": "Rain"})
    decided = {
        **loaded,
        "content": "My rain.",
        "title": "Rain",
        "expected_revision": 2,
        "resolve_content": "theirs",
    }
    assert author.post(edit_url(tone), decided).status_code == 302
    tone.refresh_from_db()
    assert (tone.content, tone.title, tone.revision) == ("Someone else's fog.", "Rain", 3)


def test_keeping_mine_after_a_conflict_saves_over_theirs(author: Client, content: dict) -> None:
    tone = content["tone"]
    loaded = form_data(tone)
    segments.segment_update(actor=None, segment=tone, content="Someone else's fog.")
    conflict = author.post(edit_url(tone), {**loaded, "content": "My rain."})
    resubmitted = {**loaded, "content": "My rain.", "expected_revision": 2}
    assert conflict.context["form"]["expected_revision"].value() == "2"
    response = author.post(edit_url(tone), resubmitted)
    assert response.status_code == 302
    tone.refresh_from_db()
    assert (tone.content, tone.revision) == ("My rain.", 3)


def test_taking_theirs_is_reloading_the_current_version(author: Client, content: dict) -> None:
    tone = content["tone"]
    segments.segment_update(actor=None, segment=tone, content="Someone else's fog.")
    form = author.get(edit_url(tone)).context["form"]
    assert form["content"].value() == "Someone else's fog."
    assert form["expected_revision"].value() == 2


def test_saving_a_segment_someone_deleted_keeps_the_text(author: Client, content: dict) -> None:
    tone = content["tone"]
    loaded = form_data(tone, content="My rain.")
    segments.segment_delete(actor=None, segment=tone)
    response = author.post(edit_url(tone), loaded)
    html = response.content.decode()
    assert response.status_code == 409
    assert "Someone deleted this segment after you opened it" in html
    assert response.context["form"]["content"].value() == "My rain."
    # One click saves it again, as a new segment of the same scope and object.
    assert f'formaction="{CREATE}"' in html
    assert '<input type="hidden" name="scope" value="world">' in html
    author.post(CREATE, {**loaded, "scope": "world"})
    assert Segment.objects.get(content="My rain.").world == content["world"]


def test_opening_a_deleted_segment_is_not_found(viewer: Client, content: dict) -> None:
    tone = content["tone"]
    segments.segment_delete(actor=None, segment=tone)
    assert viewer.get(edit_url(tone)).status_code == 404


# Live checks


def test_the_live_check_counts_tokens_and_lints_as_the_author_types(author: Client) -> None:
    text = "Intro\n=== CORE_END ===\nmore"
    response = author.post(CHECK, {"scope": "world", "content": text})
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="live-check"')
    assert f'data-testid="token-count">{tokenizer().count(text)}</span> tokens' in html
    assert "Line 2 looks like a block frame (&#x27;=== CORE_END ===&#x27;)" in html


def test_the_live_check_shows_the_change_since_the_saved_count(author: Client) -> None:
    html = author.post(CHECK, {"scope": "core", "content": "One two three.", "saved_tokens": 10})
    assert "(-6 since saved)" in html.content.decode()


def test_the_live_check_warns_about_empty_text(author: Client) -> None:
    html = author.post(CHECK, {"scope": "core", "content": "   "}).content.decode()
    assert "The segment has no text." in html


def test_the_live_check_says_an_oversized_segment_would_always_be_left_out(
    author: Client,
) -> None:
    # About 700 tokens: within the prompt's default budget, over the NPC block's.
    text = "The smith hums while she works. " * 100
    assert assembler.DEFAULT_NPC_BUDGET < tokenizer().count(text) < 8000
    npc_html = author.post(CHECK, {"scope": "npc", "content": text}).content.decode()
    assert f"more than the {assembler.DEFAULT_NPC_BUDGET}-token NPC budget" in npc_html
    world_html = author.post(CHECK, {"scope": "world", "content": text}).content.decode()
    assert "always be left out" not in world_html
    huge = "Waves break on the grey stones. " * 1500
    world_html = author.post(CHECK, {"scope": "world", "content": huge}).content.decode()
    assert f"more than the whole {assembler.DEFAULT_TOKEN_BUDGET}-token budget" in world_html


def test_the_live_check_does_not_lint_without_a_scope(author: Client) -> None:
    html = author.post(CHECK, {"scope": "", "content": "Some text."}).content.decode()
    assert 'data-testid="token-count">3</span>' in html
    assert "Lint checks apply once a scope" in html


def test_the_editor_shows_the_count_and_lints_on_load(viewer: Client, content: dict) -> None:
    tone = content["tone"]
    html = viewer.get(edit_url(tone)).content.decode()
    assert f'data-testid="token-count">{tone.token_count}</span> tokens' in html
    assert "No lint findings." in html


# Deleting


def test_an_author_deletes_a_segment_and_its_history_stays(author: Client, content: dict) -> None:
    tone = content["tone"]
    url = reverse("studio:segment_delete", args=[tone.pk])
    response = author.post(url, {"expected_revision": 1})
    assert response["Location"] == LIST
    assert not Segment.objects.filter(pk=tone.pk).exists()
    assert Segment.history.filter(id=tone.pk, history_type="-").exists()


def test_a_stale_delete_deletes_nothing(author: Client, content: dict) -> None:
    tone = content["tone"]
    segments.segment_update(actor=None, segment=tone, content="Changed meanwhile.")
    response = author.post(
        reverse("studio:segment_delete", args=[tone.pk]), {"expected_revision": 1}
    )
    assert response["Location"] == edit_url(tone)
    assert Segment.objects.filter(pk=tone.pk).exists()


def test_a_delete_without_the_revision_deletes_nothing(author: Client, content: dict) -> None:
    # What was seen (10): a delete form without its revision deleted whatever was there.
    tone = content["tone"]
    response = author.post(reverse("studio:segment_delete", args=[tone.pk]), {})
    assert response["Location"] == edit_url(tone)
    assert Segment.objects.filter(pk=tone.pk).exists()


def test_delete_needs_a_post(author: Client, content: dict) -> None:
    url = reverse("studio:segment_delete", args=[content["tone"].pk])
    assert author.get(url).status_code == 405


# The editor beside the preview


def test_the_editor_opens_as_a_panel_for_the_preview(author: Client, content: dict) -> None:
    tone = content["tone"]
    response = author.get(f"{edit_url(tone)}?panel=1", headers={"HX-Request": "true"})
    html = response.content.decode()
    assert html.lstrip().startswith('<div class="panel-head">')
    assert f'hx-post="{edit_url(tone)}?panel=1" hx-target="#preview-editor"' in html


def test_saving_in_the_panel_answers_with_the_panel_and_signals_the_preview(
    author: Client, content: dict
) -> None:
    tone = content["tone"]
    response = author.post(
        f"{edit_url(tone)}?panel=1",
        form_data(tone, content="Salt and lighthouses."),
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 200
    assert response["HX-Trigger"] == "segmentSaved"
    assert "Saved revision 2." in response.content.decode()
    tone.refresh_from_db()
    assert tone.content == "Salt and lighthouses."


def test_a_conflict_in_the_panel_is_shown_there_with_a_200(author: Client, content: dict) -> None:
    tone = content["tone"]
    loaded = form_data(tone)
    segments.segment_update(actor=None, segment=tone, content="Someone else's fog.")
    response = author.post(
        f"{edit_url(tone)}?panel=1",
        {**loaded, "content": "My rain."},
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 200  # htmx swaps only successful answers
    assert "HX-Trigger" not in response
    assert response.context["conflict"] is not None


def test_save_messages_name_the_segment_in_a_writer_s_words(author: Client, content: Any) -> None:
    """No scope keys (``entry_start``) in what the studio says to writers."""
    response = author.post(
        CREATE,
        {"scope": "entry_start", "object": "entry:drowned-bell", "title": "Pier at dusk",
         "content": "Open at dusk.", "metadata": "{}", "version": "1.0.0", "sort_order": "0",
         "tier": "0", "active": "on"},
        follow=True,
    )  # fmt: skip
    created = Segment.objects.get(title="Pier at dusk")
    said = [str(message) for message in response.context["messages"]]
    assert said == ["Created the entry start segment 'Pier at dusk' of The Drowned Bell."]
    deleted = author.post(
        reverse("studio:segment_delete", args=[created.pk]),
        {"expected_revision": created.revision},
        follow=True,
    )
    said = [str(message) for message in deleted.context["messages"]]
    assert said == [
        "Deleted the entry start segment 'Pier at dusk' of The Drowned Bell. Its history is kept."
    ]
    core = author.post(
        CREATE,
        {"scope": "core", "content": "Be brief.", "metadata": "{}", "version": "1.0.0",
         "sort_order": "0", "tier": "0", "active": "on"},
        follow=True,
    )  # fmt: skip
    assert [str(m) for m in core.context["messages"]] == ["Created the core segment."]
