"""A real Celery worker runs a playtest, and a worker killed mid-run leaves a run that
resumes on another without paying for a reply twice."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Callable

import pytest
from django.core.management import call_command
from django.test import override_settings

from promptadmin.playtests.models import PlaytestCall, PlaytestRun
from promptadmin.playtests.services import playtest_create
from promptadmin.releases.services import scenario_create
from tests.promptadmin.conversations.fake_llm import FakeLLM, Reply, fake_llm
from tests.promptadmin.conversations.fixtures import wait_for
from tests.promptadmin.conversations.test_worker import broker, workers  # noqa: F401

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.django_db(transaction=True),
]


def playtest_env(llm: FakeLLM) -> dict[str, str]:
    return {
        "PLAYTEST_BASE_URL": llm.url,
        "PLAYTEST_MODEL": "fake-model",
        "PLAYTEST_API_KEY": "test",
        "PLAYTEST_MAX_RETRIES": "0",
        # One call at a time: the kill comes between two replies.
        "PLAYTEST_CONCURRENCY": "1",
    }


def test_a_worker_killed_mid_run_resumes_without_paying_twice(
    workers: Callable[..., subprocess.Popen[bytes]],  # noqa: F811
) -> None:
    call_command("seed_demo")
    scenario_create(
        actor=None, name="thrice", entry="drowned-bell", state={"input": "hi"}, samples=3
    )
    never = threading.Event()
    try:
        # The first reply is answered; the second never is: its worker is killed waiting.
        with fake_llm(Reply(text="Aye."), Reply(hold=never)) as llm:
            llm.default = Reply(text="Aye.")
            env = playtest_env(llm)
            with override_settings(
                PLAYTEST_BASE_URL=llm.url, PLAYTEST_MODEL="fake-model", PLAYTEST_API_KEY="test"
            ):
                run = playtest_create(actor=None, scenarios=["thrice"])
            first = workers(llm, **env)
            wait_for(lambda: len(llm.requests) >= 2, 60, "the second reply asked for")
            assert PlaytestCall.objects.count() == 1  # the first reply, kept as it came

            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
            workers(llm, **env)
            wait_for(
                lambda: PlaytestRun.objects.get(pk=run.pk).status == PlaytestRun.Status.DONE,
                90,
                "the run to resume and finish",
            )
            run.refresh_from_db()
            # Sample 1 was paid before the kill and not asked again: one request died
            # with its worker, then samples 2 and 3.
            assert len(llm.requests) == 4
            assert run.calls == 3 and PlaytestCall.objects.count() == 3
            assert run.samples.count() == 3
    finally:
        never.set()
