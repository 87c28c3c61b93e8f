"""Importing legacy exports: dirt reported row by row, all or nothing, idempotent, dry run."""

from __future__ import annotations

import doctest
import io
import json
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from promptadmin.content import legacy
from promptadmin.content.models import Segment
from promptadmin.content.services import deprecated, legacy_import
from promptadmin.content.services.api_keys import api_key_create
from promptadmin.content.services.legacy_import import ImportReport, segments_import
from tests import legacy_exports as ex
from tests.factories import EntryFactory, NPCFactory, RulesetFactory, UserFactory, WorldFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def game() -> None:
    world = WorldFactory(slug="iron-coast")
    EntryFactory(slug="drowned-bell", world=world)
    NPCFactory(slug="marta-vell")
    RulesetFactory(slug="mystery")


def run(data: bytes, fmt: str, **options: Any) -> ImportReport:
    return segments_import(actor=None, data=data, fmt=fmt, **options)


def snapshot() -> list[tuple[Any, ...]]:
    fields = ("legacy_id", "scope", "content", "metadata", "active", "created_at", "updated_at")
    rows = Segment.objects.order_by("legacy_id").values_list(*fields)
    return [tuple(v for k, v in zip(fields, row, strict=True) if k != "metadata") for row in rows]


DIRTY_EXPORTS = {
    "json": lambda: ex.as_json(
        ex.VALID + [row for row, _ in ex.DIRTY], metadata_as_text=True, bom=True, crlf=True
    ),
    "csv": lambda: ex.as_csv(ex.VALID + [row for row, _ in ex.DIRTY]),
}


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_a_realistic_export_imports_its_valid_rows_and_reports_every_dirty_one(fmt: str) -> None:
    report = run(DIRTY_EXPORTS[fmt](), fmt, skip_invalid=True)
    assert not report.refused
    assert dict(report.created) == ex.CREATED
    by_id = {problem.id: problem.reason for problem in report.errors}
    assert len(report.errors) == len(ex.DIRTY)
    for row, words in ex.DIRTY:
        assert words in by_id[str(row["id"])], (row["id"], by_id[str(row["id"])])
    assert all(problem.line is not None and problem.line > 1 for problem in report.errors)
    assert Segment.objects.count() == len(ex.VALID)


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_a_second_run_of_the_same_export_changes_nothing(fmt: str) -> None:
    data = DIRTY_EXPORTS[fmt]()
    run(data, fmt, skip_invalid=True)
    before = snapshot()
    history = Segment.history.count()  # type: ignore[attr-defined]
    second = run(data, fmt, skip_invalid=True)
    assert dict(second.created) == {}
    assert sum(second.unchanged.values()) == len(ex.VALID)
    assert second.conflicts == []
    assert snapshot() == before
    assert Segment.history.count() == history  # type: ignore[attr-defined]


def test_deprecated_rows_are_imported_inactive_with_their_origin_and_timestamps() -> None:
    run(ex.as_json(ex.VALID), "json")
    player = Segment.objects.get(legacy_id="202")
    assert (player.scope, player.active, player.content) == (
        "player",
        False,
        "The player is a salvager.",
    )
    meta = player.metadata
    assert (meta["deprecated_scope"], meta["original_id"], meta["original_ref"]) == (
        "player",
        "202",
        "drowned-bell",
    )
    assert meta["original_active"] is True
    assert "no longer assembled" in meta["migration_note"]
    assert datetime.fromisoformat(meta["deprecated_at"]).tzinfo is not None
    assert player.created_at == datetime(2022, 11, 2, 10, tzinfo=UTC)
    state = Segment.objects.get(legacy_id="201")
    assert state.metadata["original_id"] == "201"  # the row's own metadata is kept
    assert (state.title, "title" in state.metadata) == ("State block", False)
    assert state.updated_at == datetime(2022, 12, 1, 10, tzinfo=UTC)


def test_allowed_rows_point_at_their_objects_and_keep_active_and_text() -> None:
    run(ex.as_csv(ex.VALID), "csv")
    world = Segment.objects.get(legacy_id="102")
    assert (world.scope, world.world.slug, world.active) == ("world", "iron-coast", True)
    assert world.content == "Rust stains everything — café «noir»."
    assert Segment.objects.get(legacy_id="101").content == "You are the narrator.\nBe terse."
    assert Segment.objects.get(legacy_id="104").active is False
    assert Segment.objects.get(legacy_id="105").npc.slug == "marta-vell"
    assert world.token_count and world.history.count() == 1
    assert world.created_at == datetime(2023, 1, 5, 10, 0, 0, 123456, tzinfo=UTC)


def test_a_broken_row_in_the_middle_refuses_the_whole_import_with_every_reason() -> None:
    rows = ex.VALID[:5] + [row for row, _ in ex.DIRTY] + ex.VALID[5:]
    report = run(ex.as_json(rows), "json")
    assert report.refused
    assert len(report.errors) == len(ex.DIRTY)
    assert not Segment.objects.exists()


def test_skip_invalid_imports_the_valid_rows_and_reports_the_rest() -> None:
    rows = [*ex.VALID[:5], ex.DIRTY[0][0], *ex.VALID[5:]]
    report = run(ex.as_csv(rows), "csv", skip_invalid=True)
    assert not report.refused and len(report.errors) == 1
    assert report.errors[0].line == 8  # header, 5 rows (one spans two lines), then it
    assert Segment.objects.count() == len(ex.VALID)


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_a_dry_run_reports_exactly_what_the_real_run_does_and_writes_nothing(fmt: str) -> None:
    data = DIRTY_EXPORTS[fmt]()
    dry = run(data, fmt, skip_invalid=True, dry_run=True)
    assert not Segment.objects.exists()
    real = run(data, fmt, skip_invalid=True)
    assert {**dry.as_dict(), "dry_run": None} == {**real.as_dict(), "dry_run": None}


def test_a_json_export_with_a_bom_and_crlf_line_endings_reads_like_a_clean_one() -> None:
    rows = ex.VALID + [row for row, _ in ex.DIRTY]
    plain = run(ex.as_json(rows), "json", skip_invalid=True, dry_run=True)
    saved_again = ex.as_json(rows, bom=True, crlf=True)
    assert saved_again.startswith(b"\xef\xbb\xbf[\r\n") and b"\r\n]\r\n" in saved_again
    report = run(saved_again, "json", skip_invalid=True)
    assert {**report.as_dict(), "dry_run": None} == {**plain.as_dict(), "dry_run": None}
    assert [e.line for e in report.errors] == list(range(len(ex.VALID) + 2, len(rows) + 2))
    assert Segment.objects.get(legacy_id="101").content == "You are the narrator.\nBe terse."


@pytest.mark.parametrize(
    ("title", "column", "kept"),
    [
        ("Narrator", "Narrator", None),
        ("  Spaced out \n", "Spaced out", None),
        ("t" * 200, "t" * 200, None),
        ("t" * 201, "", "t" * 201),  # longer than the column: kept where it was
        (["not", "text"], "", ["not", "text"]),
    ],
)
@pytest.mark.parametrize("scope", ["core", "rng"])
def test_a_string_title_in_the_metadata_goes_to_the_title_column(
    scope: str, title: Any, column: str, kept: Any
) -> None:
    row = {"id": 1, "scope": scope, "content": "Text.", "metadata": {"title": title, "n": 1}}
    data = ex.as_json([row])
    run(data, "json")
    segment = Segment.objects.get(legacy_id="1")
    assert (segment.title, segment.metadata.get("title"), segment.metadata["n"]) == (
        column,
        kept,
        1,
    )
    assert segment.history.get().title == column
    again = run(data, "json")  # the row as exported is unchanged: nothing to do
    assert (sum(again.unchanged.values()), again.conflicts) == (1, [])


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_an_npc_row_s_tier_in_the_metadata_goes_to_the_tier_column(fmt: str) -> None:
    """Found by a writer: an imported NPC row with ``"tier": 1`` in its metadata became
    a segment of tier 0, shown only at the lowest tier."""
    rows = [
        {"id": 1, "scope": "npc", "ref_id": "marta-vell", "content": "Scar on her left hand.",
         "metadata": {"tier": 1, "mood": "wary"}},
        {"id": 2, "scope": "npc", "ref_id": "marta-vell", "content": "Odd.",
         "metadata": {"tier": "high"}},
        {"id": 3, "scope": "world", "ref_id": "iron-coast", "content": "Rust.",
         "metadata": {"tier": 2}},
    ]  # fmt: skip
    data = ex.as_json(rows) if fmt == "json" else ex.as_csv(rows)
    report = run(data, fmt)
    assert not report.errors
    found = {
        s.legacy_id: (s.tier, s.metadata) for s in Segment.objects.filter(legacy_id__isnull=False)
    }
    assert found == {
        "1": (1, {"mood": "wary"}),
        "2": (0, {"tier": "high"}),  # not a tier: kept where it was
        "3": (0, {"tier": 2}),  # a world segment has no tier
    }
    assert Segment.objects.get(legacy_id="1").history.get().tier == 1
    assert sum(run(data, fmt).unchanged.values()) == 3


def test_a_changed_row_in_a_later_export_is_a_conflict_and_is_not_overwritten() -> None:
    run(ex.as_json(ex.VALID), "json")
    later = [dict(row) for row in ex.VALID]
    later[1]["content"] = "Rust, rewritten."
    later.append(ex.generated(1, start=900)[0])
    report = run(ex.as_json(later), "json")
    assert [(c.id, "differs" in c.reason) for c in report.conflicts] == [("102", True)]
    assert dict(report.created) == {"core": 1}
    assert Segment.objects.get(legacy_id="102").content.startswith("Rust stains everything")


def test_references_can_be_legacy_ids_mapped_to_slugs() -> None:
    rows = [
        {"id": 1, "scope": "world", "ref_id": "7", "content": "Mapped."},
        {"id": 2, "scope": "player", "ref_id": "12", "content": "Player of the bell."},
        {"id": 3, "scope": "entry", "ref_id": "7", "content": "Wrong kind."},
    ]
    refs = {"7": "world:iron-coast", "12": "entry:drowned-bell"}
    report = run(ex.as_json(rows), "json", refs=refs, skip_invalid=True)
    assert Segment.objects.get(legacy_id="1").world.slug == "iron-coast"
    player = Segment.objects.get(legacy_id="2").metadata
    assert (player["original_ref"], player["original_ref_id"]) == ("entry:drowned-bell", "12")
    assert [e.id for e in report.errors] == ["3"]
    assert "maps to a world" in report.errors[0].reason


@pytest.mark.parametrize(
    "refs", [{"7": "iron\x00coast"}, {"7": "iron\ud800"}, {"7": 7}, ["7"], {"7": "x" * 201}]
)
def test_refs_that_cannot_name_an_object_are_refused_naming_them(refs: Any) -> None:
    rows = [{"id": 1, "scope": "world", "ref_id": "7", "content": "Mapped."}]
    with pytest.raises(ValidationError) as exc:
        run(ex.as_json(rows), "json", refs=refs)
    assert exc.value.message_dict["refs"][0].startswith("The refs file")
    assert not Segment.objects.exists()


def test_an_unknown_reference_is_reported_never_guessed() -> None:
    rows = [{"id": 1, "scope": "entry", "ref_id": "iron-coast", "content": "A world's slug."}]
    report = run(ex.as_json(rows), "json")
    assert report.refused
    assert "Unknown entry 'iron-coast'" in report.errors[0].reason


@pytest.mark.parametrize(
    ("data", "fmt", "words"),
    [
        (b'{"id": 1}', "json", "array"),
        (b'[{"id": 1,', "json", "not valid JSON"),
        (b"\xff\xfeid,scope", "csv", "not UTF-8"),
        (b"", "csv", "empty"),
        (b"name,text\r\nx,y\r\n", "csv", "lacks the column(s) id, scope, content"),
        (b"[" + b"[" * 100_000 + b"]" * 100_000 + b"]", "json", "nests too deeply"),
    ],
)
def test_an_unreadable_file_is_refused_naming_why(data: bytes, fmt: str, words: str) -> None:
    with pytest.raises(ValidationError) as exc:
        run(data, fmt)
    assert words in exc.value.message_dict["file"][0]


@pytest.mark.parametrize(
    ("row", "words"),
    [
        ({"metadata": {"n": float("nan")}}, "finite"),
        ({"metadata": "[1, 2]"}, "JSON object"),
        ({"content": "lone \ud800"}, "surrogate"),
        ({"active": "maybe"}, "true or false"),
        ({"id": "x" * 65}, "longer than 64"),
        ({"version": "v" * 40}, "Version is longer than 32"),
        ({"content": 5}, None),
        ({"id": "a\x00b"}, "Id contains a NUL"),
        ({"id": "a\ud800"}, "Id contains a lone surrogate"),
        ({"ref_id": "iron\x00coast"}, "Ref_id contains a NUL"),
        ({"ref_id": "iron-coast\udfff"}, "Ref_id contains a lone surrogate"),
        ({"version": "1\x00"}, "Version contains a NUL"),
        ({"version": "1\ud800"}, "Version contains a lone surrogate"),
        ({"metadata": {"k\ud800": 1}}, "Metadata cannot be stored at k\\ud800: key: text"),
        ({"metadata": '{"k\\ud800": 1}'}, "Metadata cannot be stored at k\\ud800: key: text"),
        ({"scope": "core\ud800"}, "Scope contains a lone surrogate"),
    ],
)
def test_hostile_values_are_reported_for_their_row(row: dict[str, Any], words: str | None) -> None:
    data = ex.as_json([{"id": 1, "scope": "core", "content": "Fine.", **row}])
    if words is None:  # an integer content is read as its text
        assert not run(data, "json").refused
        return
    report = run(data, "json")
    assert report.refused and words in report.errors[0].reason, report.errors
    assert_showable(report)


def assert_showable(report: ImportReport) -> None:
    """Every reason and id of a report can be printed, encoded and shown as it reads."""
    for problem in (*report.errors, *report.conflicts):
        for text in (problem.reason, problem.id or ""):
            assert text.isprintable(), text
            text.encode()
        assert not problem.reason.endswith(".."), problem.reason


@pytest.mark.parametrize(
    "when",
    [
        "9999-12-31T23:59:59-05:00",  # year 10000 in UTC: PostgreSQL stores it, Python cannot
        "0001-01-01T00:00:00+05:00",  # year 0 in UTC
        "1899-12-31T23:59:59Z",
        "2101-01-01",
    ],
)
@pytest.mark.parametrize("column", ["created_at", "updated_at"])
def test_a_date_outside_1900_to_2100_is_refused_naming_the_column(column: str, when: str) -> None:
    report = run(ex.as_json([{"id": 1, "scope": "rng", "content": "Roll.", column: when}]), "json")
    assert report.refused
    assert report.errors[0].reason.startswith(f"{column.capitalize()} {when!r} is ")
    assert "between the years 1900 and 2100" in report.errors[0].reason
    assert_showable(report)


def test_the_edges_of_the_date_range_are_accepted() -> None:
    rows = [
        {"id": 1, "scope": "rng", "content": "First.", "created_at": "1900-01-01T00:00:00Z"},
        {"id": 2, "scope": "rng", "content": "Last.", "created_at": "2100-12-31T23:59:59+00"},
        # 2100-12-31 20:00 at UTC-5 is 2101-01-01 01:00 in UTC: outside
        {"id": 3, "scope": "rng", "content": "Over.", "created_at": "2100-12-31T20:00:00-05:00"},
    ]
    report = run(ex.as_json(rows), "json", skip_invalid=True)
    assert [e.id for e in report.errors] == ["3"]
    assert Segment.objects.get(legacy_id="2").created_at == datetime(
        2100, 12, 31, 23, 59, 59, tzinfo=UTC
    )


def test_after_an_import_with_impossible_dates_every_page_still_reads(
    client: Any, admin_user: Any
) -> None:
    # PostgreSQL stored such dates and every page listing the row failed to read it back;
    # SQLite failed the import itself.
    admin_user.groups.add(Group.objects.get(name="admin"))
    rows = [
        {
            "id": 1,
            "scope": "player",
            "content": "Far future.",
            "created_at": "9999-12-31T23:59:59-05:00",
        },
        {
            "id": 2,
            "scope": "rng",
            "content": "Far past.",
            "updated_at": "0001-01-01T00:00:00+05:00",
        },
        {"id": 3, "scope": "input", "content": "Today.", "created_at": "2023-01-05"},
    ]
    report = run(ex.as_json(rows), "json", skip_invalid=True)
    assert [e.id for e in report.errors] == ["1", "2"]
    client.force_login(admin_user)
    for url in ("/", "/deprecated/", "/api/v1/deprecated-segments/"):
        assert client.get(url).status_code == 200, url
    assert client.get("/api/v1/deprecated-segments/").json()["count"] == 1


HUGE = "1" * 5000  # more digits than Python turns into an int (sys.get_int_max_str_digits)
HUGE_METADATA = f'{{"n": {HUGE}}}'
GOOD_ROW = '{"id": 7, "scope": "core", "content": "Kept."}'
HUGE_CELL = '"' + HUGE_METADATA.replace('"', '""') + '"'  # quoted as CSV writes it


def huge_row(metadata: str) -> str:
    return '{"id": 1, "scope": "core", "content": "x", "metadata": ' + metadata + "}"


@pytest.mark.parametrize(
    ("data", "fmt"),
    [
        (f"[\n{huge_row(HUGE_METADATA)},\n{GOOD_ROW}\n]", "json"),
        (f"[\n{huge_row(json.dumps(HUGE_METADATA))},\n{GOOD_ROW}\n]", "json"),
        (
            f"id,scope,content,metadata\r\n1,core,x,{HUGE_CELL}\r\n7,core,Kept.,\r\n",
            "csv",
        ),
    ],
)
def test_an_integer_too_long_to_read_is_reported_for_its_row(data: str, fmt: str) -> None:
    report = run(data.encode(), fmt, skip_invalid=True)
    assert [(e.line, e.id) for e in report.errors] == [(2, "1")]
    assert "integer of 5000 digits" in report.errors[0].reason
    assert_showable(report)
    assert dict(report.created) == {"core": 1}


def test_a_row_with_a_huge_id_is_reported_and_the_others_import() -> None:
    data = f'[\n{{"id": {HUGE}, "scope": "core", "content": "x"}},\n{GOOD_ROW}\n]'.encode()
    report = run(data, "json", skip_invalid=True)
    assert [(e.line, e.id) for e in report.errors] == [(2, None)]
    assert "integer of 5000 digits" in report.errors[0].reason
    assert dict(report.created) == {"core": 1}


def test_problems_of_a_json_export_on_one_line_name_the_row() -> None:
    rows = [
        {"id": 1, "scope": "core", "content": "Fine."},
        {"id": 2, "scope": "weather", "content": "Rain."},
        {"id": 1, "scope": "core", "content": "Again."},
        {"id": 4, "scope": "world", "ref_id": "atlantis", "content": "Gone."},
    ]
    data = json.dumps([ex.full(row) for row in rows]).encode()  # one line, as some tools write
    report = run(data, "json", skip_invalid=True)
    assert [(e.line, e.row, e.id) for e in report.errors] == [(1, 2, "2"), (1, 3, "1"), (1, 4, "4")]
    assert report.errors[1].reason == "Duplicate id '1': already on line 1, row 1."
    assert report.as_dict()["errors"][0] == {
        "line": 1,
        "row": 2,
        "id": "2",
        "reason": report.errors[0].reason,
    }
    assert any(
        line.startswith("  line 1, row 4 (id 4): Unknown world 'atlantis'")
        for line in report.lines()
    )
    again = run(json.dumps([ex.full({**rows[0], "content": "Changed."})]).encode(), "json")
    assert [(c.line, c.row) for c in again.conflicts] == [(1, 1)]


def test_no_reason_ends_with_two_periods() -> None:
    rows = [
        {"id": 1, "scope": "core", "content": "x", "metadata": {"n": float("inf")}},
        {"id": 2, "scope": "core", "content": "x", "metadata": {"k": "\x00"}},
        {"id": 3, "scope": "core", "content": "x", "metadata": '{"a": '},
        {"id": 4, "scope": "world", "ref_id": "atlantis", "content": "x"},
    ]
    report = run(ex.as_json(rows), "json")
    assert len(report.errors) == 4
    assert_showable(report)
    with pytest.raises(ValidationError) as exc:
        run(b"[{", "json")
    assert exc.value.message_dict["file"] == [
        "The file is not valid JSON: Expecting property name enclosed in double quotes (line 1)."
    ]


def test_exported_values_under_the_keys_the_import_and_the_review_own_are_kept_aside() -> None:
    exported = {
        "deprecated_scope": "weather",
        "deprecated_at": "2001-01-01",
        "original_id": "x9",
        "original_ref": "somewhere",
        "migration_note": "Their note.",
        "review_status": "dismissed",
        "review_reason": "Their reason.",
        "copies": [1, 2],
        "copied_from": 5,
        "deactivated_by_migration": {"overwritten": {}},
        "legacy_metadata": "an older export's",
        "tags": ["kept"],
    }
    data = ex.as_json([{"id": 9, "scope": "player", "content": "Old.", "metadata": exported}])
    run(data, "json")
    segment = Segment.objects.get(legacy_id="9")
    meta = segment.metadata
    assert meta["legacy_metadata"] == {k: v for k, v in exported.items() if k != "tags"}
    assert meta["tags"] == ["kept"]
    assert (meta["deprecated_scope"], meta["original_id"], meta["original_ref"]) == (
        "player",
        "9",
        None,
    )
    assert "no longer assembled" in meta["migration_note"]
    # Not taken for a review state, nor for a row migration 0004 would reactivate.
    assert not {"copies", "copied_from", "review_reason", "deactivated_by_migration"} & set(meta)
    assert deprecated.status_of(segment) == "pending"
    assert list(deprecated.deprecated_segments(status="pending")) == [segment]
    assert sum(run(data, "json").unchanged.values()) == 1


def test_allowed_rows_keep_their_metadata_as_exported() -> None:
    exported = {"original_id": "x9", "review_status": "dismissed"}
    run(ex.as_json([{"id": 9, "scope": "core", "content": "Now.", "metadata": exported}]), "json")
    assert Segment.objects.get(legacy_id="9").metadata == exported  # nothing is written over


@pytest.mark.postgres
def test_an_import_makes_a_fixed_number_of_queries_per_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(legacy_import, "BATCH_SIZE", 100)
    targets = [("world", "iron-coast"), ("entry", "drowned-bell"), ("npc", "marta-vell")]

    def queries(count: int, start: int) -> int:
        data = ex.as_csv(ex.generated(count, start=start, targets=targets))
        with CaptureQueriesContext(connection) as captured:
            report = run(data, "csv")
        assert sum(report.created.values()) == count and not report.errors
        return len(captured.captured_queries)

    ten_batches, thirty_batches = queries(1000, 1), queries(3000, 10_000)
    # A batch is three statements: the look-up of its ids already imported, then (on the
    # writing thread, past Django's cursor wrapper, so not captured) a COPY of the rows and
    # the INSERT of their history records: at most two more queries per batch, however
    # many rows it holds.
    assert thirty_batches - ten_batches <= 2 * 20
    assert Segment.objects.filter(world__slug="iron-coast").count() == 4000 // 6 // 3 + 1


@pytest.mark.postgres
def test_a_batch_that_fails_on_the_writing_thread_fails_the_import_and_writes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(legacy_import, "BATCH_SIZE", 100)
    real, calls = legacy_import._Writer._copy, []

    def broken_on_the_third(self: Any, data: bytes, ids: list[str], raw: Any) -> None:
        calls.append(len(ids))
        if len(calls) == 3:
            raise RuntimeError("the disk is on fire")
        real(self, data, ids, raw)

    monkeypatch.setattr(legacy_import._Writer, "_copy", broken_on_the_third)
    with pytest.raises(RuntimeError, match="on fire"):
        run(ex.as_csv(ex.generated(500)), "csv")
    # No batch is written after the one that failed (the next, made ready while it was
    # written, is dropped).
    assert calls == [100, 100, 100]
    assert not Segment.objects.exists() and not Segment.history.exists()  # type: ignore[attr-defined]
    # The connection is the importer's again, and works.
    assert sum(run(ex.as_csv(ex.generated(150)), "csv").created.values()) == 150


@pytest.mark.postgres
def test_every_segment_imported_has_one_history_record_of_its_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Across batches written on the writing thread: the records are copied from the rows.
    monkeypatch.setattr(legacy_import, "BATCH_SIZE", 100)
    run(ex.as_csv(ex.generated(450, targets=[("world", "iron-coast")])), "csv")
    history = Segment.history.model  # type: ignore[attr-defined]
    fields = [
        f.attname for f in history._meta.concrete_fields if not f.attname.startswith("history")
    ]
    rows = {s["id"]: s for s in Segment.objects.values(*fields)}
    records = list(history.objects.values(*fields, "history_type", "history_change_reason"))
    assert len(rows) == len(records) == 450
    for record in records:
        assert record.pop("history_type") == "+"
        assert record.pop("history_change_reason") == legacy_import.CHANGE_REASON
        assert record == rows[record["id"]]


def test_the_examples_in_the_docstrings_hold() -> None:
    assert doctest.testmod(legacy).failed == 0
    assert doctest.testmod(legacy_import).failed == 0


def test_a_blank_line_and_a_short_row_in_csv() -> None:
    data = b"id,scope,content\r\n1,core,One\r\n\r\n2,core\r\n3,core,Three\r\n"
    report = run(data, "csv", skip_invalid=True)
    assert [(e.line, e.reason) for e in report.errors] == [
        (4, "The row has 2 fields where the header has 3.")
    ]
    assert dict(report.created) == {"core": 2}


# Who may import


def test_only_admins_and_admin_keys_may_import() -> None:
    data = ex.as_json(ex.VALID[:1])
    author = UserFactory()
    author.groups.add(Group.objects.get(name="author"))
    write_key = api_key_create(actor=None, name="w", scope="write")[0]
    for actor in (author, write_key):
        with pytest.raises(PermissionDenied):
            segments_import(actor=actor, data=data, fmt="json")
    admin_key = api_key_create(actor=None, name="a", scope="admin")[0]
    segments_import(actor=admin_key, data=data, fmt="json")
    record = Segment.objects.get(legacy_id="101").history.get()
    assert record.history_change_reason == f"API key 'a' ({admin_key.prefix})"


# The command


def test_the_command_prints_the_report_and_writes_it_as_json(tmp_path: Path) -> None:
    export = tmp_path / "segments.csv"
    export.write_bytes(DIRTY_EXPORTS["csv"]())
    report_file = tmp_path / "report.json"
    out = StringIO()
    call_command(
        "import_segments", str(export), "--skip-invalid", "--report", str(report_file), stdout=out
    )
    text = out.getvalue()
    assert "Created 10, unchanged 0, conflicts 0, invalid 8." in text
    assert "Not imported:" in text and "(id 303): Unknown scope 'weather'" in text
    saved = json.loads(report_file.read_text())
    assert saved["created"]["player"] == 1 and len(saved["errors"]) == 8


def test_the_command_prints_and_saves_ids_and_keys_it_cannot_store(tmp_path: Path) -> None:
    rows = [
        {"id": "a\x00b", "scope": "core", "content": "A NUL in the id."},
        {"id": "a\ud800", "scope": "core", "content": "A lone surrogate in the id."},
        {"id": 3, "scope": "core", "content": "A key.", "metadata": {"k\ud800": 1}},
        {"id": 4, "scope": "core", "content": "Fine."},
    ]
    export = tmp_path / "hostile.json"
    export.write_bytes(ex.as_json(rows))
    report_file = tmp_path / "report.json"
    buffer = io.BytesIO()
    stdout = io.TextIOWrapper(buffer, encoding="utf-8")  # as a terminal's: it encodes
    call_command(
        "import_segments",
        str(export),
        "--skip-invalid",
        "--report",
        str(report_file),
        stdout=stdout,
    )
    stdout.flush()
    printed = buffer.getvalue().decode()
    assert "line 2, row 1 (id a\\u0000b): Id contains a NUL byte" in printed
    assert "line 3, row 2 (id a\\ud800): Id contains a lone surrogate" in printed
    assert "line 4, row 3 (id 3): Metadata cannot be stored at k\\ud800: key: text" in printed
    saved = json.loads(report_file.read_text(encoding="utf-8"))
    assert [e["id"] for e in saved["errors"]] == ["a\\u0000b", "a\\ud800", "3"]
    assert Segment.objects.get().legacy_id == "4"


def test_a_report_file_that_cannot_be_written_stops_the_command_before_it_imports(
    tmp_path: Path,
) -> None:
    export = tmp_path / "segments.json"
    export.write_bytes(ex.as_json(ex.VALID))
    report_file = tmp_path / "missing" / "report.json"
    with pytest.raises(CommandError, match=f"Cannot write the report to {report_file}"):
        call_command("import_segments", str(export), "--report", str(report_file))
    assert not Segment.objects.exists()


def test_the_command_refuses_and_exits_non_zero_on_an_invalid_row(tmp_path: Path) -> None:
    export = tmp_path / "segments.json"
    export.write_bytes(DIRTY_EXPORTS["json"]())
    out = StringIO()
    with pytest.raises(CommandError, match="Nothing was imported"):
        call_command("import_segments", str(export), stdout=out)
    assert out.getvalue().startswith("REFUSED: 8 invalid row(s)")
    assert not Segment.objects.exists()


def test_a_dry_run_with_invalid_rows_says_an_import_would_be_refused(tmp_path: Path) -> None:
    export = tmp_path / "segments.json"
    export.write_bytes(DIRTY_EXPORTS["json"]())
    out = StringIO()
    with pytest.raises(CommandError, match="An import of this file would be refused"):
        call_command("import_segments", str(export), "--dry-run", stdout=out)
    assert out.getvalue().startswith(
        "DRY RUN: 8 invalid row(s); an import of this file would be refused"
    )
    assert "REFUSED" not in out.getvalue()


def test_the_command_dry_run_says_so_and_writes_nothing(tmp_path: Path) -> None:
    export = tmp_path / "export.txt"
    export.write_bytes(ex.as_json(ex.VALID))
    out = StringIO()
    call_command("import_segments", str(export), "--format", "json", "--dry-run", stdout=out)
    assert "DRY RUN" in out.getvalue() and "Would create 10" in out.getvalue()
    assert not Segment.objects.exists()


def test_the_command_maps_legacy_references_with_a_refs_file(tmp_path: Path) -> None:
    rows = [
        {"id": 1, "scope": "world", "ref_id": "7", "content": "Mapped."},
        {"id": 2, "scope": "player", "ref_id": "12", "content": "Player of the bell."},
    ]
    export = tmp_path / "segments.json"
    export.write_bytes(ex.as_json(rows))
    refs = tmp_path / "refs.json"
    # A BOM, as an editor on Windows saves it: read like the exports.
    refs.write_bytes(
        b"\xef\xbb\xbf" + json.dumps({"7": "iron-coast", "12": "entry:drowned-bell"}).encode()
    )
    out = StringIO()
    call_command("import_segments", str(export), "--refs", str(refs), stdout=out)
    assert "Created 2, unchanged 0, conflicts 0, invalid 0." in out.getvalue()
    assert Segment.objects.get(legacy_id="1").world.slug == "iron-coast"
    player = Segment.objects.get(legacy_id="2").metadata
    assert (player["original_ref"], player["original_ref_id"]) == ("entry:drowned-bell", "12")


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b'{"7": "iron-coast",', "The refs file is not valid JSON"),
        (b"\xff\xfe{}", "The refs file is not UTF-8"),
        (b'["iron-coast"]', "The refs file must be a JSON object from legacy id to slug"),
        (b'{"7": 7}', "The refs file must be a JSON object from legacy id to slug"),
        (None, "cannot read it (No such file or directory)."),
        (b'{"7": "iron\\u0000coast"}', "The refs file: the slug of '7' contains a NUL byte"),
        (b'{"7": "iron\\ud800"}', "The refs file: the slug of '7' contains a lone surrogate"),
        (b'{"7\\ud800": "iron-coast"}', "The refs file: a legacy id contains a lone surrogate"),
        (b'{"7": "' + b"x" * 201 + b'"}', "The refs file: the slug of '7' is longer than 200"),
        (b'{"7": ' + b"1" * 5000 + b"}", "The refs file holds an integer of 5000 digits"),
        (b"[" * 100_000 + b"]" * 100_000, "The refs file nests too deeply."),
    ],
)
def test_a_refs_file_that_is_not_a_json_object_of_slugs_is_a_clear_error(
    tmp_path: Path, content: bytes | None, words: str
) -> None:
    export = tmp_path / "segments.json"
    export.write_bytes(ex.as_json(ex.VALID[:1]))
    refs = tmp_path / "refs.json"
    if content is not None:
        refs.write_bytes(content)
    with pytest.raises(CommandError) as exc:
        call_command("import_segments", str(export), "--refs", str(refs), stdout=StringIO())
    assert str(exc.value).startswith(f"--refs {refs}: {words}")
    assert not Segment.objects.exists()


def test_the_command_needs_a_format_it_can_tell(tmp_path: Path) -> None:
    export = tmp_path / "export.txt"
    export.write_bytes(b"[]")
    with pytest.raises(CommandError, match="--format"):
        call_command("import_segments", str(export))


# The assembly cache


def test_importing_active_content_invalidates_the_assembly_cache(
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks() as callbacks:
        run(ex.as_json(ex.VALID[:1]), "json")  # an active core row
    assert len(callbacks) == 1
    with django_capture_on_commit_callbacks() as callbacks:
        run(ex.as_json(ex.VALID[6:]), "json")  # deprecated rows only: never assembled
    assert callbacks == []
