"""Fixtures for API tests: clients holding API keys or signed-in people, and demo content."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.core.cache import cache
from django.core.management import call_command
from rest_framework.test import APIClient

from promptadmin.content.services.api_keys import api_key_create
from promptadmin.core import cache as core_cache
from tests.factories import UserFactory


@pytest.fixture(autouse=True)
def empty_cache() -> None:
    # Redis outlives the rolled-back test transaction: start every test from a cold cache.
    cache.clear()


@pytest.fixture
def demo(db: Any) -> None:
    call_command("seed_demo")


def key_client(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    return client


@pytest.fixture
def read_key(db: Any) -> str:
    return api_key_create(actor=None, name="game-server", scope="read")[1]


@pytest.fixture
def write_key(db: Any) -> str:
    return api_key_create(actor=None, name="content-pipeline", scope="write")[1]


@pytest.fixture
def admin_key(db: Any) -> str:
    return api_key_create(actor=None, name="ops", scope="admin")[1]


@pytest.fixture
def ops(admin_key: str) -> APIClient:
    """A client with an admin key: what moves a protected prompt label or a release label."""
    return key_client(admin_key)


@pytest.fixture
def reader(read_key: str) -> APIClient:
    return key_client(read_key)


@pytest.fixture
def writer(write_key: str) -> APIClient:
    return key_client(write_key)


def person(role: str | None) -> Any:
    user = UserFactory()
    if role is not None:
        user.groups.add(Group.objects.get(name=role))
    return user


def session_client(user: Any, *, enforce_csrf: bool = False) -> APIClient:
    client = APIClient(enforce_csrf_checks=enforce_csrf)
    client.force_login(user)
    return client


def errors(response: Any) -> dict[str | None, str]:
    """The error response's details by attribute, checking the documented shape on the way."""
    body = response.json()
    assert set(body) == {"type", "errors"}
    assert all(set(error) == {"code", "detail", "attr"} for error in body["errors"])
    return {error["attr"]: error["detail"] for error in body["errors"]}


def codes(response: Any) -> list[str]:
    return [error["code"] for error in response.json()["errors"]]


def cache_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of every call made to the shared cache from now on, in order."""
    calls: list[str] = []

    class Counting:
        def __getattr__(self, name: str) -> Any:
            calls.append(name)
            return getattr(cache, name)

    monkeypatch.setattr(core_cache, "cache", Counting())
    return calls


# verifier/judge, the registered prompt the prompt API tests start from.
from tests.promptadmin.api.prompts import judge  # noqa: E402, F401
