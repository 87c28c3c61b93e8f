"""gunicorn's settings file, read from the working directory: keeps the Prometheus metrics
of ``PROMETHEUS_MULTIPROC_DIR`` right as workers come and go (promptadmin.core.metrics).

Counters and histograms of a worker that exited stay and keep adding up (their totals
never go back), while a gauge that stands for a live process (the cache breaker's state)
is dropped with its process, and those left by processes of an earlier start are dropped
when the server starts.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def on_starting(server: Any) -> None:
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory:
        for stale in Path(directory).glob("gauge_live*.db"):
            stale.unlink(missing_ok=True)


def child_exit(server: Any, worker: Any) -> None:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)  # type: ignore[no-untyped-call]
