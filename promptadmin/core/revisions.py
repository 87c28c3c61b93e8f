"""Saving a change to stored text that carries a revision (segments, lore entries)."""

from __future__ import annotations

from typing import Any

from promptadmin.core.actors import Actor, record_actor, user_or_none
from promptadmin.core.tokens import cached_count, store_count


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
