from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser, Group

from promptadmin.core.roles import Role, can_edit, is_admin, role_of
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
