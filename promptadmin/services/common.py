from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import models

Actor = AbstractBaseUser | AnonymousUser | None


def user_or_none(actor: Actor) -> AbstractBaseUser | None:
    """The user to record for a change (scripts and the seed act as nobody)."""
    if actor is None or not actor.is_authenticated:
        return None
    return actor  # type: ignore[return-value]


def record_actor(obj: models.Model, actor: Actor) -> None:
    """Make django-simple-history attribute the next save or delete of ``obj`` to ``actor``."""
    obj._history_user = user_or_none(actor)  # type: ignore[attr-defined]
