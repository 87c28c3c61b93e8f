"""Roles for people: viewer (read and preview), author (edit content), admin (everything).

A role is a Django group of the same name; superusers are admins. A signed-in user in no
group is a viewer. Every entry point (API, studio, admin) asks these functions, so the
same person can do the same things everywhere.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any

from django.core.exceptions import PermissionDenied

from promptadmin.core.actors import is_key, key_label


class Role(IntEnum):
    VIEWER = 1
    AUTHOR = 2
    ADMIN = 3

    @property
    def label(self) -> str:
        return self.name.lower()

    @property
    def article(self) -> str:
        """The article before the role's name: "a viewer", "an author", "an admin"."""
        return "an" if self.label[0] in "aeiou" else "a"


ROLE_GROUPS = {role.label: role for role in Role}


def role_of(user: Any) -> Role | None:
    """The user's role, or None for anonymous and inactive users.

    Cached on the user object, so a request asks the database at most once.
    """
    if user is None or not user.is_authenticated or not user.is_active:
        return None
    cached: Role | None = getattr(user, "_promptadmin_role", None)
    if cached is not None:
        return cached
    if user.is_superuser:
        role = Role.ADMIN
    else:
        names = user.groups.filter(name__in=ROLE_GROUPS).values_list("name", flat=True)
        role = max((ROLE_GROUPS[name] for name in names), default=Role.VIEWER)
    user._promptadmin_role = role
    return role


def has_role(user: Any, role: Role) -> bool:
    """Whether ``user`` has ``role`` or a higher one."""
    current = role_of(user)
    return current is not None and current >= role


def can_edit(user: Any) -> bool:
    return has_role(user, Role.AUTHOR)


def is_admin(user: Any) -> bool:
    return has_role(user, Role.ADMIN)


# What an API key's scope allows, by the role a person would need for the same thing:
# read keys read, write keys do what authors do, admin keys what admins do.
_KEY_ABILITY = {Role.VIEWER: None, Role.AUTHOR: "can_write", Role.ADMIN: "can_admin"}
_KEY_SCOPE_NAMES = {Role.VIEWER: "read", Role.AUTHOR: "write", Role.ADMIN: "admin"}


def require(actor: Any, *, role: Role, action: str) -> None:
    """Refuse ``actor`` unless a person has ``role`` (or higher), or a key has the scope
    that stands for it (author: ``write``, admin: ``admin``).

    Every service that changes state calls this first, so a task, a command or an import
    is checked like the API and the studio. ``None`` is a script or a management command
    run by someone with shell access, and may do anything. ``action`` completes the
    sentence "… needs …" in the error, e.g. ``"Moving a release label"``.

    >>> require(None, role=Role.ADMIN, action="Moving a release label")
    """
    if actor is None:
        return
    if is_key(actor):
        ability = _KEY_ABILITY[role]
        if ability is None or getattr(actor, ability, False):
            return
        scopes = "'write' or 'admin'" if role is Role.AUTHOR else f"'{_KEY_SCOPE_NAMES[role]}'"
        raise PermissionDenied(
            f"{key_label(actor)} has scope '{getattr(actor, 'scope', '?')}': {action[0].lower()}"
            f"{action[1:]} needs a key with scope {scopes}."
        )
    if not has_role(actor, role):
        roles = "the author or admin role" if role is Role.AUTHOR else f"the {role.label} role"
        raise PermissionDenied(f"{action} needs {roles}.")
