"""The Django admin is for superusers and saves through the same services as everything else."""

from __future__ import annotations

from typing import Any

import pytest
from django import forms
from django.contrib.admin.utils import quote
from django.test import Client

from promptadmin.content.admin import RevisionAdminForm
from promptadmin.content.models import ApiKey, Entry, Segment, World
from promptadmin.content.services import catalog, segments
from promptadmin.content.services.api_keys import api_key_create
from tests.factories import (
    EntryFactory,
    NPCFactory,
    RulesetFactory,
    UserFactory,
    WorldFactory,
    make_segment,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def superuser_client(client: Client) -> Client:
    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    return client


EMPTY_INLINES = {
    f"{prefix}-{count}_FORMS": "0"
    for prefix in ("ruleset_links", "cast_links")
    for count in ("TOTAL", "INITIAL")
}


def segment_form(**fields: object) -> dict[str, object]:
    data: dict[str, object] = {
        "scope": "core",
        "content": "Speak plainly.",
        "metadata": "{}",
        "version": "1.0.0",
        "active": "on",
        "sort_order": "0",
        "tier": "0",
    }
    data.update(fields)
    return data


def test_staff_who_are_not_superusers_cannot_use_the_admin(client: Client) -> None:
    client.force_login(UserFactory(is_staff=True))
    assert client.get("/admin/promptadmin/segment/").status_code == 403


def test_every_model_is_listed_with_filters(superuser_client: Client) -> None:
    make_segment(scope="world", ref=WorldFactory())
    for path in ("world", "ruleset", "npc", "entry", "segment"):
        assert superuser_client.get(f"/admin/promptadmin/{path}/").status_code == 200
    page = superuser_client.get("/admin/promptadmin/segment/?scope__exact=world&q=text")
    assert page.status_code == 200
    assert page.context["cl"].result_count == 1


def test_the_segment_list_pages_counts_to_a_cap_and_searches_the_index(
    superuser_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    from promptadmin.core import pagination

    monkeypatch.setattr(pagination, "ADMIN_COUNT_CAP", 5)
    for n in range(8):
        make_segment(content=f"Lantern number {n}.")
    make_segment(content="A candle.")
    page = superuser_client.get("/admin/promptadmin/segment/")
    changelist = page.context["cl"]
    # Counted up to the cap, and never counted again in full beside it.
    assert (changelist.result_count, changelist.full_result_count) == (5, None)
    assert changelist.list_per_page == pagination.ADMIN_PAGE_SIZE
    found = superuser_client.get("/admin/promptadmin/segment/", {"q": "lant"}).context["cl"]
    assert found.result_count == 5  # words by their beginning (capped)
    candle = superuser_client.get("/admin/promptadmin/segment/", {"q": "cand"}).context["cl"]
    assert [s.content for s in candle.result_list] == ["A candle."]


def test_thousands_of_objects_are_searched_for_never_listed(superuser_client: Client) -> None:
    for n in range(30):
        NPCFactory(slug=f"npc-{n}")
    segment = make_segment(scope="npc", ref=NPCFactory(slug="marta"))
    form = superuser_client.get(f"/admin/promptadmin/segment/{segment.pk}/change/")
    html = form.content.decode()
    # The owner fields ask the autocomplete view, and list only the current choice.
    assert 'class="admin-autocomplete"' in html and 'data-field-name="npc"' in html
    assert "npc-1" not in html
    listing = superuser_client.get("/admin/promptadmin/segment/").content.decode()
    assert "npc__id__exact" not in listing  # no filter listing every NPC
    entry = superuser_client.get("/admin/promptadmin/entry/add/").content.decode()
    assert 'data-field-name="world"' in entry and 'class="admin-autocomplete"' in entry


def test_a_segment_added_in_the_admin_is_counted_and_attributed(superuser_client: Client) -> None:
    response = superuser_client.post("/admin/promptadmin/segment/add/", segment_form())
    assert response.status_code == 302
    segment = Segment.objects.get()
    assert segment.token_count and segment.created_by.username == "root"
    assert segment.history.get().history_user.username == "root"


def test_the_admin_names_the_field_of_a_world_segment_pointing_at_a_ruleset(
    superuser_client: Client,
) -> None:
    ruleset = RulesetFactory()
    response = superuser_client.post(
        "/admin/promptadmin/segment/add/", segment_form(scope="world", ruleset=ruleset.pk)
    )
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert set(errors) >= {"world", "ruleset"}
    assert not Segment.objects.exists()


def test_the_admin_never_offers_deprecated_scopes(superuser_client: Client) -> None:
    response = superuser_client.post("/admin/promptadmin/segment/add/", segment_form(scope="rng"))
    assert "scope" in response.context["adminform"].form.errors
    assert not Segment.objects.exists()


def test_an_admin_edit_bumps_the_revision(superuser_client: Client) -> None:
    segment = make_segment(content="Before.")
    response = superuser_client.post(
        f"/admin/promptadmin/segment/{segment.pk}/change/",
        segment_form(content="After.", expected_revision=segment.revision),
    )
    assert response.status_code == 302
    segment.refresh_from_db()
    assert (segment.content, segment.revision) == ("After.", 2)


def test_deleting_a_world_in_use_from_the_admin_says_why_and_keeps_it(
    superuser_client: Client,
) -> None:
    world = WorldFactory(slug="iron-coast")
    make_segment(scope="world", ref=world)
    response = superuser_client.post(
        f"/admin/promptadmin/world/{world.pk}/delete/", {"post": "yes"}, follow=True
    )
    assert World.objects.filter(pk=world.pk).exists()
    assert "would require deleting the following protected related objects" in (
        response.content.decode()
    )


def test_entry_rulesets_are_saved_in_position_order(superuser_client: Client) -> None:
    world = WorldFactory()
    a, b = RulesetFactory(), RulesetFactory()
    data = {
        "slug": "bell",
        "name": "Bell",
        "description": "",
        "world": world.pk,
        "ruleset_links-TOTAL_FORMS": "2",
        "ruleset_links-INITIAL_FORMS": "0",
        "ruleset_links-0-position": "2",
        "ruleset_links-0-ruleset": a.pk,
        "ruleset_links-1-position": "1",
        "ruleset_links-1-ruleset": b.pk,
        "cast_links-TOTAL_FORMS": "0",
        "cast_links-INITIAL_FORMS": "0",
    }
    response = superuser_client.post("/admin/promptadmin/entry/add/", data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert Entry.objects.get(slug="bell").ordered_rulesets() == [b, a]


def test_an_api_key_created_in_the_admin_is_shown_once_and_stored_hashed(
    superuser_client: Client,
) -> None:
    response = superuser_client.post(
        "/admin/promptadmin/apikey/add/", {"name": "game-server", "scope": "write"}, follow=True
    )
    key = ApiKey.objects.get(name="game-server")
    shown = [str(m) for m in response.context["messages"]]
    assert key.scope == "write" and any(key.prefix in message for message in shown)
    secret = next(m for m in shown if key.prefix in m).split("is: ")[1].split(" ")[0]
    assert key.is_valid(secret) and secret not in key.hashed_key


def test_revoking_a_key_in_the_admin_revokes_it(superuser_client: Client) -> None:
    key, _secret = api_key_create(actor=None, name="old", scope="read")
    response = superuser_client.post(
        f"/admin/promptadmin/apikey/{quote(key.pk)}/change/", {"name": "old", "revoked": "on"}
    )
    assert response.status_code == 302
    assert ApiKey.objects.get(pk=key.pk).revoked


def test_the_librarys_unused_key_model_is_not_in_the_admin(superuser_client: Client) -> None:
    assert superuser_client.get("/admin/rest_framework_api_key/apikey/").status_code == 404


def test_an_admin_save_from_an_older_copy_is_refused_and_keeps_the_other_change(
    superuser_client: Client,
) -> None:
    segment = make_segment(scope="core", content="Speak plainly.")
    url = f"/admin/promptadmin/segment/{segment.pk}/change/"
    loaded = superuser_client.get(url).context["adminform"].form["expected_revision"].value()
    # Someone saves in the studio or the API while the admin has the page open.
    segments.segment_update(actor=None, segment=segment, content="Speak in riddles.")

    response = superuser_client.post(
        url,
        segment_form(content="Speak softly.", expected_revision=loaded),
    )

    assert response.status_code == 200
    errors = response.context["adminform"].form.non_field_errors()
    assert "changed by someone else" in errors[0]
    segment.refresh_from_db()
    assert segment.content == "Speak in riddles." and segment.revision == 2


@pytest.fixture
def form_check_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A save that lands between the form's revision check and the service's."""
    monkeypatch.setattr(RevisionAdminForm, "clean", forms.ModelForm.clean)


@pytest.mark.usefixtures("form_check_passes")
@pytest.mark.parametrize("kind", ["segment", "world", "entry"])
def test_a_save_that_loses_the_race_is_refused_and_says_so(
    superuser_client: Client, kind: str
) -> None:
    if kind == "segment":
        obj: Any = make_segment(scope="core", content="Speak plainly.")
        data = segment_form(content="Speak softly.", expected_revision=1)
        segments.segment_update(actor=None, segment=obj, content="Speak in riddles.")
    else:
        obj = WorldFactory(name="Iron Coast") if kind == "world" else EntryFactory(name="Bell")
        data = {"slug": obj.slug, "name": "Mine", "description": "", "expected_revision": 1}
        if kind == "entry":
            data |= {"world": obj.world_id, **EMPTY_INLINES}
        catalog.catalog_update(actor=None, obj=obj, name="Theirs")
    url = f"/admin/promptadmin/{kind}/{obj.pk}/change/"

    response = superuser_client.post(url, data, follow=True)

    assert response.status_code == 200
    shown = [str(message) for message in response.context["messages"]]
    assert any("changed by someone else" in message for message in shown), shown
    assert not any("successfully" in message for message in shown), shown
    obj.refresh_from_db()
    assert obj.revision == 2
    assert (obj.content if kind == "segment" else obj.name) in ("Speak in riddles.", "Theirs")


def test_renaming_a_key_in_the_admin_goes_through_the_key_service(
    superuser_client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    key, _secret = api_key_create(actor=None, name="old", scope="read")
    with caplog.at_level("INFO", logger="promptadmin.content.services.api_keys"):
        response = superuser_client.post(
            f"/admin/promptadmin/apikey/{quote(key.pk)}/change/", {"name": "game-server"}
        )
    assert response.status_code == 302
    assert ApiKey.objects.get(pk=key.pk).name == "game-server"
    assert f"API key {key.prefix}: name changed from 'old' to 'game-server' by root" in (
        caplog.text
    )


def test_the_admin_shows_deprecated_segments_read_only(superuser_client: Client) -> None:
    legacy = segments.segment_import_legacy(actor=None, scope="input", content="Old.")
    url = f"/admin/promptadmin/segment/{legacy.pk}/change/"
    response = superuser_client.post(url, {"content": "New.", "expected_revision": 1})
    assert response.status_code == 403
    assert (
        superuser_client.post(
            f"/admin/promptadmin/segment/{legacy.pk}/delete/", {"post": "yes"}
        ).status_code
        == 403
    )
    legacy.refresh_from_db()
    assert legacy.content == "Old."


def shown(response: Any) -> list[str]:
    """The messages a (followed) response shows."""
    return [str(message) for message in response.context["messages"]]


def make_object(kind: str) -> Any:
    if kind == "segment":
        return make_segment(scope="core", content="Speak plainly.")
    return {"world": WorldFactory, "entry": EntryFactory}[kind]()


def change_it(obj: Any) -> None:
    """Someone saves the object in the studio or the API."""
    if isinstance(obj, Segment):
        segments.segment_update(actor=None, segment=obj, content="Speak in riddles.")
    else:
        catalog.catalog_update(actor=None, obj=obj, name="Theirs")


KINDS = ["segment", "world", "entry"]


@pytest.mark.parametrize("kind", KINDS)
def test_the_delete_confirmation_carries_the_revision_seen_on_the_change_page(
    superuser_client: Client, kind: str
) -> None:
    obj = make_object(kind)
    change_it(obj)
    base = f"/admin/promptadmin/{kind}/{obj.pk}"
    page = superuser_client.get(f"{base}/change/").content.decode()
    assert f'href="{base}/delete/?revision=2"' in page

    confirmation = superuser_client.get(f"{base}/delete/?revision=2").content.decode()

    assert '<input type="hidden" name="expected_revision" value="2">' in confirmation


@pytest.mark.parametrize("kind", KINDS)
def test_an_admin_delete_from_an_older_copy_is_refused_and_keeps_the_object(
    superuser_client: Client, kind: str
) -> None:
    obj = make_object(kind)
    url = f"/admin/promptadmin/{kind}/{obj.pk}/delete/"
    superuser_client.get(f"{url}?revision=1")
    change_it(obj)

    response = superuser_client.post(url, {"post": "yes", "expected_revision": "1"}, follow=True)

    assert response.redirect_chain[-1][0] == f"/admin/promptadmin/{kind}/{obj.pk}/change/"
    assert shown(response) == [
        f"{type(obj)._meta.verbose_name.capitalize()} was changed by someone else: you saw "
        "revision 1, the current revision is 2. Nothing was deleted: this is the current "
        "version; delete it again if you still want to."
    ]
    assert type(obj).objects.filter(pk=obj.pk, revision=2).exists()


def test_opening_the_delete_confirmation_from_an_older_copy_says_so_at_once(
    superuser_client: Client,
) -> None:
    world = WorldFactory()
    change_it(world)
    response = superuser_client.get(
        f"/admin/promptadmin/world/{world.pk}/delete/?revision=1", follow=True
    )
    assert response.redirect_chain[-1][0] == f"/admin/promptadmin/world/{world.pk}/change/"
    assert "you saw revision 1" in shown(response)[0]


def test_an_admin_delete_that_names_no_revision_deletes_nothing(superuser_client: Client) -> None:
    segment = make_segment(scope="core", content="Speak plainly.")
    response = superuser_client.post(
        f"/admin/promptadmin/segment/{segment.pk}/delete/", {"post": "yes"}, follow=True
    )
    assert shown(response) == [
        "The delete form did not say which revision you saw, so nothing was deleted: "
        "delete it again from this page if you still want to."
    ]
    assert Segment.objects.filter(pk=segment.pk).exists()


@pytest.mark.parametrize("kind", KINDS)
def test_an_admin_delete_of_the_revision_seen_deletes_it(
    superuser_client: Client, kind: str
) -> None:
    obj = make_object(kind)
    response = superuser_client.post(
        f"/admin/promptadmin/{kind}/{obj.pk}/delete/",
        {"post": "yes", "expected_revision": "1"},
        follow=True,
    )
    assert "was deleted successfully" in shown(response)[0]
    assert not type(obj).objects.filter(pk=obj.pk).exists()


def test_a_bulk_delete_carries_each_revision_and_a_stale_one_deletes_nothing(
    superuser_client: Client,
) -> None:
    a, b = make_segment(content="A."), make_segment(content="B.")
    data = {"action": "delete_selected", "_selected_action": [a.pk, b.pk]}
    confirmation = superuser_client.post("/admin/promptadmin/segment/", data).content.decode()
    for obj in (a, b):
        assert f'name="expected_revision_{obj.pk}" value="1"' in confirmation
    change_it(b)

    response = superuser_client.post(
        "/admin/promptadmin/segment/",
        {**data, "post": "yes", f"expected_revision_{a.pk}": "1", f"expected_revision_{b.pk}": "1"},
        follow=True,
    )

    [message] = shown(response)
    assert "you saw revision 1, the current revision is 2" in message
    assert Segment.objects.filter(pk__in=[a.pk, b.pk]).count() == 2

    response = superuser_client.post(
        "/admin/promptadmin/segment/",
        {**data, "post": "yes", f"expected_revision_{a.pk}": "1", f"expected_revision_{b.pk}": "2"},
        follow=True,
    )
    assert "Successfully deleted 2 segments" in shown(response)[0]
    assert not Segment.objects.filter(pk__in=[a.pk, b.pk]).exists()


@pytest.mark.parametrize(
    ("metadata", "says"),
    [
        ('{"a": NaN}', "NaN is not a JSON number"),
        ('{"a": 1e400}', "too large for a 64-bit float"),
        (f'{{"a": {2**64}}}', "integers must fit in 64 bits"),
        ("[" * 100_000 + "]" * 100_000, "Metadata nests objects or arrays too deeply."),
        ('{"a": ' * 2000 + "1" + "}" * 2000, "nest"),
        ('{"a": "\\ud800"}', "lone surrogates"),
        ('{"\\ud800": 1}', "lone surrogates"),
        ('{"a": "\\u0000"}', "NUL"),
        ("[1]", "must be a JSON object"),
        ('{"a": ', "Metadata is not valid JSON: Expecting value (line 1, column 6)."),
    ],
    ids=[
        "nan",
        "1e400",
        "2**64",
        "deep-array",
        "deep-object",
        "surrogate",
        "surrogate-key",
        "nul",
        "array",
        "half-typed",
    ],
)
def test_bad_segment_metadata_in_the_admin_is_a_field_error(
    superuser_client: Client, metadata: str, says: str
) -> None:
    response = superuser_client.post(
        "/admin/promptadmin/segment/add/", segment_form(metadata=metadata)
    )
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert list(errors) == ["metadata"]
    assert says in errors["metadata"][0]
    assert not Segment.objects.exists()


def test_segment_metadata_typed_in_the_admin_is_stored_as_an_object_and_shown_back(
    superuser_client: Client,
) -> None:
    typed = f'{{"source": "wiki", "tags": ["sea", {2**63}]}}'
    response = superuser_client.post(
        "/admin/promptadmin/segment/add/", segment_form(metadata=typed)
    )
    assert response.status_code == 302
    segment = Segment.objects.get()
    assert segment.metadata == {"source": "wiki", "tags": ["sea", 2**63]}
    page = superuser_client.get(f"/admin/promptadmin/segment/{segment.pk}/change/")
    assert "&quot;source&quot;: &quot;wiki&quot;" in page.content.decode()


def entry_form(entry_or_world: Any, *, rulesets: list[Any], cast: list[Any], **fields: Any) -> dict:
    """The admin's entry form with new inline rows (positions as listed)."""
    entry = entry_or_world if isinstance(entry_or_world, Entry) else None
    data: dict[str, Any] = {
        "slug": entry.slug if entry else "bell",
        "name": "Bell",
        "description": "",
        "world": entry.world_id if entry else entry_or_world.pk,
        "ruleset_links-TOTAL_FORMS": str(len(rulesets)),
        "ruleset_links-INITIAL_FORMS": "0",
        "cast_links-TOTAL_FORMS": str(len(cast)),
        "cast_links-INITIAL_FORMS": "0",
        **fields,
    }
    for index, ruleset in enumerate(rulesets):
        data |= {f"ruleset_links-{index}-position": index + 1}
        data |= {f"ruleset_links-{index}-ruleset": ruleset.pk}
    for index, npc in enumerate(cast):
        data |= {f"cast_links-{index}-position": index + 1, f"cast_links-{index}-npc": npc.pk}
        data |= {f"cast_links-{index}-tier": 1}
    return data


def test_an_admin_entry_save_of_details_rulesets_and_cast_makes_one_revision(
    superuser_client: Client,
) -> None:
    entry = EntryFactory(name="Bell")
    ruleset, npc = RulesetFactory(), NPCFactory()
    data = entry_form(entry, rulesets=[ruleset], cast=[npc], name="The Bell", expected_revision=1)

    response = superuser_client.post(f"/admin/promptadmin/entry/{entry.pk}/change/", data)

    assert response.status_code == 302
    entry.refresh_from_db()
    assert (entry.name, entry.ordered_rulesets(), entry.revision) == ("The Bell", [ruleset], 2)
    assert [link.npc for link in entry.ordered_cast()] == [npc]
    assert entry.history.count() == 2


def test_an_entry_added_in_the_admin_with_rulesets_and_cast_is_revision_1(
    superuser_client: Client,
) -> None:
    world, ruleset, npc = WorldFactory(), RulesetFactory(), NPCFactory()
    data = entry_form(world, rulesets=[ruleset], cast=[npc])

    response = superuser_client.post("/admin/promptadmin/entry/add/", data)

    assert response.status_code == 302
    entry = Entry.objects.get(slug="bell")
    assert (entry.revision, entry.history.count()) == (1, 1)
    assert entry.ordered_rulesets() == [ruleset]


def test_a_cast_over_the_limit_in_the_admin_is_refused_on_the_page(
    superuser_client: Client,
) -> None:
    entry = EntryFactory()
    npcs = [NPCFactory() for _ in range(catalog.MAX_CAST + 1)]
    data = entry_form(entry, rulesets=[], cast=npcs, expected_revision=1)

    response = superuser_client.post(f"/admin/promptadmin/entry/{entry.pk}/change/", data)

    assert response.status_code == 200
    assert f"A cast lists at most {catalog.MAX_CAST} NPCs" in response.content.decode()
    entry.refresh_from_db()
    assert (entry.revision, entry.ordered_cast()) == (1, [])
