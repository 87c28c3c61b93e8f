"""Studio pages of deprecated content: upload an export, review, copy, dismiss, undo, bulk."""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from promptadmin.content.models import ImportJob, Segment
from promptadmin.content.services import deprecated, segments
from promptadmin.studio.views import deprecated as views
from tests import legacy_exports as ex
from tests.promptadmin.studio.conftest import user_with_role

pytestmark = pytest.mark.usefixtures("content")

REVIEW = reverse("studio:deprecated_review")
IMPORT = reverse("studio:legacy_import")


@pytest.fixture
def admin(client_as: Callable[[str], Client]) -> Client:
    return client_as("admin")


def legacy(scope: str = "player", content: str = "Old text.", ref: str | None = None) -> Segment:
    return segments.segment_import_legacy(
        actor=None,
        scope=scope,
        content=content,
        metadata={"original_ref": ref, "original_id": "77"} if ref else {},
    )


def text(response: Any) -> str:
    return html.unescape(response.content.decode())


@pytest.fixture
def upload(admin: Client, django_capture_on_commit_callbacks: Any) -> Callable[..., Any]:
    """Post the import form; once accepted, let the job run (in process, on commit) and
    open its page."""

    def post(data: dict[str, Any]) -> Any:
        with django_capture_on_commit_callbacks(execute=True):
            response = admin.post(IMPORT, data)
        if response.status_code != 302:
            return response
        assert response["Location"].startswith(f"{IMPORT}")
        return admin.get(response["Location"])

    return post


@pytest.mark.parametrize("role", ["viewer", "author"])
def test_the_pages_and_actions_are_for_admins_only(
    client_as: Callable[[str], Client], role: str
) -> None:
    client = client_as(role)
    source = legacy()
    assert client.get(REVIEW).status_code == 403
    assert client.get(IMPORT).status_code == 403
    for name, data in (
        ("deprecated_copy", {f"s{source.pk}-scope": "core", f"s{source.pk}-content": "x"}),
        ("deprecated_dismiss", {"reason": "x"}),
        ("deprecated_undo", {}),
    ):
        assert client.post(reverse(f"studio:{name}", args=[source.pk]), data).status_code == 403
    assert client.post(reverse("studio:deprecated_bulk"), {}).status_code == 403
    assert Segment.objects.count() == 8 and deprecated.status_of(source) == "pending"
    assert "Deprecated</a>" not in text(client.get(reverse("studio:dashboard")))


def test_an_admin_sees_the_nav_link_and_the_dashboard_panel(admin: Client) -> None:
    legacy()
    page = text(admin.get(reverse("studio:dashboard")))
    assert f'href="{REVIEW}"' in page
    assert "Deprecated content" in page and "Review deprecated segments" in page
    assert admin.get(reverse("studio:dashboard")).context["deprecated"] == {
        "pending": 1,
        "copied": 0,
        "dismissed": 0,
    }


def test_the_import_page_says_on_its_buttons_whether_it_writes(admin: Client) -> None:
    """A ticked "Dry run" box beside a button labelled "Import" left writers unsure."""
    page = text(admin.get(IMPORT))
    assert (
        '<button type="submit" class="btn btn-primary" name="dry_run" value="on">Run dry run'
        in (page)
    )
    assert '<button type="submit" class="btn" name="dry_run" value="">Import</button>' in page
    assert 'type="checkbox" name="dry_run"' not in page


def test_uploading_an_export_dry_run_then_for_real(upload: Callable[..., Any]) -> None:
    rows = [
        {"id": 1, "scope": "player", "ref_id": "drowned-bell", "content": "Salvager."},
        {"id": 2, "scope": "world", "ref_id": "iron-coast", "content": "Rust."},
        {"id": 3, "scope": "weather", "content": "Rain."},
    ]
    data = ex.as_csv(rows)
    before = Segment.objects.count()
    response = upload({"file": SimpleUploadedFile("old.csv", data), "dry_run": "on"})
    page = text(response)
    # A dry run refuses nothing: it says an import would be refused.
    assert response.status_code == 200 and "Refused" not in page
    assert "Dry run: an import of this file would be refused" in page
    assert "1 invalid row: importing this file would write nothing." in page
    assert "Unknown scope 'weather'" in page and Segment.objects.count() == before
    response = upload({"file": SimpleUploadedFile("old.csv", data), "skip_invalid": "on"})
    assert response.status_code == 200 and "Imported" in text(response)
    assert Segment.objects.filter(legacy_id__in=["1", "2"]).count() == 2
    # The form page lists the imports.
    assert text(upload({})).count("old.csv</a>") == 2


def test_an_unreadable_upload_is_named(upload: Callable[..., Any]) -> None:
    page = text(upload({"file": SimpleUploadedFile("old.json", b"[{")}))
    assert "Failed: nothing was imported" in page and "not valid JSON" in page
    response = upload({"file": SimpleUploadedFile("old.json", b'{"id": 1}')})
    assert response.status_code == 400
    assert "must be an array of rows" in response.context["form"].errors["file"][0]
    response = upload({"file": SimpleUploadedFile("old.txt", b"[]")})
    assert "choose JSON or CSV" in response.context["form"].errors["format"][0]


def test_an_upload_over_the_limit_is_a_413_naming_it(
    upload: Callable[..., Any], settings: Any
) -> None:
    settings.IMPORT_MAX_BYTES = 1000
    response = upload({"file": SimpleUploadedFile("big.csv", ex.as_csv(ex.generated(200)))})
    assert response.status_code == 413
    assert "The file is over 1000\xa0bytes, the most an import takes." in text(response)
    assert not ImportJob.objects.exists()


def test_an_upload_with_csrf_checked_as_browsers_send_it_is_imported_or_refused(
    django_capture_on_commit_callbacks: Any, settings: Any
) -> None:
    """The CSRF check reads the form: it must run after the upload limit is installed,
    and still run (the test client skips it unless asked, a browser does not)."""
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user_with_role("admin"))
    form = browser.get(IMPORT)
    token = form.context["csrf_token"]
    data = ex.as_csv([{"id": 1, "scope": "player", "content": "Salvager."}])
    with django_capture_on_commit_callbacks(execute=True):
        response = browser.post(
            IMPORT,
            {"csrfmiddlewaretoken": token, "file": SimpleUploadedFile("old.csv", data)},
        )
    assert response.status_code == 302 and ImportJob.objects.count() == 1
    # Without the token: refused, nothing stored.
    refused = browser.post(IMPORT, {"file": SimpleUploadedFile("old.csv", data)})
    assert refused.status_code == 403 and ImportJob.objects.count() == 1
    # Over the limit, with the token: the 413, not a server error.
    settings.IMPORT_MAX_BYTES = 1000
    big = SimpleUploadedFile("big.csv", ex.as_csv(ex.generated(200)))
    response = browser.post(IMPORT, {"csrfmiddlewaretoken": token, "file": big})
    assert response.status_code == 413 and ImportJob.objects.count() == 1


def test_the_job_page_shows_a_progress_bar_that_follows_the_import(
    admin: Client, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = admin.post(
            IMPORT, {"file": SimpleUploadedFile("old.csv", ex.as_csv(ex.generated(5)))}
        )
    page = admin.get(response["Location"])
    body = text(page)
    assert "Waiting to start" in body and '<progress max="100" value="0.0"' in body
    assert 'hx-trigger="every 1s"' in body
    for callback in queued:
        callback()
    fragment = admin.get(response["Location"], HTTP_HX_REQUEST="true")
    body = text(fragment)
    assert body.lstrip().startswith('<section id="import-job"') and "<html" not in body
    assert "Imported" in body and "hx-trigger" not in body  # done: no more polling


def test_an_upload_with_ids_keys_dates_and_numbers_that_cannot_be_stored_reports_them(
    upload: Callable[..., Any],
) -> None:
    rows = [
        {"id": "a\x00b", "scope": "core", "content": "A NUL in the id."},
        {"id": "a\ud800", "scope": "core", "content": "A lone surrogate in the id."},
        {"id": 3, "scope": "core", "content": "A key.", "metadata": {"k\ud800": 1}},
        {"id": 4, "scope": "rng", "content": "Far.", "created_at": "0001-01-01T00:00:00+05:00"},
    ]
    huge = '{"id": 5, "scope": "core", "content": "x", "metadata": {"n": ' + "9" * 5000 + "}}"
    data = ex.as_json(rows)[:-3] + b",\n" + huge.encode() + b"\n]\n"
    before = Segment.objects.count()
    response = upload({"file": SimpleUploadedFile("old.json", data)})
    assert response.status_code == 200
    page = text(response)
    assert "Refused: nothing was imported" in page
    for words in (
        "a\\u0000b</td><td>Id contains a NUL byte",
        "a\\ud800</td><td>Id contains a lone surrogate",
        "Metadata cannot be stored at k\\ud800: key:",
        "Created_at '0001-01-01T00:00:00+05:00' is outside",
        '<td class="num">6</td><td class="num">5</td><td class="mono">5</td>',
        "The row holds an integer of 5000 digits",
    ):
        assert words in page, words
    assert Segment.objects.count() == before


def test_an_upload_maps_legacy_references_with_a_refs_file(upload: Callable[..., Any]) -> None:
    rows = [
        {"id": 1, "scope": "world", "ref_id": "7", "content": "Mapped."},
        {"id": 2, "scope": "player", "ref_id": "12", "content": "Player of the bell."},
    ]
    refs = b'{"7": "iron-coast", "12": "entry:drowned-bell"}'
    response = upload(
        {
            "file": SimpleUploadedFile("old.json", ex.as_json(rows)),
            "refs": SimpleUploadedFile("refs.json", refs),
        }
    )
    assert response.status_code == 200 and "Imported" in text(response)
    assert Segment.objects.get(legacy_id="1").world.slug == "iron-coast"
    assert Segment.objects.get(legacy_id="2").metadata["original_ref"] == "entry:drowned-bell"


@pytest.mark.parametrize(
    ("refs", "words"),
    [
        (b'{"7": ', "The refs file is not valid JSON"),
        (b'{"7": ["iron-coast"]}', "The refs file must be a JSON object from legacy id to slug"),
        (b'{"7": "iron\\u0000coast"}', "The refs file: the slug of '7' contains a NUL"),
        (b'{"7": ' + b"1" * 5000 + b"}", "The refs file holds an integer of 5000 digits"),
    ],
)
def test_a_refs_file_that_is_not_a_mapping_of_slugs_is_named_on_its_field(
    admin: Client, refs: bytes, words: str
) -> None:
    rows = [{"id": 1, "scope": "world", "ref_id": "7", "content": "Mapped."}]
    response = admin.post(
        IMPORT,
        {
            "file": SimpleUploadedFile("old.json", ex.as_json(rows)),
            "refs": SimpleUploadedFile("refs.json", refs),
        },
    )
    assert response.status_code == 400
    assert response.context["form"].errors["refs"][0].startswith(words)
    assert not Segment.objects.filter(legacy_id="1").exists()


def test_the_review_lists_filters_and_suggests(
    admin: Client, django_assert_max_num_queries: Any
) -> None:
    player = legacy(ref="drowned-bell")
    legacy(scope="rng", content="Roll a d20.")
    for n in range(10):
        legacy(scope="input", ref=f"missing-{n}")
    # The same for 2 rows or 25; the release labels are read once (their version and map).
    with django_assert_max_num_queries(16):
        response = admin.get(REVIEW)
    page = text(response)
    assert "Suggested: entry of <bdi>The Drowned Bell</bdi> (drowned-bell)" in page
    # The copy target's picker starts at the suggestion (labelled without a query per row).
    assert f'name="s{player.pk}-object" value="entry:drowned-bell"' in response.content.decode()
    assert 'value="The Drowned Bell (drowned-bell)"' in response.content.decode()
    assert 'Original id <span class="mono"><bdi>77</bdi></span>' in response.content.decode()
    assert [i["segment"] for i in admin.get(REVIEW, {"scope": "player"}).context["items"]] == [
        player
    ]
    assert [i["segment"].content for i in admin.get(REVIEW, {"q": "d20"}).context["items"]] == [
        "Roll a d20."
    ]


def test_copy_with_edited_text_then_undo(admin: Client, content: dict) -> None:
    source = legacy(ref="drowned-bell")
    prefix = f"s{source.pk}"
    response = admin.post(
        reverse("studio:deprecated_copy", args=[source.pk]),
        {
            f"{prefix}-scope": "world",
            f"{prefix}-object": "world:iron-coast",
            f"{prefix}-content": "The player salvages.",
            f"{prefix}-active": "on",
            "next": f"{REVIEW}?status=pending",
        },
    )
    assert response["Location"] == f"{REVIEW}?status=pending"
    copy = Segment.objects.get(metadata__copied_from=source.pk)
    assert (copy.world, copy.content, copy.active) == (
        content["world"],
        "The player salvages.",
        True,
    )
    page = text(admin.get(REVIEW, {"status": "copied"}))
    assert f"Copied to #{copy.pk}" in page.replace("</a>", "").replace(
        f'<a href="{reverse("studio:segment_edit", args=[copy.pk])}">', ""
    )
    admin.post(reverse("studio:deprecated_undo", args=[source.pk]))
    copy.refresh_from_db()
    assert not copy.active and deprecated.status_of(Segment.objects.get(pk=source.pk)) == "pending"


def test_a_copy_to_the_wrong_kind_of_object_says_so(admin: Client) -> None:
    source = legacy()
    prefix = f"s{source.pk}"
    response = admin.post(
        reverse("studio:deprecated_copy", args=[source.pk]),
        {
            f"{prefix}-scope": "npc",
            f"{prefix}-object": "world:iron-coast",
            f"{prefix}-content": "x",
        },
        follow=True,
    )
    assert "Choose the NPC the copy belongs to." in text(response)
    assert not Segment.objects.filter(metadata__copied_from=source.pk).exists()


def test_dismiss_needs_a_reason_and_a_redirect_stays_on_the_site(admin: Client) -> None:
    source = legacy()
    url = reverse("studio:deprecated_dismiss", args=[source.pk])
    response = admin.post(url, {"reason": "", "next": "https://evil.example/"})
    assert response["Location"] == REVIEW
    assert deprecated.status_of(Segment.objects.get(pk=source.pk)) == "pending"
    admin.post(url, {"reason": "The caller sends it now."})
    source.refresh_from_db()
    assert source.metadata["review_reason"] == "The caller sends it now."


def test_bulk_dismiss_acts_on_the_filtered_selection(admin: Client) -> None:
    a, b = legacy(scope="rng"), legacy(scope="rng")
    other = legacy(scope="input")
    response = admin.post(
        reverse("studio:deprecated_bulk"),
        {"bulk-action": "dismiss", "bulk-reason": "Dice are live.", "scope": "rng"},
        follow=True,
    )
    assert "Dismissed 2 segments." in text(response)
    statuses = {
        s.pk: deprecated.status_of(s) for s in Segment.objects.filter(scope__in=["rng", "input"])
    }
    assert statuses == {a.pk: "dismissed", b.pk: "dismissed", other.pk: "pending"}


def test_bulk_copy_to_suggestions_skips_a_row_without_one_and_says_so(admin: Client) -> None:
    suggested, unsuggested = legacy(ref="drowned-bell"), legacy()
    response = admin.post(reverse("studio:deprecated_bulk"), {"bulk-action": "copy"}, follow=True)
    assert (
        f"Copied 1 segment. Skipped 1: #{unsuggested.pk} has no obvious target: choose a scope "
        "and object to copy it to."
    ) in text(response)
    copy = Segment.objects.get(metadata__copied_from=suggested.pk)
    assert (copy.scope, copy.entry.slug) == ("entry", "drowned-bell")
    assert deprecated.status_of(Segment.objects.get(pk=unsuggested.pk)) == "pending"


def test_bulk_dismiss_over_a_selection_with_a_copied_row_skips_it_and_says_why(
    admin: Client,
) -> None:
    copied, a, b = legacy(scope="rng"), legacy(scope="rng"), legacy(scope="rng")
    deprecated.deprecated_copy(actor=None, segment=copied, scope="core", ref=None)
    response = admin.post(
        reverse("studio:deprecated_bulk"),
        {"bulk-action": "dismiss", "bulk-reason": "Dice are live.", "scope": "rng"},
        follow=True,
    )
    assert (
        f"Dismissed 2 segments. Skipped 1: #{copied.pk} was copied: undo the copy before "
        "dismissing it."
    ) in text(response)
    statuses = [deprecated.status_of(Segment.objects.get(pk=row.pk)) for row in (copied, a, b)]
    assert statuses == ["copied", "dismissed", "dismissed"]


def test_bulk_undo_puts_the_filtered_selection_back_to_pending(admin: Client) -> None:
    copied, dismissed, pending = legacy(), legacy(), legacy()
    copy = deprecated.deprecated_copy(
        actor=None, segment=copied, scope="core", ref=None, active=True
    )
    deprecated.deprecated_dismiss(actor=None, segment=dismissed, reason="No.")
    page = text(admin.get(REVIEW))
    assert '<option value="undo">Undo</option>' in page
    response = admin.post(reverse("studio:deprecated_bulk"), {"bulk-action": "undo"}, follow=True)
    assert (
        f"Put 2 segments back to pending. Skipped 1: #{pending.pk} is pending: there is "
        "nothing to undo."
    ) in text(response)
    rows = Segment.objects.filter(pk__in=[copied.pk, dismissed.pk, pending.pk])
    assert [deprecated.status_of(row) for row in rows] == ["pending"] * 3
    copy.refresh_from_db()
    assert not copy.active


def test_the_skipped_rows_are_grouped_by_reason_and_long_lists_shortened(
    admin: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(views, "SKIPPED_IDS_SHOWN", 2)
    rows = [legacy(scope="input") for _ in range(4)]
    response = admin.post(
        reverse("studio:deprecated_bulk"), {"bulk-action": "undo", "scope": "input"}, follow=True
    )
    first, second = rows[0].pk, rows[1].pk
    assert (
        f"Put 0 segments back to pending. Skipped 4: #{first}, #{second} and 2 more each is "
        "pending: there is nothing to undo."
    ) in text(response)


def test_bulk_acts_on_every_matching_row_not_only_the_first_thousand(
    admin: Client, django_assert_max_num_queries: Any
) -> None:
    # Made in bulk (a thousand rows through the service would take a while); the review
    # reads them like imported rows.
    Segment.objects.bulk_create(
        Segment(scope="input", content=f"Input {n}.", active=False) for n in range(1001)
    )
    page = text(admin.get(REVIEW, {"scope": "input"}))
    # Past the list's count cap, the bulk action says it takes them all, without a number.
    assert "Apply to all of them" in page and "Every matching segment is processed" in page
    with django_assert_max_num_queries(40):  # three batches of 500, not a query per row
        response = admin.post(
            reverse("studio:deprecated_bulk"),
            {"bulk-action": "dismiss", "bulk-reason": "Sent by the caller.", "scope": "input"},
        )
    assert response.status_code == 302
    dismissed = deprecated.deprecated_segments(scope="input", status="dismissed")
    assert dismissed.count() == 1001
    assert not deprecated.deprecated_segments(status="pending").exists()


def test_the_editor_shows_a_deprecated_segment_read_only(admin: Client) -> None:
    source = legacy()
    page = text(admin.get(reverse("studio:segment_edit", args=[source.pk])))
    assert "is read-only here" in page and "deprecated content page" in page
    assert ">Save</button>" not in page and "Delete segment" not in page
