"""Every change to lore goes through a function here, whatever the entry point (the API,
the studio, ``manage.py import_lorebook``).

Like the segment services: keyword-only arguments, the actor's role checked first,
validation before saving (an entry is checked by building the assembler's own
:class:`assembler.lore.LoreEntry`, so a saved entry is one that assembles), one
transaction, only the changed fields saved, the revision bumped, who did it recorded
(django-simple-history). Text is stored with ``\\n`` line endings. Bad input raises
``ValidationError`` keyed by field; a stale revision raises ``StaleRevisionError``.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from assembler.lore import LoreError
from assembler.storable import StoredJsonError, check_stored_json, has_lone_surrogate
from promptadmin.content.models import World
from promptadmin.core.actors import Actor, record_actor
from promptadmin.core.cache import generation_changed
from promptadmin.core.errors import StaleRevisionError
from promptadmin.core.revisions import locked_revision, save_first_revision, save_revision
from promptadmin.core.roles import Role, require
from promptadmin.core.text import normalize_newlines
from promptadmin.lore import worldinfo
from promptadmin.lore.models import ASSEMBLED_FIELDS, LoreEntry
from promptadmin.lore.selectors import LORE_GENERATION_KEY

CHANGING_LORE = "Changing lore"

EDITABLE_FIELDS = ("world", *ASSEMBLED_FIELDS, "active", "metadata")
"""What an author may change, and what a restore brings back."""

TEXT_FIELDS = ("title", "content", "group")


class _Unset(enum.Enum):
    """The type of ``UNSET``: "leave this field as it is"."""

    UNSET = enum.auto()


UNSET = _Unset.UNSET


def _check_text(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ValidationError({name: "Expected text."})
    if "\x00" in value:
        raise ValidationError({name: "Text may not contain NUL characters."})
    if has_lone_surrogate(value):
        raise ValidationError(
            {name: "Text may not contain lone surrogates (U+D800 to U+DFFF): they are not UTF-8."}
        )
    return normalize_newlines(value)


def _normalized(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with text normalized and each field's type checked."""
    values = dict(values)
    for name in TEXT_FIELDS:
        if name in values:
            values[name] = _check_text(name, values[name] if values[name] is not None else "")
    if "keys" in values:
        keys = values["keys"]
        if not isinstance(keys, list | tuple) or not all(isinstance(k, str) for k in keys):
            raise ValidationError({"keys": "Expected a list of words or phrases."})
        values["keys"] = [normalize_newlines(key) for key in keys]
    if "metadata" in values:
        metadata = {} if values["metadata"] is None else values["metadata"]
        if not isinstance(metadata, dict):
            raise ValidationError({"metadata": "Metadata must be a JSON object."})
        try:
            check_stored_json(metadata)
        except StoredJsonError as error:
            raise ValidationError({"metadata": error.explanation}) from None
        values["metadata"] = metadata
    for name in ("whole_words", "case_sensitive", "constant", "recursive", "active"):
        if name in values and not isinstance(values[name], bool):
            raise ValidationError({name: "Expected true or false."})
    if "priority" in values and (
        isinstance(values["priority"], bool) or not isinstance(values["priority"], int)
    ):
        raise ValidationError({"priority": "Expected an integer."})
    if "world" in values and values["world"] is not None and not isinstance(values["world"], World):
        raise ValidationError({"world": "Expected a world, or none for every world."})
    return values


def validate_entry(entry: LoreEntry) -> None:
    """Refuse an entry the assembler could not use, naming the field at fault."""
    if entry.active and not entry.content.strip():
        raise ValidationError(
            {"content": "An active lore entry needs text: write some, or make it inactive."}
        )
    try:
        entry.for_assembly()
    except LoreError as error:
        message = str(error)
        # "lore entry #0: key 3 is blank" reads "key 3 is blank" on the entry's own form.
        if message.startswith("lore entry #"):
            message = message.split(": ", 1)[-1]
        raise ValidationError({error.field: message[:1].upper() + message[1:] + "."}) from None


def _arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """The editable fields among a service's ``locals()``, taken before it sets any local
    of its own: each field is named once, in the service's signature, and one added to
    EDITABLE_FIELDS and to a signature is passed on with no third list to update."""
    return {name: arguments[name] for name in EDITABLE_FIELDS if name in arguments}


def lore_changed() -> None:
    """Once the transaction commits, every process loads the changed lore afresh."""
    generation_changed(LORE_GENERATION_KEY)


@transaction.atomic
def lore_entry_create(
    *,
    actor: Actor,
    world: World | None,
    content: str,
    keys: Sequence[str] = (),
    title: str = "",
    whole_words: bool = True,
    case_sensitive: bool = False,
    priority: int = 0,
    group: str | None = "",
    constant: bool = False,
    recursive: bool = True,
    active: bool = True,
    metadata: dict[str, Any] | None = None,
    import_key: str = "",
) -> LoreEntry:
    """Create a lore entry of ``world`` (None: of every world)."""
    require(actor, role=Role.AUTHOR, action=CHANGING_LORE)
    values = _arguments(locals())
    entry = LoreEntry(**_normalized({**values, "keys": list(keys)}), import_key=import_key)
    validate_entry(entry)
    save_first_revision(entry, actor)
    lore_changed()
    return entry


def _lock(entry: LoreEntry, expected_revision: int | None) -> LoreEntry:
    return locked_revision(entry, expected_revision, "The lore entry")


def _apply(current: LoreEntry, changes: dict[str, Any], actor: Actor) -> LoreEntry:
    """Set what differs in ``changes``, check and save it; unchanged: nothing saved."""
    changed = []
    for name, value in _normalized(changes).items():
        attr = "world_id" if name == "world" else name
        new = value.pk if name == "world" and value is not None else value
        if getattr(current, attr) != new:
            setattr(current, name, value)
            changed.append(name)
    if not changed:
        return current
    validate_entry(current)
    save_revision(current, actor, changed)
    lore_changed()
    return current


@transaction.atomic
def lore_entry_update(
    *,
    actor: Actor,
    entry: LoreEntry,
    expected_revision: int | None = None,
    world: World | _Unset | None = UNSET,
    title: str | _Unset = UNSET,
    content: str | _Unset = UNSET,
    keys: Sequence[str] | _Unset = UNSET,
    whole_words: bool | _Unset = UNSET,
    case_sensitive: bool | _Unset = UNSET,
    priority: int | _Unset = UNSET,
    group: str | _Unset | None = UNSET,
    constant: bool | _Unset = UNSET,
    recursive: bool | _Unset = UNSET,
    active: bool | _Unset = UNSET,
    metadata: dict[str, Any] | _Unset = UNSET,
) -> LoreEntry:
    """Change some fields of a lore entry; saves only what changed and bumps the revision.

    Fields left ``UNSET`` keep their value. Returns the saved entry (unchanged, with no
    new revision, when nothing differs)."""
    require(actor, role=Role.AUTHOR, action=CHANGING_LORE)
    given = _arguments(locals())
    changes = {name: value for name, value in given.items() if value is not UNSET}
    return _apply(_lock(entry, expected_revision), changes, actor)


@transaction.atomic
def lore_entry_delete(
    *, actor: Actor, entry: LoreEntry, expected_revision: int | None = None
) -> None:
    """Delete a lore entry; its history (the deletion included) is kept."""
    require(actor, role=Role.AUTHOR, action=CHANGING_LORE)
    current = _lock(entry, expected_revision)
    record_actor(current, actor)
    current.delete()
    lore_changed()


@transaction.atomic
def lore_entry_restore(
    *, actor: Actor, entry: LoreEntry, revision: int, expected_revision: int | None = None
) -> LoreEntry:
    """Bring back what a lore entry said at ``revision``, as a new revision (history is
    never rewritten: the restore is a change like any other)."""
    require(actor, role=Role.AUTHOR, action=CHANGING_LORE)
    record = entry.history.filter(revision=revision).order_by("-history_id").first()  # type: ignore[attr-defined]
    if record is None:
        raise ValidationError({"revision": f"Lore entry #{entry.pk} has no revision {revision}."})
    world = None
    if record.world_id is not None:
        world = World.objects.filter(pk=record.world_id).first()
        if world is None:
            raise ValidationError(
                {"revision": f"Revision {revision} belongs to a world that no longer exists."}
            )
    changes = {name: getattr(record, name) for name in EDITABLE_FIELDS if name != "world"}
    return _apply(_lock(entry, expected_revision), {**changes, "world": world}, actor)


BATCH_FIELDS = ("group", "priority", "active")
"""What a batch edit of a selection of entries may set."""

MAX_BATCH = 500
"""The most entries one batch edit changes."""


@transaction.atomic
def lore_entries_update(
    *,
    actor: Actor,
    revisions: dict[int, int],
    group: str | _Unset | None = UNSET,
    priority: int | _Unset = UNSET,
    active: bool | _Unset = UNSET,
) -> list[LoreEntry]:
    """Set the group, priority or active flag of several entries at once.

    ``revisions`` maps each entry's id to the revision the author saw: if any entry moved
    on (or is gone), nothing is changed. Returns the entries, in id order."""
    require(actor, role=Role.AUTHOR, action=CHANGING_LORE)
    if not revisions:
        raise ValidationError({"entries": "Choose at least one lore entry."})
    if len(revisions) > MAX_BATCH:
        raise ValidationError({"entries": f"At most {MAX_BATCH} lore entries at once."})
    changes = {
        name: value
        for name, value in (("group", group), ("priority", priority), ("active", active))
        if value is not UNSET
    }
    if not changes:
        raise ValidationError({"entries": "Choose what to change: group, priority or active."})
    rows = {
        row.pk: row for row in LoreEntry.objects.select_for_update().filter(pk__in=list(revisions))
    }
    gone = sorted(set(revisions) - set(rows))
    if gone:
        raise ValidationError(
            {"entries": f"Lore entries {', '.join(f'#{i}' for i in gone)} no longer exist."}
        )
    for pk in sorted(rows):
        if rows[pk].revision != revisions[pk]:
            raise StaleRevisionError(
                expected=revisions[pk], current=rows[pk].revision, what=f"Lore entry #{pk}"
            )
    saved = []
    for pk in sorted(rows):
        try:
            saved.append(_apply(rows[pk], changes, actor))
        except ValidationError as error:
            raise ValidationError(
                {"entries": f"Lore entry #{pk}: {' '.join(error.messages)}"}
            ) from None
    return saved


@dataclass
class ImportedEntry:
    """What became of one entry of an imported file (``action``: created, updated,
    unchanged or skipped), with what had no equivalent (``notes``) or was wrong
    (``errors``, by field, named as the file names it)."""

    uid: str
    title: str
    action: str
    id: int | None = None
    notes: list[str] = field(default_factory=list)
    errors: dict[str, list[str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "uid": self.uid,
            "title": self.title,
            "action": self.action,
            "id": self.id,
            "notes": self.notes,
            "errors": self.errors,
        }


@dataclass
class ImportReport:
    world: str
    dry_run: bool
    entries: list[ImportedEntry]

    def count(self, action: str) -> int:
        return sum(1 for entry in self.entries if entry.action == action)

    def to_dict(self) -> dict[str, Any]:
        return {
            "world": self.world,
            "dry_run": self.dry_run,
            **{
                action: self.count(action)
                for action in ("created", "updated", "unchanged", "skipped")
            },
            "entries": [entry.to_dict() for entry in self.entries],
        }


def _differs(entry: LoreEntry, values: dict[str, Any]) -> bool:
    return any(getattr(entry, name) != value for name, value in values.items())


@transaction.atomic
def lorebook_import(
    *, actor: Actor, world: World, data: Any, dry_run: bool = False
) -> ImportReport:
    """Import a SillyTavern World Info file (parsed JSON) into ``world``.

    An entry of the file is found again by its ``uid`` (an entry imported before, or one
    of this world's own entries exported with its id), so importing the same file twice
    changes nothing. An entry that cannot be stored is skipped and its errors reported,
    each under the name the file gives the field; what has no equivalent is reported per
    entry. ``dry_run``: report what would change, change nothing. A file that is not
    World Info raises ``ValidationError`` (``file``).
    """
    require(actor, role=Role.AUTHOR, action=CHANGING_LORE)
    parsed = worldinfo.parse(data)
    rows = list(LoreEntry.objects.select_for_update().filter(world=world).order_by("id"))
    existing = {entry.import_key: entry for entry in rows if entry.import_key}
    own = {str(entry.pk): entry for entry in rows if not entry.import_key}
    report = ImportReport(world=world.slug, dry_run=dry_run, entries=[])
    for item in parsed:
        done = ImportedEntry(uid=item.uid, title=item.values["title"], action="", notes=item.notes)
        report.entries.append(done)
        import_key = worldinfo.import_key(item.uid)
        current = existing.get(import_key) or own.get(item.uid)
        try:
            values = _normalized(item.values)
            if current is not None and "metadata" in values:
                # What the file keeps replaces its own part; the rest of the metadata stays.
                values["metadata"] = {**current.metadata, **values["metadata"]}
            if current is None:
                entry = LoreEntry(world=world, import_key=import_key, **values)
                validate_entry(entry)
                done.action = "created"
                if not dry_run:
                    entry = lore_entry_create(
                        actor=actor, world=world, import_key=import_key, **values
                    )
                    existing[import_key] = entry
                    done.id = entry.pk
                continue
            done.id = current.pk
            if not _differs(current, values):
                done.action = "unchanged"
                continue
            if dry_run:
                probe = LoreEntry(world=world, **values)
                validate_entry(probe)
            else:
                _apply(current, values, actor)
            done.action = "updated"
        except ValidationError as error:
            done.action = "skipped"
            done.errors = worldinfo.file_errors(error.message_dict)
    return report


__all__ = [
    "BATCH_FIELDS",
    "EDITABLE_FIELDS",
    "MAX_BATCH",
    "UNSET",
    "ImportReport",
    "ImportedEntry",
    "lore_entries_update",
    "lore_entry_create",
    "lore_entry_delete",
    "lore_entry_restore",
    "lore_entry_update",
    "lorebook_import",
    "validate_entry",
]
