"""Who makes a change, and how history records it.

An actor is a person (a user), a service calling with an API key, or nobody (scripts,
the demo seed). Keys are recognised by their ``is_api_key`` attribute, so this module
needs no import of the app that stores them.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol, TypeGuard, runtime_checkable

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import models


@runtime_checkable
class KeyActor(Protocol):
    """An API key acting on its service's behalf (``promptadmin.content.models.ApiKey``)."""

    is_api_key: bool
    name: str
    prefix: str


Actor = AbstractBaseUser | AnonymousUser | KeyActor | None

# simple-history's change reason column is 100 characters.
_REASON_LENGTH = 100


def is_key(actor: Any) -> TypeGuard[KeyActor]:
    return bool(getattr(actor, "is_api_key", False))


def user_or_none(actor: Actor) -> AbstractBaseUser | None:
    """The user to record for a change (API keys, scripts and the seed are nobody)."""
    if actor is None or is_key(actor) or not actor.is_authenticated:  # type: ignore[union-attr]
        return None
    return actor  # type: ignore[return-value]


def key_label(key: KeyActor) -> str:
    """How a change made with ``key`` is attributed: ``API key 'name' (prefix)``."""
    return f"API key '{key.name}' ({key.prefix})"


class Attribution(NamedTuple):
    """Who a change is recorded as made by: the person (None for a key, a script or the
    seed), and the label of the key it was made with ("" for people and scripts)."""

    user: AbstractBaseUser | None
    via: str


def attribution(actor: Actor, *, max_length: int = _REASON_LENGTH) -> Attribution:
    """How a row records ``actor``: a person as its user, a key by its label (cut to the
    column's ``max_length``), in the columns a model names for them."""
    via = key_label(actor)[:max_length] if is_key(actor) else ""
    return Attribution(user_or_none(actor), via)


def record_actor(obj: models.Model, actor: Actor) -> None:
    """Make django-simple-history attribute the next save or delete of ``obj`` to ``actor``.

    Keys are not users: a change made with one records no user, and names the key in the
    history's change reason instead.
    """
    obj._history_user = user_or_none(actor)  # type: ignore[attr-defined]
    if is_key(actor):
        obj._change_reason = key_label(actor)[:_REASON_LENGTH]  # type: ignore[attr-defined]
