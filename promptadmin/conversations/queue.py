"""The summary queue: how a summary is asked for, claimed, stored, given back or dropped,
guarded by the database so that several web processes and workers can work at once.

How a range is summarized exactly once:

- at most one summary per conversation is ``pending`` or ``running`` (a partial unique
  index), so two requests or two appends at once make one summary, never two;
- a worker claims a summary by moving it from ``pending`` to ``running`` under a row
  lock, with a claim number (``attempts``) and a lease (``lease_until``) that it renews
  while it runs (:func:`lease_kept`); a second delivery of the same task finds it
  ``done`` (and does nothing) or ``running`` under a live lease (:class:`Busy`: it does
  nothing either), so the summarizer is not called twice at once;
- a summary whose lease ran out (its worker is gone, killed; or it waits for a retry its
  worker never came back to), or one pending and never claimed for as long as a task may
  run (its task was lost), is stuck (:func:`stuck_summaries`): the periodic sweep, the
  next append or a summary request sends its task again (at most once per lease), and
  that delivery takes it over. So a summary whose worker died is taken over within a
  lease and a sweep, whatever the broker's visibility timeout;
- a result is stored only by the worker holding the current claim.

Nothing here sends a task: a function that makes a summary due returns its id, and its
caller (a service, or the task itself) sends the task once the transaction commits.

Whether a run or a request is stale is judged by the database's clock (``Now()``), which
also stamps every summary time: web processes and workers on other hosts may disagree on
the time, and one whose clock ran ahead would take over a run started moments ago.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, connections, transaction
from django.db.models import Count, OuterRef, Q, Subquery, Sum
from django.db.models.functions import Now

from assembler.history import needs_summary, summary_targets
from promptadmin.conversations.models import (
    ACTIVE_STATUSES,
    DEFAULT_HISTORY_BUDGET,
    Conversation,
    Message,
    Role,
    Summary,
    SummaryStatus,
    could_be_key,
)
from promptadmin.core.actors import Attribution
from promptadmin.core.tokens import tokenizer

logger = logging.getLogger(__name__)


def stale_after() -> timedelta:
    """How long a summary may wait, pending and never claimed, before its task is presumed
    lost: as long as a task may run (it may wait behind one that long)."""
    return timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT)


def lease() -> timedelta:
    """How long a worker holding a summary is presumed alive since it last said so."""
    return timedelta(seconds=settings.SUMMARIZER_LEASE_SECONDS)


def _stuck(*, resent_too: bool = False) -> Q:
    """The active summaries that are stuck, judged by the database's clock: their lease
    ran out (the worker running it, or the one that was to retry it, is gone), or, never
    claimed, they waited for as long as a task may run (their task was lost); and unless
    ``resent_too``, their task was not sent again within that same time."""
    now = Now()
    lapsed = Q(lease_until__lt=now)
    # Without a lease: never claimed, or claimed before workers held leases.
    aged = Q(lease_until__isnull=True) & (
        Q(status=SummaryStatus.PENDING, created_at__lt=now - stale_after())
        | Q(status=SummaryStatus.RUNNING, started_at__lt=now - stale_after())
    )
    if not resent_too:
        lapsed &= Q(resent_at__isnull=True) | Q(resent_at__lt=now - lease())
        aged &= Q(resent_at__isnull=True) | Q(resent_at__lt=now - stale_after())
    return Q(status__in=ACTIVE_STATUSES) & (lapsed | aged)


def targets(conversation: Conversation) -> tuple[int, int]:
    """(tokens kept verbatim, summary target) for ``conversation`` under the settings."""
    return summary_targets(conversation.history_budget, settings.SUMMARIZER_MAX_INPUT_TOKENS)


# Asking for a summary


def locked(key: str, *, resent_too: bool = False) -> tuple[Conversation, int | None] | None:
    """Conversation ``key`` under a row lock, and the id of its stuck summary (None if
    there is none, see :func:`_stuck`), read in the same query. None when there is no
    such conversation."""
    if not could_be_key(key):
        return None
    stuck = Summary.objects.filter(_stuck(resent_too=resent_too), conversation=OuterRef("pk"))
    conversation = (
        Conversation.objects.select_for_update()
        .annotate(stuck_summary_id=Subquery(stuck.values("pk")[:1]))
        .filter(key=key)
        .first()
    )
    if conversation is None:
        return None
    return conversation, conversation.stuck_summary_id


def get_or_create_locked(
    key: str, history_budget: int | None, who: Attribution
) -> tuple[Conversation, int | None]:
    """As :func:`locked`, creating the conversation (with ``history_budget``, or the
    default, and ``who`` created it) when there is none."""
    located = locked(key)
    if located is not None:
        return located
    try:
        with transaction.atomic():
            conversation = Conversation.objects.create(
                key=key,
                history_budget=history_budget or DEFAULT_HISTORY_BUDGET,
                created_by=who.user,
                created_via=who.via,
            )
        return conversation, None
    except IntegrityError:
        # Created by a concurrent append a moment ago: append after its messages.
        located = locked(key)
        if located is None:  # pragma: no cover - the row cannot vanish
            raise
        return located


def over_threshold(conversation: Conversation) -> bool:
    """Whether to ask for a summary of ``conversation``: the history not yet summarized is
    over the threshold of its budget, and a summary could find something to summarize.

    :func:`assembler.history.plan_summary` keeps verbatim the newest messages within
    ``keep_recent`` tokens (:func:`assembler.history.summary_targets`) and always the
    newest user message and everything after it; it finds a message old enough to
    summarize only when

    - the history not yet summarized is over ``keep_recent`` (a message's share of it
      counts its role's label too): under it, every message is recent, and a threshold
      below that share would ask for summaries of nothing; and
    - a message not yet summarized is older than the newest user message. When a summary
      found none even so, the newest user message was the oldest not yet summarized
      (``nothing_to_summarize_through`` records it, see :func:`summary_discard`): replies
      cannot change that however long they grow, only the next user message can, and it
      clears the record (so does a summary made).
    """
    if conversation.nothing_to_summarize_through is not None:
        return False
    keep_recent, _ = targets(conversation)
    return needs_summary(
        unsummarized_tokens=conversation.unsummarized_tokens,
        budget=conversation.history_budget,
        threshold=settings.SUMMARIZER_THRESHOLD,
        keep_recent_tokens=keep_recent,
    )


# Inserted rows are stamped with the database's clock (``{now}``: the statement's time);
# a row whose time is the statement's is the one it inserted (an existing pending row
# keeps its own). Should one have been made in the very same instant (a millisecond on
# SQLite), its task is only sent once more, which the task shrugs off.
_UPSERT = """
INSERT INTO conversations_summary (
    conversation_id, requested_through, requested_by_id, requested_via, status, attempts,
    content, token_encoding, backend, model, prompt_name, error, task_id, previous_cut,
    created_at
) VALUES (%s, %s, %s, %s, 'pending', 0, '', '', '', '', '', '', '', false, {now})
ON CONFLICT (conversation_id) WHERE status IN ('pending', 'running')
DO UPDATE SET requested_through = EXCLUDED.requested_through,
    requested_by_id = EXCLUDED.requested_by_id, requested_via = EXCLUDED.requested_via
WHERE conversations_summary.status = 'pending'
RETURNING id, created_at = {now}
"""


def _upsert_sql() -> str:
    """:data:`_UPSERT` for this database, with its ``Now()`` as Django writes it."""
    compiler = Summary.objects.none().query.get_compiler(connection=connection)
    now, params = compiler.compile(Now())
    assert not params
    return _UPSERT.format(now=now)


@dataclass(frozen=True, slots=True)
class Asked:
    """The summary pending after :func:`ask`, and whether it is new (its task unsent)."""

    summary_id: int
    new: bool


def ask(
    conversation: Conversation, *, requested_by: Any = None, requested_via: str = ""
) -> Asked | None:
    """Ask for a summary of ``conversation`` up to its newest message, in one statement
    guarded by the database: it inserts a pending summary, or moves the pending one's
    range up to the newest message (a newer request supersedes it, and is recorded as
    who asked), or leaves alone one that is running (that one asks again when done, if
    still needed; then None). Who asked is a user (``requested_by``) or an API key's
    label (``requested_via``), or nobody when the history passed its threshold. The
    caller holds the conversation's row lock, and sends the task of a new summary."""
    requester = requested_by.pk if requested_by is not None else None
    with connection.cursor() as cursor:
        cursor.execute(
            _upsert_sql(),
            [conversation.pk, conversation.last_position, requester, requested_via],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    summary_id, inserted = row
    return Asked(int(summary_id), bool(inserted))


def mark_resent(summary_id: int) -> None:
    """Record that the task of a stuck summary (see :func:`_stuck`) is sent again. The
    delivery claims or takes it over; any extra one finds it running or done, and does
    nothing. It is not sent again within the next lease (or stale window)."""
    logger.warning("summary %s: stuck; sending its task again", summary_id)
    Summary.objects.filter(pk=summary_id).update(resent_at=Now())


# Enough for any sweep: the next one, moments later, takes the rest.
SWEEP_BATCH = 500


@transaction.atomic
def stuck_summaries() -> list[int]:
    """The stuck summaries (see :func:`_stuck`), oldest first and at most
    :data:`SWEEP_BATCH`, each recorded as sent again: the caller sends their tasks. Rows
    another sweep is recording meanwhile are skipped. Two queries, whatever the number of
    conversations: the active summaries are few, and indexed apart."""
    ids = list(
        Summary.objects.filter(_stuck())
        .select_for_update(skip_locked=True)
        .order_by("pk")
        .values_list("pk", flat=True)[:SWEEP_BATCH]
    )
    if ids:
        logger.warning("summaries %s: stuck; sending their tasks again", ids)
        Summary.objects.filter(pk__in=ids).update(resent_at=Now())
    return ids


# Making a summary: the task's steps.


@dataclass(frozen=True, slots=True)
class Claim:
    summary_id: int
    attempt: int
    took_over: bool


@dataclass(frozen=True, slots=True)
class Busy:
    """Another worker is running the summary, its lease alive until ``lease_until``.
    Should that worker die, the summary is stuck once the lease runs out, and its task is
    sent again (see :func:`stuck_summaries`)."""

    lease_until: datetime


@transaction.atomic
def summary_claim(*, summary_id: int, task_id: str) -> Claim | Busy | None:
    """Claim a pending summary (or one ``running`` whose lease ran out) for this worker,
    under a lease the worker keeps renewing while it runs it (:func:`lease_kept`).

    :class:`Busy` when another worker is running it under a live lease: the summary is
    not touched (never two summarizer calls for one range at once). None when there is
    nothing to do: the summary is done, failed or gone.
    """
    # The database's time, read with the row: the start recorded, and the age judged, by
    # one clock for every worker.
    summary = (
        Summary.objects.select_for_update()
        .annotate(database_now=Now())
        .filter(pk=summary_id)
        .first()
    )
    if summary is None or summary.status in (SummaryStatus.DONE, SummaryStatus.FAILED):
        return None
    now = summary.database_now
    took_over = False
    if summary.status == SummaryStatus.RUNNING:
        alive_until = summary.lease_until
        if alive_until is None and summary.started_at is not None:
            alive_until = summary.started_at + stale_after()  # claimed before leases
        if alive_until is not None and now < alive_until:
            return Busy(alive_until)
        took_over = True
        logger.warning(
            "summary %s: taking over from a worker gone since %s", summary_id, alive_until
        )
    summary.status = SummaryStatus.RUNNING
    summary.attempts += 1
    summary.started_at = now
    summary.lease_until = now + lease()
    summary.task_id = task_id[:64]
    summary.save(update_fields=["status", "attempts", "started_at", "lease_until", "task_id"])
    return Claim(summary.pk, summary.attempts, took_over)


def renew_lease(claim: Claim) -> bool:
    """Renew the claim's lease (another from now, by the database's clock); False when
    the claim was lost (another worker took the summary over) or the run is over."""
    return bool(
        Summary.objects.filter(
            pk=claim.summary_id, status=SummaryStatus.RUNNING, attempts=claim.attempt
        ).update(lease_until=Now() + lease())
    )


@contextmanager
def lease_kept(claim: Claim) -> Iterator[None]:
    """Keep the claim's lease alive while the block runs: renewed every third of
    ``SUMMARIZER_LEASE_SECONDS`` from a thread of its own (with its own database
    connection), so that a summarizer call of any length never looks like a dead worker,
    and a worker that dies stops renewing it. Stops when the block ends or the claim is
    lost. Inside a transaction (a test; workers run in autocommit) the claim is not
    visible to other connections yet, so there is nothing to renew, and a renewal would
    wait on the caller's own row lock."""
    if connection.in_atomic_block:
        yield
        return
    stop = threading.Event()
    interval = settings.SUMMARIZER_LEASE_SECONDS / 3

    def renew() -> None:
        try:
            while not stop.wait(interval):
                if not renew_lease(claim):
                    return
        except Exception:  # the run goes on; its lease may run out, and it is taken over
            logger.exception("summary %s: its lease could not be renewed", claim.summary_id)
        finally:
            connections.close_all()  # this thread's own

    thread = threading.Thread(target=renew, name=f"summary-{claim.summary_id}-lease", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _holds(summary: Summary, claim: Claim) -> bool:
    return summary.status == SummaryStatus.RUNNING and summary.attempts == claim.attempt


def _lock_for_result(summary_id: int) -> tuple[Conversation, Summary]:
    """Lock the summary's conversation, then the summary: the order every path that holds
    both takes (an append or a request locks the conversation, then its upsert the active
    summary), so storing a result never deadlocks with a request."""
    conversation_id = Summary.objects.filter(pk=summary_id).values_list(
        "conversation_id", flat=True
    )[0]
    conversation = Conversation.objects.select_for_update().get(pk=conversation_id)
    summary = Summary.objects.select_for_update().get(pk=summary_id)
    return conversation, summary


def _ask_if_over(conversation: Conversation) -> int | None:
    """Ask for the next summary when ``conversation`` is over its threshold (its
    ``summary_pending`` set to match); the id of a new one, whose task is to be sent."""
    conversation.summary_pending = False
    if not over_threshold(conversation):
        return None
    asked = ask(conversation)
    conversation.summary_pending = True
    return asked.summary_id if asked is not None and asked.new else None


@dataclass(frozen=True, slots=True)
class Stored:
    """What :func:`summary_complete` did: whether it stored the result (False when the
    claim was lost), and the next summary asked for, whose task is to be sent."""

    stored: bool
    next_summary: int | None = None


@transaction.atomic
def summary_complete(
    *,
    claim: Claim,
    covers_through: int,
    builds_on_id: int | None,
    content: str,
    token_count: int,
    backend: str,
    model: str,
    error: str = "",
    message_cut: int | None = None,
    previous_cut: bool = False,
    prompt_name: str = "",
    prompt_version: int | None = None,
    drawn_from: tuple[int, ...] | None = None,
) -> Stored:
    """Store the claimed summary as done and update the conversation's counters; nothing
    stored when the claim was lost to a worker that took over. ``message_cut`` and
    ``previous_cut`` record what was read short of the whole (see
    :class:`assembler.history.SummaryPlan`); ``prompt_name`` and ``prompt_version`` the
    registered prompt the endpoint was told; ``drawn_from`` the messages an extractive
    summary took its sentences from. When messages came in meanwhile, or the
    summary read a bounded part, the next one is asked for at once."""
    conversation, summary = _lock_for_result(claim.summary_id)
    if not _holds(summary, claim):
        return Stored(False)
    summary.status = SummaryStatus.DONE
    summary.covers_through = covers_through
    summary.builds_on_id = builds_on_id
    summary.content = content
    summary.token_count = token_count
    summary.token_encoding = tokenizer().name
    summary.backend = backend
    summary.model = model[:200]
    summary.error = error
    summary.message_cut = message_cut
    summary.previous_cut = previous_cut
    summary.prompt_name = prompt_name[:200]
    summary.prompt_version = prompt_version
    summary.drawn_from = list(drawn_from) if drawn_from is not None else None
    summary.finished_at = Now()
    summary.save()
    unsummarized = Message.objects.filter(
        conversation=conversation, position__gt=covers_through
    ).aggregate(total=Sum("token_count"))["total"]
    conversation.summarized_through = covers_through
    conversation.current_summary = summary
    conversation.unsummarized_tokens = unsummarized or 0
    conversation.nothing_to_summarize_through = None
    next_summary = _ask_if_over(conversation)
    conversation.save(
        update_fields=[
            "summarized_through",
            "current_summary",
            "unsummarized_tokens",
            "summary_pending",
            "nothing_to_summarize_through",
        ]
    )
    return Stored(True, next_summary)


@transaction.atomic
def summary_release(*, claim: Claim, error: str, retry_in: float = 0.0) -> None:
    """Give the claimed summary back (``pending``) to be retried in ``retry_in`` seconds,
    recording ``error``. Its lease runs until then and a lease more: should the worker
    holding the retry be gone by then, the summary is stuck and taken over."""
    summary = Summary.objects.select_for_update().get(pk=claim.summary_id)
    if not _holds(summary, claim):
        return
    summary.status = SummaryStatus.PENDING
    summary.error = error
    summary.lease_until = Now() + timedelta(seconds=retry_in) + lease()
    summary.save(update_fields=["status", "error", "lease_until"])


@transaction.atomic
def summary_discard(*, claim: Claim) -> int | None:
    """Drop the claimed summary, which found no message old enough to summarize: nothing
    failed, there was nothing to do yet. Returns the next summary asked for, if one is.

    When the history it was asked for was over the part kept verbatim, its newest user
    message was the oldest not yet summarized: the conversation records the newest message
    it was asked for, and asks for no summary again until a user message follows (see
    :func:`over_threshold`). Otherwise (its budget grew since it was asked for, say)
    more messages of any role can make one possible. Messages sent meanwhile were not read
    by this summary: when they make one possible, it is asked for again at once."""
    conversation, summary = _lock_for_result(claim.summary_id)
    if not _holds(summary, claim):
        return None
    through = summary.requested_through
    summary.delete()
    logger.info("summary %s: nothing to summarize through message %s", claim.summary_id, through)
    since = Message.objects.filter(conversation=conversation, position__gt=through).aggregate(
        tokens=Sum("token_count"), users=Count("pk", filter=Q(role=Role.USER))
    )
    asked_for = conversation.unsummarized_tokens - (since["tokens"] or 0)
    keep_recent, _ = targets(conversation)
    anchored = asked_for > keep_recent and not since["users"]
    conversation.nothing_to_summarize_through = through if anchored else None
    next_summary = _ask_if_over(conversation)
    conversation.save(update_fields=["nothing_to_summarize_through", "summary_pending"])
    return next_summary


@transaction.atomic
def summary_fail(*, claim: Claim, error: str) -> None:
    """Mark the claimed summary failed (an unexpected error)."""
    conversation, summary = _lock_for_result(claim.summary_id)
    if not _holds(summary, claim):
        return
    summary.status = SummaryStatus.FAILED
    summary.error = error
    summary.finished_at = Now()
    summary.save(update_fields=["status", "error", "finished_at"])
    Conversation.objects.filter(pk=conversation.pk).update(summary_pending=False)
