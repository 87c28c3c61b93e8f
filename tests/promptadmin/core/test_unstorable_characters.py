"""A NUL or a lone surrogate in any path or query parameter is a 400 (or a 404), never a
500: every URL pattern of the project is walked, each of its parameters in turn.

Signed in as an admin (a superuser in the admin group) for the studio and the Django
admin, with an admin key for the API, so that no answer stops at the door.
"""

from __future__ import annotations

import doctest
import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.urls.exceptions import NoReverseMatch

from promptadmin.content.services.api_keys import api_key_create
from promptadmin.core import middleware
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

HOSTILE = {"nul": "%00", "lone surrogate": "%ED%A0%80"}
# Values tried for a parameter until one reverses; the first distinct enough to be found
# again in the URL. Names constrained to a fixed list take one of their own (below).
SAMPLES = ("zqxv", "4242")
KNOWN = {"app_label": "promptadmin"}


def patterns(
    resolver: URLResolver, namespace: str = "", prefix_params: tuple[str, ...] = ()
) -> Iterator[tuple[str, tuple[str, ...], dict[str, Any]]]:
    """(the name to reverse, its parameters, its default kwargs) of every named pattern."""
    for entry in resolver.url_patterns:
        regex = entry.pattern.regex
        # Unnamed groups (simple_history's admin views) are passed by position: "0", "1".
        unnamed = tuple(str(n) for n in range(regex.groups - len(regex.groupindex)))
        params = (*prefix_params, *regex.groupindex, *unnamed)
        if isinstance(entry, URLResolver):
            space = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            yield from patterns(entry, space, params)
        elif isinstance(entry, URLPattern) and entry.name:
            yield f"{namespace}{entry.name}", params, entry.default_args


def sample_url(name: str, params: tuple[str, ...]) -> tuple[str, dict[str, str]] | None:
    """A URL the pattern resolves, with a value per parameter that occurs in it once."""
    for values in itertools.product(SAMPLES, repeat=len(params)):
        kwargs = {
            p: KNOWN.get(p, f"{v}{i}" if v.isdigit() else f"{v}{chr(97 + i)}")
            for i, (p, v) in enumerate(zip(params, values, strict=True))
        }
        positional = [kwargs[p] for p in params if p.isdigit()]
        named = {p: v for p, v in kwargs.items() if not p.isdigit()}
        try:
            url = reverse(name, args=positional) if positional else reverse(name, kwargs=named)
            return url, kwargs
        except NoReverseMatch:
            continue
    return None


def every_url() -> list[tuple[str, dict[str, str]]]:
    found = []
    seen = set()
    for name, params, _ in patterns(get_resolver()):
        sample = sample_url(name, params)
        assert sample is not None, f"cannot build a URL for {name} {params}"
        if sample[0] not in seen:
            seen.add(sample[0])
            found.append(sample)
    return found


URLS = every_url()


def cases() -> Iterator[Any]:
    for url, kwargs in URLS:
        for kind, bad in HOSTILE.items():
            for param, value in kwargs.items():
                if param in KNOWN:
                    continue
                hostile = url.replace(value, f"{value}{bad}", 1)
                yield pytest.param(url, hostile, id=f"{url} {param} {kind}")
            separator = "&" if "?" in url else "?"
            yield pytest.param(url, f"{url}{separator}entry=a{bad}", id=f"{url} ?entry {kind}")


@pytest.fixture
def clients(settings: Any) -> dict[str, Client]:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    admin = UserFactory(is_staff=True, is_superuser=True)
    admin.groups.add(Group.objects.get(name="admin"))
    people = Client(raise_request_exception=False)
    people.force_login(admin)
    _, key = api_key_create(actor=None, name="walker", scope="admin")
    api = Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Api-Key {key}")
    return {"people": people, "api": api}


def test_the_walk_covers_the_api_the_studio_and_the_admin() -> None:
    urls = [url for url, _ in URLS]
    assert len(urls) > 100
    assert "/api/v1/releases/zqxva/compare/zqxvb" in urls
    assert any(url.startswith("/admin/promptadmin/segment/") for url in urls)
    assert "/preview/" in urls and "/api/public/v2/prompts" in urls


@pytest.mark.parametrize(("url", "hostile"), list(cases()))
def test_a_nul_or_a_lone_surrogate_in_a_path_or_query_parameter_is_never_a_500(
    clients: dict[str, Client], url: str, hostile: str
) -> None:
    api = url.startswith("/api/")
    response = (clients["api"] if api else clients["people"]).get(hostile)
    assert response.status_code in (400, 404), (hostile, response.status_code)
    if url.startswith("/api/public/"):
        assert set(response.json()) >= {"error", "message"}
    elif api:
        body = response.json()
        assert body["type"] == "client_error" and body["errors"][0]["code"] in (
            "invalid_characters",
            "not_found",
        )
    elif response.status_code == 400:
        assert response["Content-Type"].startswith("text/html")
        assert b"cannot be read" in response.content


def test_the_examples_in_the_docstrings_hold() -> None:
    assert doctest.testmod(middleware).failed == 0


def test_text_that_is_utf8_passes_in_the_path_and_the_query(clients: dict[str, Client]) -> None:
    response = clients["people"].get("/segments/?search=caf%C3%A9%20%E9%BE%8D%25ED")
    assert response.status_code == 200
