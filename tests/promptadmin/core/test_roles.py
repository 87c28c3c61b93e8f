from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser, Group
from django.core.exceptions import PermissionDenied

from promptadmin.core.roles import Role, can_edit, is_admin, require, role_of
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_the_role_groups_exist_after_migrating() -> None:
    assert set(Group.objects.values_list("name", flat=True)) >= {"viewer", "author", "admin"}


def test_a_user_in_no_group_is_a_viewer() -> None:
    user = UserFactory()
    assert role_of(user) is Role.VIEWER
    assert not can_edit(user)


def test_the_highest_group_wins() -> None:
    user = UserFactory()
    user.groups.add(Group.objects.get(name="viewer"), Group.objects.get(name="author"))
    assert role_of(user) is Role.AUTHOR
    assert can_edit(user) and not is_admin(user)


def test_superusers_are_admins() -> None:
    assert is_admin(UserFactory(is_superuser=True))


def test_anonymous_and_inactive_users_have_no_role() -> None:
    assert role_of(AnonymousUser()) is None
    assert role_of(UserFactory(is_active=False)) is None


def test_the_role_is_looked_up_once_per_user_object(django_assert_num_queries) -> None:  # type: ignore[no-untyped-def]
    user = UserFactory()
    with django_assert_num_queries(1):
        role_of(user)
        role_of(user)


class _Key:
    is_api_key = True
    name = "game-server"
    prefix = "abc123"

    def __init__(self, scope: str) -> None:
        self.scope = scope
        self.can_write = scope in ("write", "admin")
        self.can_admin = scope == "admin"


@pytest.mark.parametrize(
    ("scope", "role", "allowed"),
    [
        ("read", Role.VIEWER, True),
        ("read", Role.AUTHOR, False),
        ("write", Role.AUTHOR, True),
        ("write", Role.ADMIN, False),
        ("admin", Role.ADMIN, True),
    ],
)
def test_require_lets_a_key_do_what_its_scope_stands_for(
    scope: str, role: Role, allowed: bool
) -> None:
    if allowed:
        require(_Key(scope), role=role, action="Changing prompts")
    else:
        with pytest.raises(PermissionDenied, match=f"scope '{scope}': changing prompts needs"):
            require(_Key(scope), role=role, action="Changing prompts")


@pytest.mark.parametrize(
    ("group", "role", "allowed"),
    [
        (None, Role.VIEWER, True),
        (None, Role.AUTHOR, False),
        ("author", Role.AUTHOR, True),
        ("author", Role.ADMIN, False),
        ("admin", Role.ADMIN, True),
    ],
)
def test_require_lets_a_person_do_what_their_role_allows(
    group: str | None, role: Role, allowed: bool
) -> None:
    user = UserFactory()
    if group:
        user.groups.add(Group.objects.get(name=group))
    if allowed:
        require(user, role=role, action="Moving a label")
    else:
        with pytest.raises(PermissionDenied, match="Moving a label needs the"):
            require(user, role=role, action="Moving a label")


def test_require_refuses_anonymous_people_and_lets_scripts_through() -> None:
    with pytest.raises(PermissionDenied):
        require(AnonymousUser(), role=Role.VIEWER, action="Reading")
    require(None, role=Role.ADMIN, action="Anything")
