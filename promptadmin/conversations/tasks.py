"""The summarization tasks: making a summary (takes a summary id, owns only retries and
time limits) and the periodic sweep that sends the task of a stuck summary again.

Delivery guarantees come from the settings (``acks_late``, ``reject_on_worker_lost``,
prefetch 1, a hard time limit below the broker's visibility timeout) and idempotency from
the summary queue (:mod:`promptadmin.conversations.queue`): a repeated delivery finds the
summary done, or running under another worker's live lease, and does nothing.

A worker that dies mid-summary (killed, or its machine gone) leaves its delivery
unacknowledged, and Redis hands it out again only after the visibility timeout (an hour
by default). That is not waited for: the worker's lease on the summary runs out within
``SUMMARIZER_LEASE_SECONDS``, and :func:`sweep_stuck_summaries`, run by Celery beat every
``SUMMARIZER_SWEEP_SECONDS``, sends its task again; another worker takes it over. When
the old delivery comes back at last, it finds the summary done.
"""

from __future__ import annotations

import logging
import random
from concurrent.futures import ThreadPoolExecutor

from celery import Task, current_app, shared_task
from django.conf import settings
from django.db import connections, transaction

from promptadmin.conversations import queue
from promptadmin.conversations.summarizer import RetryLater, summary_make

logger = logging.getLogger(__name__)


# Past this many doublings the backoff is over any ceiling (and 2**n would overflow a float).
_MAX_DOUBLINGS = 32


def longest_countdown() -> float:
    """The longest a retry may wait: Redis hands a task not yet acknowledged to another
    worker after ``CELERY_VISIBILITY_TIMEOUT``, and a retry is held unacknowledged while
    it waits and then while it runs (up to ``CELERY_TASK_TIME_LIMIT``); waiting longer
    would have it run twice at once."""
    return float(settings.CELERY_VISIBILITY_TIMEOUT - settings.CELERY_TASK_TIME_LIMIT)


def retry_countdown(retries: int) -> float:
    """Seconds before retry number ``retries + 1``: exponential backoff with full jitter
    (a random wait up to ``SUMMARIZER_RETRY_BACKOFF * 2**retries``, and never past
    :func:`longest_countdown`), so workers that failed together do not all come back at
    once."""
    ceiling = settings.SUMMARIZER_RETRY_BACKOFF * 2 ** min(retries, _MAX_DOUBLINGS)
    return random.uniform(0, min(ceiling, longest_countdown()))


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=None)
def summarize_conversation(self: Task, summary_id: int) -> str:
    retries = self.request.retries or 0
    while True:
        claim = queue.summary_claim(summary_id=summary_id, task_id=self.request.id or "")
        if claim is None:
            return "nothing_to_do"
        if isinstance(claim, queue.Busy):
            # Another worker runs it: should that one die, the sweep sends the task again
            # once its lease runs out.
            logger.info("summary %s: running elsewhere until %s", summary_id, claim.lease_until)
            return "busy"
        # In-process there is no broker to come back through: a retry runs at once.
        countdown = 0.0 if self.request.is_eager else retry_countdown(retries)
        try:
            with queue.lease_kept(claim):
                made = summary_make(
                    claim=claim,
                    allow_fallback=retries >= settings.SUMMARIZER_TASK_RETRIES,
                    retry_in=countdown,
                )
        except RetryLater as error:
            logger.info("summary %s: %s; retry %s", summary_id, error.reason, retries + 1)
            if not self.request.is_eager:
                raise self.retry(countdown=countdown) from error
            retries += 1
            continue
        except Exception as error:
            queue.summary_fail(claim=claim, error=f"{type(error).__name__}: {error}"[:2000])
            raise
        if (next_summary := made.next_summary) is not None:
            transaction.on_commit(lambda: enqueue_summary(next_summary))
        return made.outcome


@shared_task(ignore_result=True)
def sweep_stuck_summaries() -> int:
    """Send again the task of every stuck summary (see
    :func:`promptadmin.conversations.queue.stuck_summaries`); run by Celery beat. Returns
    how many were sent."""
    stuck = queue.stuck_summaries()
    for summary_id in stuck:
        enqueue_summary(summary_id)
    return len(stuck)


def enqueue_summary(summary_id: int) -> None:
    """Send the task to the workers. Without a broker (``make run``), run it in this
    process: on a background thread (``SUMMARIZER_IN_BACKGROUND``), so that the request
    that asked for it does not wait for the summarizer, or else here and now (the test
    suite); its retries included, a failure logged, never raised into the request that
    committed (this runs after its commit)."""
    if current_app.conf.task_always_eager:
        if settings.SUMMARIZER_IN_BACKGROUND:
            _background.submit(_run_in_background, summary_id)
        else:
            _run_here(summary_id)
        return
    try:
        summarize_conversation.delay(summary_id)
    except Exception:  # the broker is down: the append stands; asking again re-sends it
        logger.exception("summary %s could not be enqueued", summary_id)


def _run_here(summary_id: int) -> None:
    result = summarize_conversation.apply(args=[summary_id], throw=False)
    if result.failed():
        logger.error("summary %s failed: %s", summary_id, result.result)


def _run_in_background(summary_id: int) -> None:
    try:
        _run_here(summary_id)
    except Exception:  # nobody waits on this thread's result: say it here
        logger.exception("summary %s failed", summary_id)
    finally:
        # This thread's own database connection: closed, not left for a thread that may
        # sit idle for hours.
        connections.close_all()


# Summaries made in this process when there is no broker: two threads, so that one slow
# endpoint call does not hold up every other conversation. The executor starts them on
# first use, not at import.
_background = ThreadPoolExecutor(2, thread_name_prefix="summaries")
