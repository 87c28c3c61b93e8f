"""Imports run as jobs on a real Celery worker: the upload answers at once, the worker
imports it from the database (all or nothing), and its progress shows while it runs."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile

from promptadmin.celery import app as celery_app
from promptadmin.content.models import ImportChunk, ImportJob, Segment
from promptadmin.content.services.api_keys import api_key_create
from promptadmin.content.services.legacy_import import IMPORT_LOCK_ID
from tests import legacy_exports as ex
from tests.conftest import database_url
from tests.promptadmin.api.conftest import key_client
from tests.servers import celery_worker

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

ROWS = 30_000


@pytest.fixture
def broker() -> Iterator[None]:
    """This process sends tasks to Redis (not in-process), starting from an empty queue."""
    with celery_app.connection_for_write() as connection:
        connection.default_channel.client.flushdb()
    eager = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = False
    yield
    celery_app.conf.task_always_eager = eager


def job_of(client: Any, url: str) -> dict[str, Any]:
    response = client.get(url)
    assert response.status_code == 200
    return dict(response.json())


def test_an_upload_is_imported_by_a_worker_with_its_progress_shown(broker: None) -> None:
    client = key_client(api_key_create(actor=None, name="migrations", scope="admin")[1])
    data = ex.as_csv(ex.generated(ROWS))
    # The lock every import takes, held here: the job is seen running before it imports.
    with psycopg.connect(database_url(), autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", [IMPORT_LOCK_ID])
        accepted = client.post(
            "/api/v1/imports/",
            {"file": SimpleUploadedFile("big.csv", data)},
            format="multipart",
        )
        assert accepted.status_code == 202, accepted.content
        url = accepted.json()["url"]
        assert job_of(client, url)["status"] == "queued"
        with celery_worker(REDIS_URL=settings.REDIS_URL):
            deadline = time.monotonic() + 60
            while job_of(client, url)["status"] != "running":
                assert time.monotonic() < deadline, "the worker never took the job"
                time.sleep(0.2)
            holder.execute("SELECT pg_advisory_unlock(%s)", [IMPORT_LOCK_ID])
            seen: list[dict[str, Any]] = []
            deadline = time.monotonic() + 240
            while (job := job_of(client, url))["status"] == "running":
                seen.append(job["progress"])
                assert time.monotonic() < deadline, job
                time.sleep(0.1)
    assert job["status"] == "done", job
    assert job["report"]["rows"] == ROWS and sum(job["report"]["created"].values()) == ROWS
    assert job["progress"]["rows_read"] == job["progress"]["rows_total"] == ROWS
    assert Segment.objects.count() == ROWS
    assert not ImportChunk.objects.exists()
    assert ImportJob.objects.get().started_at is not None
    # Progress only goes forward, and within the file.
    reads = [p["bytes_read"] for p in seen]
    assert reads == sorted(reads) and all(r <= len(data) for r in reads)
