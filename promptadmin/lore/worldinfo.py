"""SillyTavern World Info files, read into lore entries and written from them.

A World Info file is a JSON object whose ``entries`` map uids to entries (older files
list them). What each field becomes here:

========================  =====================================================
``key``                   ``keys``
``comment``               ``title``
``content``               ``content``
``constant``              ``constant``
``order``                 ``priority`` (higher first, as SillyTavern orders)
``group``                 ``group``
``preventRecursion``      ``recursive`` is its opposite
``disable``               ``active`` is its opposite
``caseSensitive``         ``case_sensitive`` (null: the default, false)
``matchWholeWords``       ``whole_words`` (null: the default, true)
========================  =====================================================

Every other field (``keysecondary``, ``position``, ``depth``, ``probability``...) is kept
in the entry's metadata under ``sillytavern`` and written back on export; what would make
SillyTavern behave differently from here (secondary keys, ``excludeRecursion``, a
probability, regular-expression keys...) is reported per entry as a note.

>>> [entry.values["keys"] for entry in parse({"entries": {"3": {"uid": 3, "key": ["bell"],
...     "content": "The bell.", "keysecondary": ["tower"], "selective": True}}})]
[['bell']]
>>> parse({"entries": {"3": {"key": ["bell"], "content": "The bell.",
...     "keysecondary": ["tower"], "selective": True}}})[0].notes
['secondary keys (keysecondary: tower) have no equivalent: kept, not matched']
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError

from assembler.lore import MAX_LORE_PRIORITY, MIN_LORE_PRIORITY
from assembler.storable import UnencodableKeyError, loads, refuse_unencodable_keys

MAX_FILE_ENTRIES = 20_000
"""The most entries one imported file may hold."""

MAX_FILE_BYTES = 50 * 1024 * 1024
"""The largest World Info file an import reads."""

IMPORT_PREFIX = "st:"
MAX_UID_LENGTH = 60  # the import key is ``st:<uid>``, 64 characters at most

METADATA_KEY = "sillytavern"

# Each lore field and the file's field it is made from (see the table above): an entry
# that cannot be stored names what to fix in the file by these names.
FILE_FIELDS = {
    "keys": "key",
    "title": "comment",
    "content": "content",
    "constant": "constant",
    "priority": "order",
    "group": "group",
    "recursive": "preventRecursion",
    "active": "disable",
    "case_sensitive": "caseSensitive",
    "whole_words": "matchWholeWords",
}
# The fields that map onto an entry's own fields; the others are kept in its metadata.
MAPPED = ("uid", *FILE_FIELDS.values())

_REGEX_KEY = re.compile(r"^/.+/[a-z]*$", re.S)


@dataclass
class ParsedEntry:
    """One entry of a file: its uid, the lore entry's field values (``metadata`` only when
    the entry has fields kept there), and what has no equivalent here (``notes``)."""

    uid: str
    values: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def import_key(uid: str) -> str:
    return f"{IMPORT_PREFIX}{uid}"


def _file_error(message: str) -> ValidationError:
    return ValidationError({"file": message})


def read(raw: bytes) -> Any:
    """The JSON of an uploaded file, or ``ValidationError`` (field ``file``) saying why it
    cannot be read: not UTF-8, not JSON, NaN or a number too large, nested too deeply, a
    key holding a lone surrogate."""
    if len(raw) > MAX_FILE_BYTES:
        raise _file_error(f"The file is {len(raw)} bytes; at most {MAX_FILE_BYTES} bytes.")
    try:
        text = raw.decode("utf-8-sig")
        data = loads(text)
        refuse_unencodable_keys(data, text)
    except RecursionError:
        raise _file_error("The JSON nests too deeply.") from None
    except UnencodableKeyError:
        raise _file_error("A key holds a lone surrogate (U+D800 to U+DFFF): not UTF-8.") from None
    except ValueError as error:  # JSONDecodeError, UnicodeDecodeError, NaN, huge numbers
        raise _file_error(f"Not a JSON file: {error}") from None
    return data


def _items(data: Any) -> Iterable[tuple[str, Any]]:
    if not isinstance(data, Mapping) or "entries" not in data:
        raise _file_error("Expected a SillyTavern World Info file: a JSON object with 'entries'.")
    entries = data["entries"]
    if isinstance(entries, Mapping):
        items = list(entries.items())
    elif isinstance(entries, list):
        items = [(str(index), entry) for index, entry in enumerate(entries)]
    else:
        raise _file_error("'entries' must be an object of entries by uid, or a list of entries.")
    if len(items) > MAX_FILE_ENTRIES:
        raise _file_error(f"At most {MAX_FILE_ENTRIES} entries per file, got {len(items)}.")
    return items


def _uid(position: str, entry: Mapping[str, Any]) -> str:
    uid = entry.get("uid", position)
    if isinstance(uid, bool) or not isinstance(uid, int | str):
        uid = position
    return str(uid)


def _flag(entry: Mapping[str, Any], name: str, default: bool) -> Any:
    value = entry.get(name, default)
    return default if value is None else value


def _negated(entry: Mapping[str, Any], name: str) -> Any:
    """The opposite of a flag that is false by default (a value of another type as it is,
    for the services to refuse)."""
    value = _flag(entry, name, False)
    return not value if isinstance(value, bool) else value


def parse(data: Any) -> list[ParsedEntry]:
    """The entries of a World Info file (parsed JSON), in the file's order.

    A value of the wrong type is passed on as it is, for the services to refuse with a
    message naming the field; a file that is not World Info raises ``ValidationError``
    (field ``file``)."""
    parsed: list[ParsedEntry] = []
    seen: set[str] = set()
    for position, entry in _items(data):
        if not isinstance(entry, Mapping):
            raise _file_error(f"Entry {position}: expected a JSON object.")
        uid = _uid(position, entry)
        if len(uid) > MAX_UID_LENGTH or not uid.isprintable():
            raise _file_error(f"Entry {position}: a uid is at most {MAX_UID_LENGTH} characters.")
        if uid in seen:
            raise _file_error(f"Entry {position}: uid {uid} is used twice.")
        seen.add(uid)
        keys = entry.get("key", entry.get("keys", []))
        order = entry.get("order", 0)
        if isinstance(order, float) and order.is_integer():
            order = int(order)
        values = {
            "title": entry.get("comment") or "",
            "content": entry.get("content") or "",
            "keys": keys,
            "constant": _flag(entry, "constant", False),
            "priority": order,
            "group": entry.get("group") or "",
            "recursive": _negated(entry, "preventRecursion"),
            "active": _negated(entry, "disable"),
            "case_sensitive": _flag(entry, "caseSensitive", False),
            "whole_words": _flag(entry, "matchWholeWords", True),
        }
        kept = {name: value for name, value in entry.items() if name not in MAPPED}
        if kept:
            values["metadata"] = {METADATA_KEY: kept}
        if isinstance(order, int) and not isinstance(order, bool):
            values["priority"] = max(MIN_LORE_PRIORITY, min(MAX_LORE_PRIORITY, order))
        parsed.append(ParsedEntry(uid, values, _notes(entry)))
    return parsed


def _notes(entry: Mapping[str, Any]) -> list[str]:
    """What in ``entry`` SillyTavern would do that lore here does not."""
    notes = []
    secondary = entry.get("keysecondary")
    if isinstance(secondary, list) and secondary:
        shown = ", ".join(str(key) for key in secondary[:5])
        notes.append(
            f"secondary keys (keysecondary: {shown}) have no equivalent: kept, not matched"
        )
    keys = entry.get("key", [])
    if isinstance(keys, list):
        for key in keys:
            if isinstance(key, str) and _REGEX_KEY.match(key):
                notes.append(f"key {key!r} is a regular expression there: matched as plain text")
    if entry.get("excludeRecursion") is True:
        notes.append(
            "excludeRecursion has no equivalent: other entries' content may trigger this one"
        )
    if entry.get("delayUntilRecursion") not in (None, False, 0):
        notes.append("delayUntilRecursion has no equivalent: it may fire on the turn's text")
    probability = entry.get("probability")
    if (
        entry.get("useProbability", True) is not False
        and isinstance(probability, int | float)
        and not isinstance(probability, bool)
        and probability < 100
    ):
        notes.append(f"probability {probability}% has no equivalent: it always fires")
    group = entry.get("group")
    if isinstance(group, str) and "," in group:
        notes.append(f"several groups ({group!r}) are one group here, named as written")
    for name in ("scanDepth", "useGroupScoring", "groupOverride"):
        if entry.get(name) not in (None, False):
            notes.append(f"{name} has no equivalent: the request's lore options apply")
    return notes


def file_errors(errors: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """An entry's errors by lore field, named as the file names them (``order``, not
    ``priority``); those of no file field (``metadata``...) as they are.

    >>> file_errors({"priority": ["Expected an integer."], "content": ["Needs text."]})
    {'order': ['Expected an integer.'], 'content': ['Needs text.']}
    """
    return {FILE_FIELDS.get(name, name): problems for name, problems in errors.items()}


def _uid_value(uid: str) -> int | str:
    return int(uid) if uid.isdigit() else uid


def export(entries: Iterable[Any]) -> dict[str, Any]:
    """A World Info file of ``entries`` (lore entry rows), by uid: an imported entry keeps
    the uid it came with, an entry made here has its id (or, taken, the next free
    number), so that importing the file back into its world finds every entry again."""
    rows = list(entries)
    taken = {row.import_key[len(IMPORT_PREFIX) :] for row in rows if row.import_key}
    next_free = max((int(uid) for uid in taken if uid.isdigit()), default=0) + 1
    out: dict[str, Any] = {}
    for row in rows:
        if row.import_key.startswith(IMPORT_PREFIX):
            uid = row.import_key[len(IMPORT_PREFIX) :]
        elif str(row.pk) not in taken:
            uid = str(row.pk)
        else:
            while str(next_free) in taken:
                next_free += 1
            uid = str(next_free)
        taken.add(uid)
        kept = row.metadata.get(METADATA_KEY) if isinstance(row.metadata, dict) else None
        out[uid] = {
            **(kept if isinstance(kept, dict) else {}),
            "uid": _uid_value(uid),
            "key": list(row.keys),
            "comment": row.title,
            "content": row.content,
            "constant": row.constant,
            "order": row.priority,
            "group": row.group,
            "preventRecursion": not row.recursive,
            "disable": not row.active,
            "caseSensitive": row.case_sensitive,
            "matchWholeWords": row.whole_words,
        }
    return {"entries": out}
