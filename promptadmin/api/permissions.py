"""What callers may do. Read: assemble, preview, fetch. Write: also change content.
Migrate: also import legacy exports and review deprecated content.

API keys carry a scope (``read``, ``write`` or ``admin``, which includes ``write``); people
have a role (viewer, author, admin; see ``promptadmin.core.roles``). Viewers and read keys
read; authors, admins, write and admin keys also write; only admins and admin keys migrate
deprecated content and move release labels.
"""

from __future__ import annotations

from typing import Any

from rest_framework import permissions
from rest_framework.request import Request

from promptadmin.content.models import ApiKey
from promptadmin.core.roles import can_edit, is_admin, role_of


class _Access(permissions.BasePermission):
    def needs_write(self, request: Request) -> bool:
        raise NotImplementedError

    def has_permission(self, request: Request, view: Any) -> bool:
        write = self.needs_write(request)
        key = request.auth if isinstance(request.auth, ApiKey) else None
        if key is not None:
            if write and not key.can_write:
                self.message = (
                    f"API key '{key.name}' has scope '{key.scope}': changing content needs "
                    "a key with scope 'write'."
                )
                return False
            return True
        role = role_of(request.user)
        if role is None:
            return False
        if write and not can_edit(request.user):
            self.message = (
                f"Your role is '{role.label}': changing content needs the author or admin role."
            )
            return False
        return True


class CanRead(_Access):
    """Any API key; any signed-in person (viewer and up)."""

    def needs_write(self, request: Request) -> bool:
        return False


class CanWrite(_Access):
    """Write keys; authors and admins."""

    def needs_write(self, request: Request) -> bool:
        return True


class ReadOrWrite(_Access):
    """Reads (GET, HEAD, OPTIONS) as :class:`CanRead`, everything else as :class:`CanWrite`."""

    def needs_write(self, request: Request) -> bool:
        return request.method not in permissions.SAFE_METHODS


class IsAdmin(permissions.BasePermission):
    """Admin-scope keys; people with the admin role (moving release labels, for instance)."""

    # What the permission guards, as its refusal names it.
    guards = "this"

    def has_permission(self, request: Request, view: Any) -> bool:
        key = request.auth if isinstance(request.auth, ApiKey) else None
        if key is not None:
            if not key.can_admin:
                self.message = (
                    f"API key '{key.name}' has scope '{key.scope}': {self.guards} needs a key "
                    "with scope 'admin'."
                )
                return False
            return True
        role = role_of(request.user)
        if role is None:
            return False
        if not is_admin(request.user):
            self.message = f"Your role is '{role.label}': {self.guards} needs the admin role."
            return False
        return True


class CanMigrate(IsAdmin):
    """Admin keys; admins. Imports and the review of deprecated content."""

    guards = "importing and migrating deprecated content"


class ReadOrAdmin(IsAdmin):
    """Reads as :class:`CanRead`, everything else as :class:`IsAdmin`."""

    def has_permission(self, request: Request, view: Any) -> bool:
        if request.method in permissions.SAFE_METHODS:
            return CanRead().has_permission(request, view)
        return super().has_permission(request, view)
