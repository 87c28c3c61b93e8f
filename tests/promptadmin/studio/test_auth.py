"""Signing in and out."""

from __future__ import annotations

from typing import Any

import pytest
from axes.models import AccessAttempt
from django.test import Client
from django.urls import reverse

from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def person() -> Any:
    return UserFactory(username="ida", password="a-good-password")


def test_signing_in_goes_to_the_page_asked_for(client: Client, person: Any) -> None:
    response = client.post(
        reverse("login"), {"username": "ida", "password": "a-good-password", "next": "/segments/"}
    )
    assert response["Location"] == "/segments/"
    assert client.get("/segments/").status_code == 200


def test_a_wrong_password_is_explained_on_the_form(client: Client, person: Any) -> None:
    response = client.post(reverse("login"), {"username": "ida", "password": "nope"})
    assert response.status_code == 200
    assert "Please enter a correct username and password." in response.content.decode()


def test_the_sign_in_form_labels_every_field(client: Client) -> None:
    html = client.get(reverse("login")).content.decode()
    assert '<label for="id_username">Username</label>' in html
    assert '<label for="id_password">Password</label>' in html


def test_signing_out_is_a_post_and_returns_to_sign_in(client: Client, person: Any) -> None:
    client.force_login(person)
    assert 'action="/accounts/logout/"' in client.get("/").content.decode()
    response = client.post(reverse("logout"))
    assert response["Location"] == reverse("login")
    assert client.get("/").status_code == 302


def sign_in(client: Client, username: str, password: str, **extra: Any) -> Any:
    return client.post(reverse("login"), {"username": username, "password": password}, **extra)


def test_repeated_wrong_passwords_lock_the_username_from_that_address_with_a_clear_message(
    client: Client, person: Any, settings: Any
) -> None:
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert sign_in(client, "ida", "nope").status_code == 200
    locked = sign_in(client, "ida", "nope")
    assert locked.status_code == 429
    assert "Sign-in is locked for now" in locked.content.decode()
    assert "15 minutes" in locked.content.decode()
    # Even the right password is refused now, from that address.
    assert sign_in(client, "ida", "a-good-password").status_code == 429
    # From elsewhere, the person signs in as usual.
    other = Client(REMOTE_ADDR="198.51.100.7")
    assert sign_in(other, "ida", "a-good-password").status_code == 302


def test_a_locked_username_never_locks_out_anyone_else_at_the_same_address(
    client: Client, person: Any, settings: Any
) -> None:
    UserFactory(username="root", password="the-admins-password", is_staff=True)
    for _ in range(settings.AXES_FAILURE_LIMIT):
        sign_in(client, "ida", "nope")
    assert sign_in(client, "ida", "a-good-password").status_code == 429
    # The admin, from the very same address (an office, a proxy), signs in.
    colleague = Client()
    assert sign_in(colleague, "root", "the-admins-password").status_code == 302
    assert colleague.get("/").status_code == 200


def test_each_wrong_password_says_how_many_tries_remain(
    client: Client, person: Any, settings: Any
) -> None:
    first = sign_in(client, "ida", "nope").content.decode()
    assert "Please enter a correct username and password." in first
    left = settings.AXES_FAILURE_LIMIT - 1
    assert f"{left} tries left for this username from your address" in first
    for _ in range(left - 2):
        sign_in(client, "ida", "nope")
    assert "1 try left for this username" in sign_in(client, "ida", "nope").content.decode()


def test_repeated_failures_across_usernames_lock_the_address_at_a_much_higher_count(
    client: Client, person: Any, settings: Any
) -> None:
    settings.LOGIN_ADDRESS_FAILURE_LIMIT = limit = 8
    for attempt in range(limit - 1):
        response = sign_in(client, f"guess-{attempt}", "nope")
        assert response.status_code == 200
    assert "1 try left from your address, for any username" in response.content.decode()
    assert sign_in(client, "guess-last", "nope").status_code == 429
    # A forged X-Forwarded-For does not make the same address look new.
    response = sign_in(client, "ida", "a-good-password", HTTP_X_FORWARDED_FOR="203.0.113.9")
    assert response.status_code == 429
    # Someone else, elsewhere, signs in as usual.
    assert sign_in(Client(REMOTE_ADDR="198.51.100.7"), "ida", "a-good-password").status_code == 302


def test_signing_in_to_ones_own_account_does_not_clear_the_addresss_count(
    client: Client, person: Any, settings: Any
) -> None:
    settings.LOGIN_ADDRESS_FAILURE_LIMIT = 8
    for attempt in range(7):
        sign_in(client, f"guess-{attempt}", "nope")
    assert sign_in(client, "ida", "a-good-password").status_code == 302
    client.post(reverse("logout"))
    assert sign_in(client, "guess-again", "nope").status_code == 429


def test_an_admin_unlocks_a_locked_account(client: Client, person: Any, settings: Any) -> None:
    for _ in range(settings.AXES_FAILURE_LIMIT):
        sign_in(client, "ida", "nope")
    admin = Client()
    admin.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    listing = admin.get("/admin/axes/accessattempt/")
    assert listing.status_code == 200 and "ida" in listing.content.decode()
    attempts = AccessAttempt.objects.filter(username="ida")
    admin.post(
        "/admin/axes/accessattempt/",
        {"action": "delete_selected", "_selected_action": [a.pk for a in attempts], "post": "yes"},
    )
    assert not AccessAttempt.objects.exists()
    assert sign_in(client, "ida", "a-good-password").status_code == 302
