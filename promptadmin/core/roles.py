"""Roles for people: viewer (read and preview), author (edit content), admin (everything).

A role is a Django group of the same name; superusers are admins. A signed-in user in no
group is a viewer. Every entry point (API, studio, admin) asks these functions, so the
same person can do the same things everywhere.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any


class Role(IntEnum):
    VIEWER = 1
    AUTHOR = 2
    ADMIN = 3

    @property
    def label(self) -> str:
        return self.name.lower()


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
