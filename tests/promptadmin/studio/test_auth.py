"""Signing in and out."""

from __future__ import annotations

from typing import Any

import pytest
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
