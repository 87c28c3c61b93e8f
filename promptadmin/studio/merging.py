"""Saving an edit made from an older revision: a three-way merge, or a decision screen.

The studio's forms carry the revision they were loaded at. When the service refuses a save
because the object moved on, the two edits are merged field by field against that
revision (read from history): fields only the other author changed keep their value,
fields only this author changed take theirs, and when both changed a field the author
decides on a conflict screen (radios ``resolve_<field>``: ``mine`` or ``theirs``). The API
never merges: it answers 412.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from django.core.exceptions import ValidationError
from django.db.models import Model
from django.http import HttpRequest

from promptadmin.core.errors import StaleRevisionError
from promptadmin.studio import diffs, selectors

T = TypeVar("T", bound=Model)
Values = dict[str, Any]


@dataclass(frozen=True)
class FieldConflict:
    """One field both authors changed, differently: what each made of the common base."""

    name: str
    label: str
    base: str
    mine: str
    theirs: str
    # For long text: each side's changes against the base, side by side.
    mine_rows: list[diffs.Row] | None = None
    theirs_rows: list[diffs.Row] | None = None


@dataclass(frozen=True)
class Conflict:
    """The object was saved by someone else after the author loaded it."""

    theirs: Any
    theirs_by: str
    yours_revision: int
    fields: list[FieldConflict]
    kept_theirs: list[str]
    applied_mine: list[str]
    base_known: bool
    # The values the form now holds: the merge, with this author's value where both changed.
    values: Values

    @property
    def base_title(self) -> str:
        return f"Revision {self.yours_revision}"


def resolved(
    request: HttpRequest,
    obj: Model,
    expected: int,
    mine: Values,
    names: list[str],
    values_of: Callable[[Any], Values],
) -> Values:
    """``mine`` with the conflict screen's "take theirs" choices applied.

    "Theirs" is the revision the conflict screen showed, which the form is now based on.
    """
    taken = [name for name in names if request.POST.get(f"resolve_{name}") == "theirs"]
    if not taken:
        return mine
    record = selectors.revision_record(obj, expected)
    if record is None:
        return mine
    theirs = values_of(record)
    return {**mine, **{name: theirs[name] for name in taken}}


def said(labels: list[str]) -> str:
    return ", ".join(label.lower() for label in labels) or "none"


def merge_or_conflict(
    *,
    current: T,
    expected: int,
    mine: Values,
    names: list[str],
    labels: Mapping[str, str],
    values_of: Callable[[Any], Values],
    save: Callable[[T, Values], T],
    show: Callable[[str, Any], str] = lambda name, value: diffs.show(value),
    text_fields: tuple[str, ...] = (),
) -> tuple[T | None, Conflict, str, ValidationError | None]:
    """After a stale save: save the merge when no field needs a decision, else a Conflict.

    Returns (saved or None, the conflict description, a message for the author, and the
    errors that refused the merged values, to show on the form).
    """
    record = selectors.revision_record(current, expected)
    base = values_of(record) if record is not None else None
    theirs = values_of(current)
    merge = diffs.three_way(base, mine, theirs, names)
    who = str(getattr(current, "updated_by", None) or _history_user(current) or "Someone")
    conflict = Conflict(
        theirs=current,
        theirs_by=who,
        yours_revision=expected,
        fields=[
            _field(n, labels[n], base, mine, theirs, show, text_fields) for n in merge.conflicts
        ],
        kept_theirs=[labels[n] for n in merge.theirs_only],
        applied_mine=[labels[n] for n in merge.mine_only],
        base_known=base is not None,
        values=merge.values,
    )
    if merge.conflicts:
        return None, conflict, "", None
    try:
        saved = save(current, merge.values)
    except StaleRevisionError:
        # Moved on again: show the merge for a decision.
        return None, conflict, "", None
    except ValidationError as exc:
        # The merged values break a rule (a slug taken meanwhile): say which, on the form.
        return None, conflict, "", exc
    message = (
        f"Saved revision {saved.revision}. {who} saved revision {current.revision} "  # type: ignore[attr-defined]
        f"meanwhile: their changes ({said(conflict.kept_theirs)}) were kept and yours "
        f"({said(conflict.applied_mine)}) applied."
    )
    return saved, conflict, message, None


def save_merging(
    *,
    request: HttpRequest,
    obj: T,
    expected: int,
    mine: Values,
    save: Callable[[T, Values, int], T],
    reread: Callable[[T], T],
    names: list[str],
    labels: Mapping[str, str],
    values_of: Callable[[Any], Values],
    show: Callable[[str, Any], str] = lambda name, value: diffs.show(value),
    text_fields: tuple[str, ...] = (),
) -> tuple[T | None, Conflict | None, str, ValidationError | None]:
    """Save ``mine`` over ``obj`` as loaded at revision ``expected`` (``save(obj, values,
    expected_revision)``); when someone saved since, merge with the object as ``reread``
    finds it now (see :func:`merge_or_conflict`). The conflict screen's "take theirs"
    choices in ``request`` apply to ``mine`` first (see :func:`resolved`).

    Returns (the saved object or None, the conflict to decide or None, the message saying
    what was merged, if anything, and the errors that refused the merge). The service's
    other refusals of the first save (ValidationError...) are the caller's to show.
    """
    mine = resolved(request, obj, expected, mine, names, values_of)
    try:
        return save(obj, mine, expected), None, "", None
    except StaleRevisionError:
        pass
    merged, conflict, message, error = merge_or_conflict(
        current=reread(obj),
        expected=expected,
        mine=mine,
        names=names,
        labels=labels,
        values_of=values_of,
        save=lambda now, values: save(now, values, now.revision),  # type: ignore[attr-defined]
        show=show,
        text_fields=text_fields,
    )
    return merged, None if merged is not None else conflict, message, error


def _history_user(obj: Any) -> Any:
    history = getattr(obj, "history", None)
    if history is None:
        return None
    record = history.order_by("-history_id").first()
    return record.history_user if record is not None else None


def _field(
    name: str,
    label: str,
    base: Values | None,
    mine: Values,
    theirs: Values,
    show: Callable[[str, Any], str],
    text_fields: tuple[str, ...],
) -> FieldConflict:
    start = None if base is None else base[name]
    rows: tuple[list[diffs.Row] | None, list[diffs.Row] | None] = (None, None)
    if name in text_fields:
        origin = start if isinstance(start, str) else ""
        rows = (diffs.side_by_side(origin, mine[name]), diffs.side_by_side(origin, theirs[name]))
    return FieldConflict(
        name=name,
        label=label,
        base="(not in the history)" if base is None else show(name, start),
        mine=show(name, mine[name]),
        theirs=show(name, theirs[name]),
        mine_rows=rows[0],
        theirs_rows=rows[1],
    )
