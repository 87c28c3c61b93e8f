"""A database connection lost under a request: a read-only request is answered again on a
fresh connection (no 500), a write never runs twice.

In process first (the test client, the test's own connection terminated while idle), then
under load: a real gunicorn with two workers serves reads and writes from several threads
while another session terminates its backends again and again.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import psycopg
import pytest
from django.core.management import call_command
from django.db import connection, connections
from django.test import Client

from promptadmin.content.models import Segment
from promptadmin.content.services.api_keys import api_key_create
from tests.conftest import database_url
from tests.servers import gunicorn

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def terminate_own_backend() -> int:
    """Terminate the backend of this thread's connection from another session; its pid."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = int(cursor.fetchone()[0])
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    finally:
        other.close()
    return pid


@pytest.fixture
def api(db: None) -> Client:
    _, key = api_key_create(actor=None, name="reader", scope="admin")
    return Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Api-Key {key}")


def test_a_read_whose_connection_died_while_idle_is_answered_on_a_fresh_one(
    api: Client, caplog: pytest.LogCaptureFixture
) -> None:
    call_command("seed_demo", verbosity=0)
    pid = terminate_own_backend()
    with caplog.at_level(logging.WARNING, "promptadmin.core.middleware"):
        response = api.get("/api/v1/segments/")
    assert response.status_code == 200, response.content[:500]
    assert response.json()["count"] > 0
    assert "answering again on a fresh one" in caplog.text
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] != pid


def test_a_post_that_only_reads_is_answered_again_too(api: Client) -> None:
    call_command("seed_demo", verbosity=0)
    terminate_own_backend()
    body = json.dumps({"entry": "drowned-bell"})
    response = api.post("/api/v1/preview", body, content_type="application/json")
    assert response.status_code == 200, response.content[:500]
    assert "CORE_BEGIN" in response.json()["prompt"]


def test_a_write_whose_connection_died_is_never_run_again(
    api: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    from promptadmin.api import content as content_views

    calls: list[int] = []
    writes = content_views.SegmentViewSet.writes

    def counted(**kwargs: Any) -> Any:
        calls.append(1)
        return writes.create(**kwargs)

    counting = replace(writes, create=counted)
    monkeypatch.setattr(content_views.SegmentViewSet, "writes", counting)
    terminate_own_backend()
    body = json.dumps({"scope": "core", "content": "Once."})
    response = api.post("/api/v1/segments/", body, content_type="application/json")
    assert response.status_code == 500
    assert len(calls) <= 1  # the view's first query failed: it ran once, or not at all
    assert not Segment.objects.filter(content="Once.").exists()
    # The next request gets a fresh connection.
    assert api.post("/api/v1/segments/", body, content_type="application/json").status_code == 201


@pytest.fixture
def server() -> Iterator[str]:
    """A real gunicorn (two sync workers, persistent connections) on the test database."""
    with gunicorn(workers=2, CELERY_TASK_ALWAYS_EAGER="true") as url:
        yield url


def call(url: str, key: str, body: dict[str, Any] | None = None) -> int:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        url,
        data=data,
        headers={"Authorization": f"Api-Key {key}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def test_terminating_backends_under_load_gives_no_500_on_reads(server: str) -> None:
    call_command("seed_demo", verbosity=0)
    _, key = api_key_create(actor=None, name="load", scope="admin")
    reads: Counter[int] = Counter()
    writes: Counter[int] = Counter()
    stop = threading.Event()
    reads_at = [
        f"{server}/api/v1/segments/?page_size=5",
        f"{server}/api/v1/worlds/",
        f"{server}/api/v1/prompts/",
    ]

    def reader(n: int) -> None:
        i = n
        while not stop.is_set():
            reads[call(reads_at[i % len(reads_at)], key)] += 1
            i += 1

    def writer() -> None:
        i = 0
        while not stop.is_set():
            body = {"scope": "core", "content": f"Written under load {i}."}
            writes[call(f"{server}/api/v1/segments/", key, body)] += 1
            i += 1

    kills = 0
    database = connection.settings_dict["NAME"]
    with connection.cursor() as cursor:  # this test's own connection is left alone
        cursor.execute("SELECT pg_backend_pid()")
        own = int(cursor.fetchone()[0])
    threads = [threading.Thread(target=reader, args=(n,)) for n in range(3)]
    threads.append(threading.Thread(target=writer))
    for thread in threads:
        thread.start()
    try:
        with psycopg.connect(database_url(), autocommit=True) as killer:
            end = time.monotonic() + 10
            while time.monotonic() < end:
                time.sleep(0.15)
                # Backends over a second old: the workers' persistent connections, idle or
                # busy, never the fresh one a retry has just opened.
                terminated = killer.execute(
                    "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) "
                    "FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid() "
                    "AND pid <> %s AND backend_type = 'client backend' "
                    "AND backend_start < now() - interval '1 second'",
                    [database, own],
                ).fetchone()
                kills += int(terminated[0]) if terminated else 0
    finally:
        stop.set()
        for thread in threads:
            thread.join(60)
    print(f"reads {dict(reads)}, writes {dict(writes)}, backends terminated {kills}")
    assert kills >= 10
    assert sum(reads.values()) >= 100
    assert reads[500] == 0, dict(reads)
    assert set(reads) == {200}, dict(reads)
    # A write is never run twice: every row written was answered 201 or a 500.
    written = Segment.objects.filter(content__startswith="Written under load").count()
    assert writes[201] <= written <= writes[201] + writes[500]
