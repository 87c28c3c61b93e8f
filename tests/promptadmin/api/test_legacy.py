"""The API of legacy imports and deprecated segments: contract, permissions, errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from promptadmin.content.models import ImportChunk, ImportJob, Segment
from promptadmin.content.services import deprecated, legacy_import, segments
from promptadmin.content.services.api_keys import api_key_create
from tests import legacy_exports as ex
from tests.factories import EntryFactory, NPCFactory, RulesetFactory, WorldFactory
from tests.promptadmin.api.conftest import codes, errors, key_client, person, session_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def game() -> None:
    world = WorldFactory(slug="iron-coast")
    EntryFactory(slug="drowned-bell", world=world)
    NPCFactory(slug="marta-vell")
    RulesetFactory(slug="mystery")


@pytest.fixture
def admin_key(db: Any) -> str:
    return api_key_create(actor=None, name="migrations", scope="admin")[1]


@pytest.fixture
def migrator(admin_key: str) -> APIClient:
    return key_client(admin_key)


def upload(client: APIClient, data: bytes, name: str, **fields: Any) -> Any:
    """POST an export: the answer (202 and the job, once accepted)."""
    body = {"file": SimpleUploadedFile(name, data), **fields}
    return client.post("/api/v1/imports/", body, format="multipart")


@pytest.fixture
def imports(
    migrator: APIClient, django_capture_on_commit_callbacks: Any
) -> Callable[..., dict[str, Any]]:
    """Upload an export and let its job run (in process, once the upload is committed):
    the job as ``GET /api/v1/imports/{id}`` then answers."""

    def run(data: bytes, name: str, **fields: Any) -> dict[str, Any]:
        with django_capture_on_commit_callbacks(execute=True):
            accepted = upload(migrator, data, name, **fields)
        assert accepted.status_code == 202, accepted.content
        job = migrator.get(accepted.json()["url"])
        assert job.status_code == 200
        return dict(job.json())

    return run


def legacy(scope: str = "player", ref: str | None = None) -> Segment:
    return segments.segment_import_legacy(
        actor=None,
        scope=scope,
        content="Old text.",
        metadata={"original_ref": ref, "original_id": "L1"} if ref else {},
    )


@pytest.mark.usefixtures("game")
def test_an_upload_is_accepted_as_a_job_whose_url_gives_status_progress_and_report(
    migrator: APIClient, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=False) as queued:
        accepted = upload(migrator, ex.as_csv(ex.VALID), "segments.csv")
    assert accepted.status_code == 202
    body = accepted.json()
    assert set(body) == {"id", "status", "url"} and body["status"] == "queued"
    assert accepted["Location"] == body["url"] == f"http://testserver/api/v1/imports/{body['id']}"
    job = migrator.get(body["url"]).json()
    assert job["status"] == "queued" and job["report"] is None and job["error"] is None
    assert job["progress"] == {
        "rows_read": 0,
        "rows_total": None,
        "bytes_read": 0,
        "bytes_total": len(ex.as_csv(ex.VALID)),
        "percent": 0.0,
    }
    for callback in queued:
        callback()  # the upload commits: the job runs (in process here)
    job = migrator.get(body["url"]).json()
    assert job["status"] == "done" and job["file"] == "segments.csv" and job["format"] == "csv"
    assert job["report"]["created"] == ex.CREATED
    total = len(ex.VALID)
    assert (job["progress"]["rows_read"], job["progress"]["rows_total"]) == (total, total)
    assert job["progress"]["percent"] == 100.0
    assert job["started"] and job["finished"]
    assert not ImportChunk.objects.exists()  # the upload is gone once imported


@pytest.mark.usefixtures("game")
def test_import_dry_run_then_real_run_then_again(
    imports: Callable[..., dict[str, Any]],
) -> None:
    data = ex.as_csv(ex.VALID)
    dry = imports(data, "segments.csv", dry_run="true")
    assert dry["status"] == "done" and dry["report"]["dry_run"] is True
    assert not Segment.objects.exists()
    body = imports(data, "segments.csv")["report"]
    assert {"dry_run", "created", "unchanged", "conflicts", "errors"} <= set(body)
    assert body["created"] == ex.CREATED and body["unchanged"] == 0
    again = imports(data, "segments.csv")["report"]
    assert (again["created"], again["unchanged"], again["conflicts"]) == ({}, 10, [])


@pytest.mark.usefixtures("game")
def test_an_invalid_row_refuses_the_import_with_the_whole_report(
    imports: Callable[..., dict[str, Any]],
) -> None:
    rows = [*ex.VALID, *(row for row, _ in ex.DIRTY)]
    body = imports(ex.as_json(rows), "export.json")["report"]
    assert body["refused"] is True and len(body["errors"]) == len(ex.DIRTY)
    assert set(body["errors"][0]) == {"line", "row", "id", "reason"}
    assert not Segment.objects.exists()
    skipped = imports(ex.as_json(rows), "export.json", skip_invalid="true")
    assert skipped["report"]["refused"] is False and Segment.objects.count() == len(ex.VALID)


def test_an_unreadable_file_or_format_is_named(
    migrator: APIClient, imports: Callable[..., dict[str, Any]]
) -> None:
    job = imports(b"[{", "export.json")
    assert job["status"] == "failed" and "not valid JSON" in job["error"]
    assert job["report"] is None
    # What a first look at the file shows is refused at once.
    for data, name, words in (
        (b'{"id": 1}', "export.json", "must be an array of rows"),
        (b"id,content\n1,x\n", "export.csv", "lacks the column(s) scope"),
        (b"", "export.csv", "empty"),
    ):
        response = upload(migrator, data, name)
        assert response.status_code == 400 and words in errors(response)["file"], data
    response = upload(migrator, b"[]", "export.txt")
    assert "json or csv" in errors(response)["format"]
    response = migrator.post("/api/v1/imports/", {}, format="multipart")
    assert "file" in errors(response)
    assert not ImportJob.objects.filter(status="queued").exists()


def test_an_upload_over_the_limit_is_a_413_before_anything_is_stored(
    migrator: APIClient, settings: Any
) -> None:
    settings.IMPORT_MAX_BYTES = 1000
    data = ex.as_csv(ex.generated(200))  # some 20 KB: over, within what a form may add
    response = upload(migrator, data, "big.csv")
    assert response.status_code == 413
    assert codes(response) == ["too_large"] and "IMPORT_MAX_BYTES" in errors(response)["file"]
    assert not ImportJob.objects.exists() and not ImportChunk.objects.exists()


def test_an_announced_size_over_the_limit_is_a_413_without_reading_the_body(
    migrator: APIClient,
) -> None:
    # The body is not what the header says: had it been read, it would be a 400.
    response = migrator.generic(
        "POST",
        "/api/v1/imports/",
        b"not even multipart",
        content_type="multipart/form-data; boundary=x",
        CONTENT_LENGTH=str(10 * 2**30),
    )
    assert response.status_code == 413 and codes(response) == ["too_large"]


def test_an_unknown_job_is_a_404_and_jobs_are_for_admins(
    migrator: APIClient, imports: Callable[..., dict[str, Any]]
) -> None:
    assert migrator.get("/api/v1/imports/4242").status_code == 404
    job = imports(ex.as_csv(ex.generated(2)), "export.csv")
    writer = key_client(api_key_create(actor=None, name="w", scope="write")[1])
    assert writer.get(job["url"]).status_code == 403
    assert upload(writer, b"[]", "export.json").status_code == 403


HOSTILE_ROWS = [
    {"id": "a\x00b", "scope": "core", "content": "A NUL in the id."},
    {"id": "a\ud800", "scope": "core", "content": "A lone surrogate in the id."},
    {"id": 3, "scope": "core", "content": "A key.", "metadata": {"k\ud800": 1}},
    {"id": 4, "scope": "rng", "content": "Far.", "created_at": "9999-12-31T23:59:59-05:00"},
    {"id": 5, "scope": "core", "content": "Fine."},
]


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_ids_keys_and_dates_that_cannot_be_stored_are_reported_not_a_500(
    migrator: APIClient, imports: Callable[..., dict[str, Any]], fmt: str
) -> None:
    # A UTF-8 CSV file cannot hold a lone surrogate; JSON can, as a \\u escape.
    rows = HOSTILE_ROWS if fmt == "json" else [HOSTILE_ROWS[i] for i in (0, 3, 4)]
    data = ex.as_json(rows) if fmt == "json" else ex.as_csv(rows)
    job = imports(data, f"hostile.{fmt}", skip_invalid="true")
    assert job["status"] == "done", job
    reasons = {e["id"]: e["reason"] for e in job["report"]["errors"]}
    assert reasons["a\\u0000b"].startswith("Id contains a NUL byte")
    assert reasons["4"].startswith("Created_at '9999-12-31T23:59:59-05:00' is outside")
    if fmt == "json":
        assert reasons["a\\ud800"].startswith("Id contains a lone surrogate")
        assert reasons["3"].startswith("Metadata cannot be stored at k\\ud800")
    assert [s.legacy_id for s in Segment.objects.all()] == ["5"]
    assert migrator.get("/api/v1/deprecated-segments/").status_code == 200


def test_an_integer_too_long_to_read_is_reported_for_its_row(
    imports: Callable[..., dict[str, Any]],
) -> None:
    huge = "9" * 5000
    data = f'[{{"id": 1, "scope": "core", "content": "x", "metadata": {{"n": {huge}}}}}]'
    report = imports(data.encode(), "export.json")["report"]
    assert report["refused"] is True
    [error] = report["errors"]
    assert (error["line"], error["row"], error["id"]) == (1, 1, "1")
    assert "integer of 5000 digits" in error["reason"]


@pytest.mark.usefixtures("game")
def test_an_import_maps_legacy_references_with_a_refs_file(
    imports: Callable[..., dict[str, Any]],
) -> None:
    rows = [
        {"id": 1, "scope": "world", "ref_id": "7", "content": "Mapped."},
        {"id": 2, "scope": "player", "ref_id": "12", "content": "Player of the bell."},
    ]
    refs = SimpleUploadedFile("refs.json", b'{"7": "iron-coast", "12": "entry:drowned-bell"}')
    job = imports(ex.as_json(rows), "export.json", refs=refs)
    assert job["report"]["created"] == {"player": 1, "world": 1}, job
    assert Segment.objects.get(legacy_id="1").world.slug == "iron-coast"
    assert Segment.objects.get(legacy_id="2").metadata["original_ref"] == "entry:drowned-bell"


@pytest.mark.parametrize(
    ("refs", "words"),
    [
        (b'{"7": "iron-coast",', "The refs file is not valid JSON"),
        (b'["iron-coast"]', "The refs file must be a JSON object from legacy id to slug"),
        (b'{"7": "iron\\u0000coast"}', "The refs file: the slug of '7' contains a NUL"),
        (b'{"7": "iron\\ud800"}', "The refs file: the slug of '7' contains a lone surrogate"),
        (b'{"7": ' + b"1" * 5000 + b"}", "The refs file holds an integer of 5000 digits"),
        (b"[" * 100_000 + b"]" * 100_000, "The refs file nests too deeply."),
        (b"\xff", "The refs file is not UTF-8"),
    ],
)
@pytest.mark.usefixtures("game")
def test_a_refs_file_that_is_not_a_mapping_of_slugs_is_a_400_naming_refs(
    migrator: APIClient, refs: bytes, words: str
) -> None:
    rows = [{"id": 1, "scope": "world", "ref_id": "7", "content": "Mapped."}]
    response = upload(
        migrator, ex.as_json(rows), "export.json", refs=SimpleUploadedFile("refs.json", refs)
    )
    assert response.status_code == 400
    assert errors(response)["refs"].startswith(words)
    assert not Segment.objects.exists()


def test_the_schema_documents_the_job_the_refs_file_and_the_row_of_a_problem(
    migrator: APIClient,
) -> None:
    schema = migrator.get("/api/v1/schema/", {"format": "json"}).json()
    operation = schema["paths"]["/api/v1/imports/"]["post"]
    assert {"202", "400", "403", "413"} <= set(operation["responses"])
    assert not {"200", "201"} & set(operation["responses"])
    request = operation["requestBody"]["content"]["multipart/form-data"]["schema"]["$ref"]
    components = schema["components"]["schemas"]
    fields = components[request.rsplit("/", 1)[1]]["properties"]
    assert fields["refs"]["format"] == "binary"
    assert "refs" not in components[request.rsplit("/", 1)[1]].get("required", [])
    problem = components["ImportProblem"]["properties"]
    assert set(problem) == {"line", "row", "id", "reason"}
    job = components["ImportJob"]["properties"]
    assert {"id", "status", "url", "progress", "report", "error"} <= set(job)
    assert "/api/v1/imports/{id}" in schema["paths"]


def test_an_import_that_fails_unexpectedly_writes_nothing_and_says_so(
    imports: Callable[..., dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = legacy_import._Run.batch

    def written_then_broken(self: Any, rows: Any) -> None:
        real(self, rows)
        raise RuntimeError("the disk is on fire")

    monkeypatch.setattr(legacy_import._Run, "batch", written_then_broken)
    job = imports(ex.as_json(ex.generated(3)), "export.json")
    assert job["status"] == "failed" and "nothing was written" in job["error"]
    assert not Segment.objects.exists()


def unrenderable(segment: Segment) -> Segment:
    segment.metadata = {"n": 2**64}  # what the renderer cannot write
    return segment


@pytest.mark.parametrize("action", ["copy", "dismiss", "undo", "bulk"])
def test_a_review_action_whose_answer_cannot_be_rendered_is_not_committed(
    migrator: APIClient, monkeypatch: pytest.MonkeyPatch, action: str
) -> None:
    source = legacy()
    if action == "undo":
        deprecated.deprecated_dismiss(actor=None, segment=source, reason="Old.")
    service = {"bulk": "deprecated_bulk"}.get(action, f"deprecated_{action}")
    real = getattr(deprecated, service)

    def act_unrenderable(**kwargs: Any) -> Any:
        result = real(**kwargs)
        if action == "bulk":
            unrenderable(result.done[0])
        else:
            unrenderable(result)
        return result

    monkeypatch.setattr(deprecated, service, act_unrenderable)
    before = {(s.pk, s.revision, str(s.metadata)) for s in Segment.objects.all()}
    url = f"/api/v1/deprecated-segments/{source.pk}/{action}"
    body: dict[str, Any] = {"copy": {"scope": "core"}, "dismiss": {"reason": "Old."}}.get(
        action, {}
    )
    if action == "bulk":
        url, body = BULK, {"action": "dismiss", "ids": [source.pk], "reason": "Old."}
    response = migrator.post(url, body, format="json")
    assert response.status_code == 500 and response.json()["type"] == "server_error"
    assert {(s.pk, s.revision, str(s.metadata)) for s in Segment.objects.all()} == before


@pytest.mark.parametrize("who", ["viewer", "author", "read", "write", None])
def test_only_admins_and_admin_keys_may_migrate(who: str | None) -> None:
    source = legacy()
    if who in ("read", "write"):
        client = key_client(api_key_create(actor=None, name="k", scope=who)[1])
    elif who is None:
        client = APIClient()
    else:
        client = session_client(person(who))
    calls = [
        client.get("/api/v1/deprecated-segments/"),
        client.post(f"/api/v1/deprecated-segments/{source.pk}/dismiss", {"reason": "x"}),
        client.post(f"/api/v1/deprecated-segments/{source.pk}/copy", {"scope": "core"}),
        client.post(f"/api/v1/deprecated-segments/{source.pk}/undo"),
        client.post("/api/v1/deprecated-segments/bulk", {"action": "dismiss", "ids": [1]}),
        upload(client, b"[]", "x.json"),
    ]
    expected = 401 if who is None else 403
    assert [r.status_code for r in calls] == [expected] * len(calls)
    if who in ("write", "author"):
        assert "admin" in calls[0].json()["errors"][0]["detail"]
    assert Segment.objects.get(pk=source.pk).metadata == {}


def test_admins_signed_in_may_migrate() -> None:
    source = legacy()
    client = session_client(person("admin"))
    response = client.post(
        f"/api/v1/deprecated-segments/{source.pk}/dismiss", {"reason": "Gone."}, format="json"
    )
    assert response.status_code == 200 and response.json()["status"] == "dismissed"


def test_the_list_has_the_documented_fields_and_filters(
    migrator: APIClient, django_assert_max_num_queries: Any
) -> None:
    EntryFactory(slug="drowned-bell")
    rows = [legacy(ref="drowned-bell"), legacy(scope="rng"), legacy(scope="input")]
    with django_assert_max_num_queries(9):
        response = migrator.get("/api/v1/deprecated-segments/")
    body = response.json()
    assert body["count"] == 3
    first = body["results"][0]
    assert set(first) == {
        "id",
        "scope",
        "title",
        "content",
        "metadata",
        "original_id",
        "original_ref",
        "status",
        "copies",
        "reason",
        "suggested",
    }
    assert (first["original_id"], first["original_ref"], first["status"], first["copies"]) == (
        "L1",
        "drowned-bell",
        "pending",
        [],
    )
    assert first["suggested"] == {"scope": "entry", "ref": "drowned-bell"}
    rng = migrator.get("/api/v1/deprecated-segments/", {"scope": "rng"}).json()["results"]
    assert [r["id"] for r in rng] == [rows[1].pk]
    bad = migrator.get("/api/v1/deprecated-segments/", {"status": "gone"})
    assert bad.status_code == 400 and "status" in errors(bad)


def test_copy_dismiss_undo_and_bulk(migrator: APIClient) -> None:
    WorldFactory(slug="iron-coast")
    source = legacy()
    url = f"/api/v1/deprecated-segments/{source.pk}"
    copy = migrator.post(
        f"{url}/copy",
        {"scope": "world", "ref": "iron-coast", "content": "Edited.", "active": True},
        format="json",
    )
    assert copy.status_code == 201
    new = copy.json()
    assert (new["scope"], new["ref"], new["content"], new["active"]) == (
        "world",
        "iron-coast",
        "Edited.",
        True,
    )
    assert new["metadata"]["copied_from"] == source.pk
    listed = migrator.get("/api/v1/deprecated-segments/", {"status": "copied"}).json()
    assert listed["results"][0]["copies"] == [new["id"]]
    refused = migrator.post(f"{url}/dismiss", {"reason": "x"}, format="json")
    assert refused.status_code == 400 and "undo the copy" in errors(refused)["id"]
    undone = migrator.post(f"{url}/undo")
    assert undone.status_code == 200 and undone.json()["status"] == "pending"
    assert not Segment.objects.get(pk=new["id"]).active
    bulk = migrator.post(
        "/api/v1/deprecated-segments/bulk",
        {"action": "dismiss", "ids": [source.pk], "reason": "Caller supplies it."},
        format="json",
    )
    assert bulk.status_code == 200
    assert [(r["status"], r["reason"]) for r in bulk.json()["results"]] == [
        ("dismissed", "Caller supplies it.")
    ]


BULK = "/api/v1/deprecated-segments/bulk"


def test_bulk_copy_creates_linked_copies_and_lists_the_rows_it_skipped(
    migrator: APIClient,
) -> None:
    entry = EntryFactory(slug="drowned-bell")
    WorldFactory(slug="iron-coast")
    suggested, unsuggested = legacy(ref="drowned-bell"), legacy()
    Segment.objects.filter(pk=suggested.pk).update(title="The salvager")
    response = migrator.post(
        BULK, {"action": "copy", "ids": [unsuggested.pk, suggested.pk]}, format="json"
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["action"], body["count"]) == ("copy", 1)
    [copy] = body["results"]
    assert (copy["scope"], copy["ref"], copy["title"], copy["content"], copy["active"]) == (
        "entry",
        "drowned-bell",
        "The salvager",
        "Old text.",
        False,
    )
    assert copy["metadata"]["copied_from"] == suggested.pk
    assert body["skipped"] == [
        {
            "id": unsuggested.pk,
            "reason": f"Segment #{unsuggested.pk} has no obvious target: choose a scope and "
            "object to copy it to.",
        }
    ]
    assert Segment.objects.get(pk=copy["id"]).entry == entry
    assert Segment.objects.get(pk=suggested.pk).metadata["copies"] == [copy["id"]]
    to_one = migrator.post(
        BULK,
        {"action": "copy", "ids": [unsuggested.pk], "scope": "world", "ref": "iron-coast"},
        format="json",
    ).json()
    assert [(r["scope"], r["ref"]) for r in to_one["results"]] == [("world", "iron-coast")]
    assert to_one["skipped"] == []


def test_bulk_dismiss_skips_a_copied_row_and_bulk_undo_puts_rows_back(
    migrator: APIClient,
) -> None:
    copied, pending = legacy(), legacy()
    copy = migrator.post(
        f"/api/v1/deprecated-segments/{copied.pk}/copy",
        {"scope": "core", "active": True},
        format="json",
    ).json()
    ids = [copied.pk, pending.pk]
    dismissed = migrator.post(
        BULK, {"action": "dismiss", "ids": ids, "reason": "Old."}, format="json"
    ).json()
    assert [(r["id"], r["status"]) for r in dismissed["results"]] == [(pending.pk, "dismissed")]
    assert dismissed["skipped"] == [
        {
            "id": copied.pk,
            "reason": f"Segment #{copied.pk} was copied: undo the copy before dismissing it.",
        }
    ]
    undone = migrator.post(BULK, {"action": "undo", "ids": ids}, format="json")
    assert undone.status_code == 200
    body = undone.json()
    assert (body["action"], body["count"], body["skipped"]) == ("undo", 2, [])
    assert [(r["id"], r["status"], r["copies"], r["reason"]) for r in body["results"]] == [
        (copied.pk, "pending", [], None),
        (pending.pk, "pending", [], None),
    ]
    assert not Segment.objects.get(pk=copy["id"]).active
    again = migrator.post(BULK, {"action": "undo", "ids": [pending.pk]}, format="json").json()
    assert (again["count"], [r["id"] for r in again["skipped"]]) == (0, [pending.pk])


def test_the_schema_documents_bulk_undo_and_the_skipped_rows(migrator: APIClient) -> None:
    schema = migrator.get("/api/v1/schema/", {"format": "json"}).json()
    operation = schema["paths"][BULK]["post"]
    request = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    components = schema["components"]["schemas"]
    fields = components[request.rsplit("/", 1)[1]]["properties"]
    action = fields["action"]
    enum = components[action["$ref"].rsplit("/", 1)[1]] if "$ref" in action else action
    assert enum["enum"] == ["copy", "dismiss", "undo"]
    assert fields["ids"]["maxItems"] == 1000
    output = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    properties = components[output.rsplit("/", 1)[1]]["properties"]
    assert {"action", "count", "results", "skipped"} <= set(properties)
    skipped = properties["skipped"]["items"]["$ref"].rsplit("/", 1)[1]
    assert set(components[skipped]["properties"]) == {"id", "reason"}


@pytest.mark.parametrize(
    ("body", "attr"),
    [
        ({"scope": "rng"}, "scope"),
        ({"scope": "world", "ref": "nowhere"}, "ref"),
        ({"scope": "core", "content": "bad \x00"}, "content"),
        ({"scope": "core", "content": "x" * 200_001}, "content"),
        ({"scope": "core", "extra": 1}, "extra"),
        ({"scope": "core", "active": "yes"}, "active"),
    ],
)
def test_a_bad_copy_names_the_field(migrator: APIClient, body: dict[str, Any], attr: str) -> None:
    source = legacy()
    response = migrator.post(f"/api/v1/deprecated-segments/{source.pk}/copy", body, format="json")
    assert response.status_code == 400, response.json()
    assert attr in errors(response)
    assert Segment.objects.count() == 1


def test_actions_on_a_segment_that_is_not_deprecated_are_404(migrator: APIClient) -> None:
    segment = segments.segment_create(actor=None, scope="core", content="Now.")
    response = migrator.post(f"/api/v1/deprecated-segments/{segment.pk}/undo")
    assert response.status_code == 404 and codes(response) == ["not_found"]


def test_bulk_input_is_checked(migrator: APIClient) -> None:
    for body, attr in (
        ({"action": "burn", "ids": [1]}, "action"),
        ({"action": "dismiss", "ids": []}, "ids"),
        ({"action": "dismiss", "ids": [1]}, "reason"),
        ({"action": "dismiss", "ids": [2**70], "reason": "x"}, "ids.0"),
        ({"action": "copy", "ids": [1], "ref": "x"}, "scope"),
        ({"action": "undo", "ids": list(range(1, 1002))}, "ids"),
        ({"action": "undo", "ids": [2**40]}, "ids"),  # no such deprecated segment
    ):
        response = migrator.post("/api/v1/deprecated-segments/bulk", body, format="json")
        assert response.status_code == 400 and attr in errors(response), (body, response.json())
