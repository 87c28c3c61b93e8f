"""Real Celery workers (``celery -A promptadmin worker`` subprocesses) and Celery beat
against the real Redis broker and a local OpenAI-compatible server: summaries appear in
the background and are used, and a worker (or only its pool process) killed mid-task
leaves a task that another worker completes exactly once, within a minute even with the
visibility timeout of a deployment."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.conf import settings
from django.core.management import call_command
from django.db.models.functions import Now
from rest_framework.test import APIClient

from promptadmin.celery import app as celery_app
from promptadmin.conversations.models import Summary, SummaryStatus
from tests.conftest import database_url
from tests.promptadmin.conversations.fake_llm import FakeLLM, Reply, fake_llm
from tests.promptadmin.conversations.fixtures import talk, wait_for

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.django_db(transaction=True),
]

ROOT = Path(__file__).resolve().parents[3]
SUMMARY = "Ann hired 40 masons for the bridge over the Tarn."
# Short, so that a task abandoned by a killed worker comes back within seconds; the task's
# hard time limit stays below it, as the settings require.
VISIBILITY_TIMEOUT = 6
TIME_LIMIT = 4
# Short too, so that a summary whose worker died is swept and taken over within seconds.
LEASE = "4"
SWEEP = "1"


@pytest.fixture
def broker() -> Iterator[None]:
    """This process sends tasks to Redis (not in-process), starting from an empty queue."""
    with celery_app.connection_for_write() as connection:
        connection.default_channel.client.flushdb()
    eager = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = False
    yield
    celery_app.conf.task_always_eager = eager


@pytest.fixture
def workers(broker: None) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """Starts real workers (with a hard time limit of ``time_limit`` seconds, and other
    settings in ``overrides``), and with the first one Celery beat (with the same settings),
    as a deployment runs them; every one still running is stopped at the end."""
    started: list[tuple[subprocess.Popen[bytes], Any]] = []
    schedule = tempfile.TemporaryDirectory()

    def run(command: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        log = tempfile.TemporaryFile()  # noqa: SIM115 - closed when the test ends
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        started.append((process, log))
        return process

    def start(
        llm: FakeLLM, time_limit: int = TIME_LIMIT, **overrides: str
    ) -> subprocess.Popen[bytes]:
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "DATABASE_URL": database_url(),
            "REDIS_URL": settings.REDIS_URL,
            "CELERY_TASK_ALWAYS_EAGER": "false",
            "CELERY_VISIBILITY_TIMEOUT": str(max(VISIBILITY_TIMEOUT, time_limit + 2)),
            "CELERY_TASK_TIME_LIMIT": str(time_limit),
            "SUMMARIZER_BASE_URL": llm.url,
            "SUMMARIZER_MODEL": "fake-model",
            "SUMMARIZER_API_KEY": "test",
            "SUMMARIZER_TIMEOUT": "30",
            "SUMMARIZER_MAX_RETRIES": "0",
            "SUMMARIZER_LEASE_SECONDS": LEASE,
            "SUMMARIZER_SWEEP_SECONDS": SWEEP,
            **overrides,
        }
        if not started:
            beat = [sys.executable, *("-m", "celery", "-A", "promptadmin", "beat")]
            beat += ["--loglevel", "INFO", "--schedule", f"{schedule.name}/beat-schedule"]
            run(beat, env)
        command = [
            sys.executable,
            *("-m", "celery", "-A", "promptadmin", "worker", "--loglevel", "INFO"),
            *("--concurrency", "1", "--pool", "prefork", "-n", f"test{len(started)}@%h"),
            *("--without-gossip", "--without-mingle", "--without-heartbeat"),
        ]
        return run(command, env)

    yield start
    for process, log in started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        log.seek(0)
        sys.stdout.write(log.read().decode(errors="replace")[-4000:])
        log.close()
    schedule.cleanup()


def pool_processes(worker: subprocess.Popen[bytes]) -> list[int]:
    """The worker's pool processes: its children."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[1]) == worker.pid:
            children.append(int(stat.parent.name))
    return children


def waiting_on(connection: psycopg.Connection[Any], table: str) -> bool:
    """Whether another session waits for a lock on ``table``."""
    row = connection.execute(
        "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
        "WHERE c.relname = %s AND NOT l.granted",
        [table],
    ).fetchone()
    return bool(row and row[0])


def append_until_pending(client: APIClient, key: str) -> int:
    """Append one message at a time through the API until a summary is asked for."""
    for index in range(40):
        response = client.post(
            f"/api/v1/conversations/{key}/messages",
            {"messages": talk(1, start=index), "history_budget": 300},
            format="json",
        )
        assert response.status_code == 201, response.content
        if response.json()["summary_pending"]:
            return index + 1
    raise AssertionError("no summary was asked for")


def done(key: str) -> Callable[[], bool]:
    return lambda: Summary.objects.filter(conversation__key=key, status=SummaryStatus.DONE).exists()


def test_a_real_worker_summarizes_in_the_background_and_assembly_uses_it(
    workers: Callable[[FakeLLM], subprocess.Popen[bytes]], writer: APIClient, reader: APIClient
) -> None:
    call_command("seed_demo", stdout=StringIO())
    with fake_llm(Reply(text=SUMMARY)) as llm:
        workers(llm)
        sent = append_until_pending(writer, "quest-1")
        wait_for(done("quest-1"), 60, "the summary")
        summary = Summary.objects.get(conversation__key="quest-1")
        assert summary.content == SUMMARY
        assert summary.backend == "openai" and summary.model == "fake-model"
        assert summary.attempts == 1
        assert len(llm.requests) == 1
        history = reader.get("/api/v1/conversations/quest-1/history").json()
        assert history["mode"] == "summary_and_recent"
        assert history["summary"]["id"] == summary.pk
        assert SUMMARY in history["text"]
        assert history["messages"][-1] == sent
        body = {"entry": "drowned-bell", "conversation": "quest-1", "history_budget": 300}
        assembled = reader.post("/api/v1/assemble", body, format="json").json()
        assert SUMMARY in assembled["prompt"]
        assert assembled["meta"]["history"]["summary"]["id"] == summary.pk
        assert assembled["meta"]["layers"]["history"]["status"] == "included"


def test_a_worker_killed_while_the_endpoint_answers_leaves_one_summary_from_one_answer(
    workers: Callable[[FakeLLM], subprocess.Popen[bytes]], writer: APIClient
) -> None:
    """Killed while its call is in flight, the range is asked for twice: the endpoint may
    have seen that first request, and nobody can know. What holds is that one answer is
    taken, one summary stored, and the task completes once after the restart (for one
    request only, see the test of a kill before the call)."""
    # The first call never gets an answer: its worker is killed while it waits.
    never = threading.Event()
    try:
        with fake_llm(Reply(hold=never)) as llm:
            llm.default = Reply(text=SUMMARY)
            first = workers(llm)
            append_until_pending(writer, "quest-2")
            assert llm.received.wait(60), "the first worker never called the endpoint"
            summary = Summary.objects.get(conversation__key="quest-2")
            assert summary.status == SummaryStatus.RUNNING and summary.attempts == 1

            os.killpg(first.pid, signal.SIGKILL)  # the worker and its pool process
            first.wait()
            workers(llm)
            wait_for(done("quest-2"), 90, "the summary after the restart")

            # Wait out another restore sweep: nothing else may run it again.
            time.sleep(VISIBILITY_TIMEOUT + 2)
            summary.refresh_from_db()
            assert Summary.objects.filter(conversation__key="quest-2").count() == 1
            assert summary.status == SummaryStatus.DONE
            assert summary.content == SUMMARY
            assert summary.attempts == 2  # the killed worker's claim, then the takeover
            assert len(llm.requests) == 2  # one died with its worker, unanswered
            assert llm.answered == 1  # the range was summarized by one answered call
    finally:
        never.set()


def test_a_worker_killed_after_its_claim_and_before_its_call_leaves_one_call_for_the_range(
    workers: Callable[..., subprocess.Popen[bytes]], writer: APIClient
) -> None:
    """Killed once it has claimed the summary (``running``) and before it calls the
    endpoint: after a new worker takes over, the endpoint was asked exactly once."""
    time_limit = 10  # the kill comes long before the hard time limit would
    # Between its claim and its call, a worker looks up the summarizer's registered prompt;
    # holding the prompts table keeps it there, claimed and not calling, until it is killed.
    holder = psycopg.connect(database_url())
    try:
        holder.execute("LOCK TABLE prompts_prompt IN ACCESS EXCLUSIVE MODE")
        with fake_llm(Reply(text=SUMMARY)) as llm:
            first = workers(llm, time_limit=time_limit)
            append_until_pending(writer, "quest-4")
            running = lambda: Summary.objects.filter(  # noqa: E731
                conversation__key="quest-4", status=SummaryStatus.RUNNING
            ).exists()
            wait_for(running, 60, "the first worker's claim")
            wait_for(lambda: waiting_on(holder, "prompts_prompt"), 30, "the prompt lookup")
            assert llm.requests == []  # claimed, and held before its call

            os.killpg(first.pid, signal.SIGKILL)  # the worker and its pool process
            first.wait()
            holder.rollback()  # the lock is released
            workers(llm, time_limit=time_limit)
            wait_for(done("quest-4"), 90, "the summary after the restart")

            summary = Summary.objects.get(conversation__key="quest-4")
            assert summary.content == SUMMARY
            assert summary.attempts == 2  # the killed worker's claim, then the takeover
            assert len(llm.requests) == 1 and llm.answered == 1
    finally:
        holder.close()


def test_a_summary_whose_worker_died_is_taken_over_within_a_minute_whatever_the_visibility_timeout(
    workers: Callable[..., subprocess.Popen[bytes]], writer: APIClient
) -> None:
    """A deployment's settings: Redis hands a dead worker's task to another only after an
    hour, and a task may run ten minutes. Another worker finishes the summary within a
    minute all the same (the lease and the sweep at their defaults)."""
    deployment = {
        "CELERY_VISIBILITY_TIMEOUT": "3600",
        "CELERY_TASK_TIME_LIMIT": "600",
        "SUMMARIZER_LEASE_SECONDS": "",
        "SUMMARIZER_SWEEP_SECONDS": "",
    }
    never = threading.Event()
    try:
        with fake_llm(Reply(hold=never)) as llm:
            llm.default = Reply(text=SUMMARY)
            first = workers(llm, **deployment)
            append_until_pending(writer, "quest-5")
            assert llm.received.wait(60), "the first worker never called the endpoint"

            os.killpg(first.pid, signal.SIGKILL)  # the worker and its pool process
            first.wait()
            died = time.monotonic()
            workers(llm, **deployment)
            wait_for(done("quest-5"), 70, "another worker to take the summary over")
            sys.stdout.write(f"taken over and done {time.monotonic() - died:.0f} s after\n")

            summary = Summary.objects.get(conversation__key="quest-5")
            assert summary.content == SUMMARY
            assert summary.attempts == 2  # the dead worker's claim, then the takeover
            assert len(llm.requests) == 2 and llm.answered == 1
    finally:
        never.set()


def test_a_pool_process_killed_mid_task_leaves_a_task_that_completes_exactly_once(
    workers: Callable[..., subprocess.Popen[bytes]], writer: APIClient
) -> None:
    # Only the pool process dies: its task is requeued at once, while the summary's lease
    # is still alive (that delivery does nothing). Once the lease runs out, the sweep
    # sends the task again, and that delivery takes it over.
    time_limit = 10  # room for a slow first call before the kill, and no time-out kill
    never = threading.Event()
    try:
        with fake_llm(Reply(hold=never)) as llm:
            llm.default = Reply(text=SUMMARY)
            worker = workers(llm, time_limit=time_limit)
            append_until_pending(writer, "quest-3")
            assert llm.received.wait(60), "the worker never called the endpoint"
            held = Summary.objects.annotate(now=Now()).get(conversation__key="quest-3")
            # Its lease renewed, alive: the requeued delivery will find it busy.
            assert held.lease_until is not None and held.lease_until > held.now
            (pool_process,) = pool_processes(worker)
            os.kill(pool_process, signal.SIGKILL)
            wait_for(done("quest-3"), 60, "the summary after its pool process died")
            summary = Summary.objects.get(conversation__key="quest-3")
            assert summary.content == SUMMARY
            assert summary.attempts == 2  # the killed claim, then the takeover
            assert len(llm.requests) == 2 and llm.answered == 1
            assert worker.poll() is None  # the worker itself lived on
    finally:
        never.set()
