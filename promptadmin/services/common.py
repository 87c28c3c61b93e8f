from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import models

from promptadmin.models import ApiKey

# Who makes a change: a person, a service with an API key, or nobody (scripts, the seed).
Actor = AbstractBaseUser | AnonymousUser | ApiKey | None

# simple-history's change reason column is 100 characters.
_REASON_LENGTH = 100


def user_or_none(actor: Actor) -> AbstractBaseUser | None:
    """The user to record for a change (API keys, scripts and the seed are nobody)."""
    if actor is None or isinstance(actor, ApiKey) or not actor.is_authenticated:
        return None
    return actor  # type: ignore[return-value]


def key_label(key: ApiKey) -> str:
    """How a change made with ``key`` is attributed: ``API key 'name' (prefix)``."""
    return f"API key '{key.name}' ({key.prefix})"


def record_actor(obj: models.Model, actor: Actor) -> None:
    """Make django-simple-history attribute the next save or delete of ``obj`` to ``actor``.

    Keys are not users: a change made with one records no user, and names the key in the
    history's change reason instead.
    """
    obj._history_user = user_or_none(actor)  # type: ignore[attr-defined]
    if isinstance(actor, ApiKey):
        obj._change_reason = key_label(actor)[:_REASON_LENGTH]  # type: ignore[attr-defined]
