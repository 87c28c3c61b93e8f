"""SillyTavern World Info files: import (with dry run, idempotent, reported per entry) and
export, through the API and the management commands; a 200-entry round trip."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from promptadmin.lore import services
from promptadmin.lore.models import LoreEntry
from tests.factories import WorldFactory
from tests.promptadmin.api.conftest import errors

pytestmark = pytest.mark.django_db


def st_entry(uid: int, **fields: Any) -> dict[str, Any]:
    """An entry as SillyTavern saves it (its other settings included)."""
    return {
        "uid": uid,
        "key": [f"relic{uid}", f"Relic {uid}"],
        "keysecondary": [],
        "comment": f"Relic {uid}",
        "content": f"Relic {uid} was found in the drowned chapel.\nIt hums at night.",
        "constant": uid % 17 == 0,
        "vectorized": False,
        "selective": True,
        "selectiveLogic": 0,
        "addMemo": True,
        "order": 100 + uid % 7,
        "position": uid % 2,
        "disable": uid % 11 == 0,
        "excludeRecursion": False,
        "preventRecursion": uid % 5 == 0,
        "delayUntilRecursion": False,
        "probability": 100,
        "useProbability": True,
        "depth": 4,
        "group": f"shelf{uid % 3}" if uid % 4 == 0 else "",
        "groupOverride": False,
        "groupWeight": 100,
        "scanDepth": None,
        "caseSensitive": None if uid % 3 else True,
        "matchWholeWords": None,
        "useGroupScoring": None,
        "automationId": "",
        "role": None,
        "displayIndex": uid,
        **fields,
    }


def book(count: int) -> dict[str, Any]:
    return {"entries": {str(uid): st_entry(uid) for uid in range(count)}}


def upload(client: Any, data: Any, world: str = "coast", dry_run: bool = False) -> Any:
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    file = io.BytesIO(raw)
    file.name = "book.json"
    body = {"file": file, "world": world, "dry_run": "true" if dry_run else "false"}
    return client.post("/api/v1/lore/import", body, format="multipart")


@pytest.fixture
def coast(db: Any) -> Any:
    return WorldFactory(slug="coast")


def test_a_dry_run_reports_what_would_change_and_changes_nothing(writer, coast) -> None:  # type: ignore[no-untyped-def]
    response = upload(writer, book(3), dry_run=True)
    assert response.status_code == 200
    report = response.json()
    assert (report["world"], report["dry_run"], report["created"], report["skipped"]) == (
        "coast",
        True,
        3,
        0,
    )
    assert [entry["action"] for entry in report["entries"]] == ["created"] * 3
    assert not LoreEntry.objects.exists()


def test_importing_the_same_file_twice_changes_nothing(writer, coast) -> None:  # type: ignore[no-untyped-def]
    first = upload(writer, book(5)).json()
    assert first["created"] == 5
    revisions = dict(LoreEntry.objects.values_list("id", "revision"))
    second = upload(writer, book(5)).json()
    assert (second["created"], second["updated"], second["unchanged"]) == (0, 0, 5)
    assert dict(LoreEntry.objects.values_list("id", "revision")) == revisions
    changed = book(5)
    changed["entries"]["2"]["content"] = "Relic 2 crumbled."
    third = upload(writer, changed, dry_run=True).json()
    assert [e["action"] for e in third["entries"]].count("updated") == 1
    assert upload(writer, changed).json()["updated"] == 1
    assert LoreEntry.objects.get(import_key="st:2").content == "Relic 2 crumbled."


def test_fields_map_and_what_has_no_equivalent_is_reported_per_entry(writer, coast) -> None:  # type: ignore[no-untyped-def]
    data = {
        "entries": {
            "7": st_entry(
                7,
                key=["bell", "/be+ll/i"],
                keysecondary=["tower"],
                excludeRecursion=True,
                probability=40,
                preventRecursion=True,
                disable=True,
                group="bells",
                order=250,
                caseSensitive=True,
                matchWholeWords=False,
            )
        }
    }
    report = upload(writer, data).json()
    notes = report["entries"][0]["notes"]
    assert any("keysecondary: tower" in note for note in notes)
    assert any("regular expression" in note for note in notes)
    assert any("excludeRecursion" in note for note in notes)
    assert any("probability 40%" in note for note in notes)
    entry = LoreEntry.objects.get()
    assert (entry.keys, entry.title, entry.priority, entry.group) == (
        ["bell", "/be+ll/i"],
        "Relic 7",
        250,
        "bells",
    )
    assert (entry.recursive, entry.active, entry.case_sensitive, entry.whole_words) == (
        False,
        False,
        True,
        False,
    )
    # What has no field here is kept for the export.
    assert entry.metadata["sillytavern"]["keysecondary"] == ["tower"]
    assert entry.metadata["sillytavern"]["probability"] == 40


def test_an_entry_that_cannot_be_stored_is_skipped_and_says_why(writer, coast) -> None:  # type: ignore[no-untyped-def]
    data = book(3)
    data["entries"]["1"]["key"] = [f"k{i}" for i in range(65)]
    data["entries"]["2"]["content"] = "NUL \x00 here"
    data["entries"]["3"] = {"uid": 3, "key": ["bell"], "content": "x", "order": "high"}
    report = upload(writer, data).json()
    actions = {e["uid"]: (e["action"], e["errors"]) for e in report["entries"]}
    assert actions["0"] == ("created", {})
    # Each error names the field as the file does: what to fix in it.
    assert actions["1"][0] == "skipped" and list(actions["1"][1]) == ["key"]
    assert actions["2"][0] == "skipped" and list(actions["2"][1]) == ["content"]
    assert actions["3"] == ("skipped", {"order": ["Expected an integer."]})
    assert LoreEntry.objects.count() == 1


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (b"not json", "Not a JSON file"),
        (b'{"entries": {"0": {"key": ["a"], "content": "x", "order": NaN}}}', "NaN"),
        (b"[" * 100_000 + b"]" * 100_000, "nests too deeply"),
        (b'{"entries": {"0": {"k\\ud800": 1}}}', "lone surrogate"),
        (b"\xff\xfe", "Not a JSON file"),
        (b'{"pages": []}', "'entries'"),
        (b'{"entries": 3}', "'entries' must be"),
        (b'{"entries": {"0": "text"}}', "expected a JSON object"),
        (b'{"entries": {"0": {"uid": 1}, "1": {"uid": 1}}}', "used twice"),
    ],
)
def test_a_file_that_is_not_world_info_is_a_400_on_file(writer, coast, raw, words) -> None:  # type: ignore[no-untyped-def]
    response = upload(writer, raw)
    assert response.status_code == 400
    assert words in errors(response)["file"]
    assert not LoreEntry.objects.exists()


def test_import_needs_a_known_world_and_a_write_key(writer, reader, coast) -> None:  # type: ignore[no-untyped-def]
    assert "world" in errors(upload(writer, book(1), world="nowhere"))
    assert upload(reader, book(1)).status_code == 403
    assert not LoreEntry.objects.exists()


def test_a_world_info_file_of_200_entries_goes_round_trip(writer, reader, coast) -> None:  # type: ignore[no-untyped-def]
    original = book(200)
    assert upload(writer, original).json()["created"] == 200
    exported = reader.get("/api/v1/lore/export?world=coast")
    assert exported.status_code == 200
    assert "coast-lore.json" in exported["Content-Disposition"]
    data = exported.json()
    # Every field SillyTavern wrote comes back (null match options as their value here).
    for uid, entry in original["entries"].items():
        back = data["entries"][uid]
        expected = {**entry, "caseSensitive": bool(entry["caseSensitive"])}
        expected["matchWholeWords"] = True
        assert back == expected
    # Into another world: the same entries; and back into the first: nothing changes.
    WorldFactory(slug="marsh")
    assert upload(writer, data, world="marsh").json()["created"] == 200
    again = reader.get("/api/v1/lore/export?world=marsh").json()
    assert again == data
    assert upload(writer, again).json()["unchanged"] == 200


def test_entries_made_here_export_with_their_ids_and_are_found_again(writer, reader, coast) -> None:  # type: ignore[no-untyped-def]
    made = services.lore_entry_create(actor=None, world=coast, content="The gate.", keys=["gate"])
    data = reader.get("/api/v1/lore/export?world=coast").json()
    assert list(data["entries"]) == [str(made.pk)]
    report = upload(writer, data).json()
    assert (report["unchanged"], report["created"]) == (1, 0)


def test_export_needs_a_known_world(reader, coast) -> None:  # type: ignore[no-untyped-def]
    assert "world" in errors(reader.get("/api/v1/lore/export"))
    assert "world" in errors(reader.get("/api/v1/lore/export?world=nowhere"))


def test_the_commands_import_and_export_alike(coast, tmp_path: Path) -> None:
    path = tmp_path / "book.json"
    path.write_text(json.dumps(book(4)), encoding="utf-8")
    out = io.StringIO()
    call_command("import_lorebook", str(path), world="coast", dry_run=True, stdout=out)
    assert "4 would be created" in out.getvalue()
    assert not LoreEntry.objects.exists()
    call_command("import_lorebook", str(path), world="coast", stdout=io.StringIO())
    out = io.StringIO()
    call_command("import_lorebook", str(path), world="coast", stdout=out)
    assert "0 created, 0 updated, 4 unchanged" in out.getvalue()
    exported = tmp_path / "out.json"
    call_command("export_lorebook", world="coast", output=str(exported))
    assert set(json.loads(exported.read_text())["entries"]) == {"0", "1", "2", "3"}
    with pytest.raises(CommandError, match="No world"):
        call_command("export_lorebook", world="nowhere")
    path.write_text("{", encoding="utf-8")
    with pytest.raises(CommandError, match="Not a JSON file"):
        call_command("import_lorebook", str(path), world="coast")
