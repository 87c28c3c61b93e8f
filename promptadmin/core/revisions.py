"""Saving a change to stored text that carries a revision (segments, lore entries), and
locking any row with a revision for a write."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from promptadmin.core.actors import Actor, record_actor, user_or_none
from promptadmin.core.errors import StaleRevisionError
from promptadmin.core.tokens import cached_count, store_count

T = TypeVar("T")


def locked_revision(obj: T, expected_revision: int | None, what: str | Callable[[T], str]) -> T:
    """``obj`` re-read under a row lock until the transaction ends; StaleRevisionError
    (saying ``what`` was changed, or ``what(current row)``) when the caller edited an older
    revision than the current one.

    The check happens inside the writing transaction, so two writers holding the same
    revision cannot both succeed."""
    current = type(obj)._default_manager.select_for_update().get(pk=obj.pk)  # type: ignore[attr-defined]
    if expected_revision is not None and current.revision != expected_revision:
        raise StaleRevisionError(
            expected=expected_revision,
            current=current.revision,
            what=what(current) if callable(what) else what,
        )
    return current


def save_first_revision(obj: Any, actor: Actor) -> None:
    """Save a new ``obj`` (revision 1) made by ``actor``, with its token count."""
    obj.created_by = obj.updated_by = user_or_none(actor)
    store_count(obj)
    record_actor(obj, actor)
    obj.save()


def save_revision(obj: Any, actor: Actor, changed: list[str]) -> None:
    """Save the ``changed`` fields of ``obj`` as its next revision, by ``actor``; its token
    count is made afresh when its content changed or was counted with another encoding."""
    if "content" in changed or cached_count(obj) is None:
        store_count(obj)
        changed = [*changed, "token_count", "token_encoding"]
    obj.revision += 1
    obj.updated_by = user_or_none(actor)
    record_actor(obj, actor)
    obj.save(update_fields=[*changed, "revision", "updated_by", "updated_at"])
