"""`make test` spreads the suite over pytest-xdist workers; each worker has a Redis
database of its own, and everything in it (cache, Celery, the processes it starts) uses
that one."""

from __future__ import annotations

import os
from typing import Any

import pytest
from django.conf import settings
from django_redis import get_redis_connection
from redis.connection import parse_url

from promptadmin.celery import app as celery_app
from scripts.run_tests import MAX_WORKERS, parallel
from tests.conftest import use_redis, worker_redis_url

REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


@pytest.mark.parametrize(
    ("url", "worker", "expected"),
    [
        ("redis://127.0.0.1:6379/15", "gw0", "redis://127.0.0.1:6379/15"),
        ("redis://127.0.0.1:6379/15", "gw1", "redis://127.0.0.1:6379/14"),
        ("redis://127.0.0.1:6379", "gw0", "redis://127.0.0.1:6379/0"),
        ("rediss://u:p@cache:6380/9?ssl_cert_reqs=none", "gw3", "rediss://u:p@cache:6380/6?ssl_cert_reqs=none"),
        # redis-py reads the number from the query before the path.
        ("redis://cache/2?db=8", "gw2", "redis://cache/2?db=6"),
        ("unix:///run/redis.sock?db=3", "gw1", "unix:///run/redis.sock?db=2"),
        ("unix:///run/redis.sock", "gw0", "unix:///run/redis.sock?db=0"),
    ],
)  # fmt: skip
def test_each_worker_takes_the_redis_database_below_the_previous_ones(
    url: str, worker: str, expected: str
) -> None:
    assert worker_redis_url(url, worker) == expected


def test_a_worker_past_database_0_is_refused_naming_the_way_out() -> None:
    with pytest.raises(
        pytest.UsageError, match=r"worker gw2 would need Redis database -1.*REDIS_URL"
    ):
        worker_redis_url("redis://127.0.0.1:6379/1", "gw2")


def redis_urls(value: Any) -> set[str]:
    """Every Redis URL in a setting's value, however deeply nested."""
    if isinstance(value, str):
        return {value} if value.startswith(REDIS_SCHEMES) else set()
    if isinstance(value, dict):
        return redis_urls(list(value.values()))
    if isinstance(value, list | tuple | set):
        return set().union(*(redis_urls(item) for item in value))
    return set()


def number(url: str) -> int:
    """The database ``url`` names, as redis-py reads it."""
    return int(parse_url(url).get("db", 0))


def assert_everything_uses(url: str) -> None:
    named = {
        found
        for name in dir(settings)
        if name.isupper()
        for found in redis_urls(getattr(settings, name))
    }
    assert named == {url}, "a setting names another Redis database"
    assert os.environ["REDIS_URL"] == url  # what gunicorn and Celery workers are given
    assert celery_app.conf.broker_url == url
    assert get_redis_connection("default").connection_pool.connection_kwargs["db"] == number(url)
    with celery_app.connection_for_write() as connection:
        client = connection.default_channel.client
        assert client.connection_pool.connection_kwargs["db"] == number(url)


@pytest.mark.redis
def test_the_cache_celery_and_started_processes_use_one_redis_database() -> None:
    """In a worker: the one pytest_configure chose for it."""
    assert_everything_uses(settings.REDIS_URL)


@pytest.mark.redis
def test_use_redis_moves_all_of_them_to_another_database() -> None:
    here = settings.REDIS_URL
    other = worker_redis_url(here, "gw1") if number(here) else here.replace("/0", "/1")
    assert number(other) != number(here)
    override = use_redis(other)
    try:
        assert_everything_uses(other)
    finally:
        override.disable()
        os.environ["REDIS_URL"] = here
    assert_everything_uses(here)


def test_make_test_runs_on_workers_unless_the_arguments_choose() -> None:
    spread = ["-n", "auto", "--maxprocesses", str(MAX_WORKERS)]
    assert parallel([]) == spread
    assert parallel(["-rs", "tests/assembler/test_lint.py", "-k", "not slow"]) == spread
    for chosen in (
        ["-n", "0"],
        ["-n2"],
        ["--numprocesses=3"],
        ["-p", "no:xdist"],
        ["--tx", "popen"],
    ):
        assert parallel(["-rs", *chosen]) == [], chosen
