"""A Redis that accepts connections but never answers costs one timeout, not one per call.

The blackhole is a local listener that accepts and never replies: the worst case for a
client, which cannot tell it from a slow server until its timeout runs out.
"""

from __future__ import annotations

import socket
import statistics
import threading
import time
from collections.abc import Iterator
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.core.cache import cache
from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

from assembler.request import AssembleParams
from promptadmin.content.assembly import assemble_prompt
from promptadmin.content.models import Segment
from promptadmin.content.services import segments
from promptadmin.content.services.api_keys import api_key_create
from promptadmin.core import cache as content_cache
from promptadmin.core import cachebreaker
from promptadmin.core.cachebreaker import CircuitBreaker
from promptadmin.settings import redis_cache
from tests.factories import UserFactory

TURN = {"entry": "drowned-bell", "npcs": ["marta-vell"], "state": {"input": "I ring the bell."}}


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


def test_an_open_breaker_lets_one_probe_through_after_the_cooldown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = FakeClock()
    monkeypatch.setattr(cachebreaker, "time", clock)
    breaker = CircuitBreaker(cooldown=5.0)
    breaker.failed()
    clock.now += 4.9
    assert not breaker.allow()
    clock.now += 0.2
    assert breaker.allow()  # the probe
    assert not breaker.allow()  # everyone else waits for its outcome
    breaker.failed()  # the probe failed: another cooldown
    clock.now += 4.9
    assert not breaker.allow()
    clock.now += 0.2
    assert breaker.allow()
    breaker.succeeded()
    assert breaker.allow() and breaker.allow() and not breaker.is_open


@pytest.fixture
def blackholed_cache(settings: Any) -> Iterator[list[socket.socket]]:
    """The cache pointed at a TCP listener that accepts connections and never replies;
    yields the connections it accepted."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))  # an ephemeral port
    server.listen(64)
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:  # closed at teardown
                return
            accepted.append(connection)

    threading.Thread(target=accept, daemon=True).start()
    url = f"redis://127.0.0.1:{server.getsockname()[1]}/0"
    # As a deployment whose Redis is blackholed sees it, with or without a Redis here.
    settings.REDIS_URL = url
    settings.CACHES = {"default": redis_cache(url)}
    yield accepted
    server.close()
    for connection in accepted:
        connection.close()


@pytest.fixture
def game(db: None) -> None:
    call_command("seed_demo", stdout=StringIO())


def reader() -> APIClient:
    client = APIClient()
    client.credentials(
        HTTP_AUTHORIZATION=f"Api-Key {api_key_create(actor=None, name='g', scope='read')[1]}"
    )
    return client


@pytest.fixture
def reading(db: None) -> APIClient:
    return reader()


def assemble_times(client: APIClient, count: int) -> list[float]:
    times = []
    for _ in range(count):
        started = time.perf_counter()
        response = client.post("/api/v1/assemble", TURN, format="json")
        times.append(time.perf_counter() - started)
        assert response.status_code == 200
    return times


@pytest.mark.django_db
def test_with_a_blackholed_cache_only_the_first_call_waits(
    game: None, reading: APIClient, blackholed_cache: list[socket.socket], settings: Any
) -> None:
    client = reading  # its key made before the cache went away (a new key bumps the cache)
    first = assemble_times(client, 1)[0]
    assemble_times(client, 40)
    # One connection, one timeout: every later call skips the cache without the network
    # (after a timeout redis-py drops its connection, so any later try would connect anew).
    assert first >= settings.REDIS_TIMEOUT
    assert len(blackholed_cache) == 1


@pytest.mark.django_db
def test_the_median_assembly_with_a_blackholed_cache_beside_the_normal_one(
    game: None, settings: Any, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    client = reader()
    cache.clear()
    assemble_times(client, 5)  # warm: the cache holds the content
    normal = statistics.median(assemble_times(client, 60))
    request.getfixturevalue("blackholed_cache")
    assemble_times(client, 1)  # the one call that pays the timeout
    dead = statistics.median(assemble_times(client, 60))
    backend = "Redis" if settings.REDIS_URL else "local memory"
    with capsys.disabled():
        print(
            f"\nmedian /assemble: {normal * 1000:.2f} ms with {backend}, "
            f"{dead * 1000:.2f} ms with a blackholed Redis ({dead / normal:.2f}x)"
        )
    assert len(request.getfixturevalue("blackholed_cache")) == 1


@pytest.mark.django_db
def test_the_dashboard_and_healthz_answer_with_a_blackholed_cache(
    game: None, blackholed_cache: list[socket.socket], settings: Any
) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    user = UserFactory()
    user.groups.add(Group.objects.get(name="viewer"))
    client = Client()
    client.force_login(user)
    assert client.get("/").status_code == 200
    health = client.get("/healthz")
    assert health.status_code == 200 and health.json()["cache"] == "unavailable"
    # Every entry is assembled for its lints: one timeout in all, not one per entry.
    assert len(blackholed_cache) == 1


def bell_prompt() -> str:
    return assemble_prompt(AssembleParams(entry="drowned-bell", npcs=(("marta-vell", 2),))).prompt


@pytest.mark.django_db
def test_while_the_cache_is_unreachable_a_change_made_here_shows_at_once(
    game: None, blackholed_cache: list[socket.socket], django_capture_on_commit_callbacks: Any
) -> None:
    bell_prompt()  # loaded into this process's memory
    segment = Segment.objects.get(import_key="w-iron-tone")
    with django_capture_on_commit_callbacks(execute=True):
        segments.segment_update(actor=None, segment=segment, content="Fog, always fog.")
    assert "Fog, always fog." in bell_prompt()


@pytest.mark.django_db
def test_while_the_cache_is_unreachable_a_change_made_elsewhere_shows_within_seconds(
    game: None, blackholed_cache: list[socket.socket], monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeClock()
    monkeypatch.setattr(content_cache, "time", clock)
    bell_prompt()
    # Another process changes the content: nothing here is told.
    Segment.objects.filter(import_key="w-iron-tone").update(content="Salt on every sill.")
    assert "Salt on every sill." not in bell_prompt()  # served from memory...
    clock.now += content_cache.LOCAL_GENERATION_SECONDS
    assert "Salt on every sill." in bell_prompt()  # ...for a couple of seconds at most


@pytest.mark.redis
@pytest.mark.django_db
def test_a_change_made_while_the_cache_was_unreachable_invalidates_it_once_back(
    game: None, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    working = settings.CACHES
    cache.clear()
    bell_prompt()  # cached in Redis under the shared generation
    before = cache.get(content_cache.GENERATION_KEY)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    settings.CACHES = {"default": redis_cache(f"redis://127.0.0.1:{server.getsockname()[1]}/0")}
    segment = Segment.objects.get(import_key="w-iron-tone")
    with django_capture_on_commit_callbacks(execute=True):
        segments.segment_update(actor=None, segment=segment, content="Fog, always fog.")
    server.close()
    settings.CACHES = working  # Redis answers again
    assert "Fog, always fog." in bell_prompt()
    assert cache.get(content_cache.GENERATION_KEY) != before
