"""The summary queue: how a summary is asked for, claimed, stored, given back or dropped,
guarded by the database so that several web processes and workers can work at once.

How a range is summarized exactly once:

- at most one summary per conversation is ``pending`` or ``running`` (a partial unique
  index), so two requests or two appends at once make one summary, never two;
- a worker claims a summary by moving it from ``pending`` to ``running`` under a row
  lock, with a claim number (``attempts``); a second delivery of the same task finds it
  ``done`` (and does nothing) or ``running``, and then comes back once that run has had
  its time (:class:`Busy`), so the summarizer is not called twice and the summary is not
  dropped should that worker be gone;
- a summary left ``running`` past the task's hard time limit belongs to a worker that is
  gone (killed): the next delivery takes it over, and the next append (at most once per
  such window) or summary request sends its task again, in case the task was lost with
  it;
- a result is stored only by the worker holding the current claim.

Nothing here sends a task: a function that makes a summary due returns its id, and its
caller (a service, or the task itself) sends the task once the transaction commits.

Whether a run or a request is stale is judged by the database's clock (``Now()``), which
also stamps every summary time: web processes and workers on other hosts may disagree on
the time, and one whose clock ran ahead would take over a run started moments ago.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, OuterRef, Q, Subquery, Sum
from django.db.models.functions import Now

from assembler.history import needs_summary, summary_targets
from promptadmin.conversations.models import (
    DEFAULT_HISTORY_BUDGET,
    Conversation,
    Message,
    Role,
    Summary,
    SummaryStatus,
    could_be_key,
)
from promptadmin.core.tokens import tokenizer

logger = logging.getLogger(__name__)


def stale_after() -> timedelta:
    """How long a ``running`` summary may go on before its worker is presumed gone."""
    return timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT)


def targets(conversation: Conversation) -> tuple[int, int]:
    """(tokens kept verbatim, summary target) for ``conversation`` under the settings."""
    return summary_targets(conversation.history_budget, settings.SUMMARIZER_MAX_INPUT_TOKENS)


# Asking for a summary


def locked(key: str, *, resent_too: bool = False) -> tuple[Conversation, int | None] | None:
    """Conversation ``key`` under a row lock, and the id of its stuck summary (None if
    there is none), read in the same query: one ``running`` past the time limit (its
    worker is gone), or ``pending`` for as long (its task was lost, or never sent), and
    unless ``resent_too``, not sent again within that time. None when there is no such
    conversation."""
    if not could_be_key(key):
        return None
    cutoff = Now() - stale_after()
    stuck = Summary.objects.filter(
        Q(status=SummaryStatus.RUNNING, started_at__lt=cutoff)
        | Q(status=SummaryStatus.PENDING, created_at__lt=cutoff),
        conversation=OuterRef("pk"),
    )
    if not resent_too:
        stuck = stuck.filter(Q(resent_at__isnull=True) | Q(resent_at__lt=cutoff))
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
    key: str, history_budget: int | None, attribution: dict[str, Any]
) -> tuple[Conversation, int | None]:
    """As :func:`locked`, creating the conversation (with ``history_budget``, or the
    default, and ``attribution``: who created it) when there is none."""
    located = locked(key)
    if located is not None:
        return located
    try:
        with transaction.atomic():
            conversation = Conversation.objects.create(
                key=key, history_budget=history_budget or DEFAULT_HISTORY_BUDGET, **attribution
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
    """Record that the task of a stuck summary is sent again: ``running`` past the time
    limit (its worker is gone, and its task may be too: the broker dropped it, or it was
    acked by a delivery that found the run still young) or ``pending`` as long (its task
    was lost). The delivery claims or takes it over; any extra one finds it running and
    comes back later, or finds it done. It is not sent again within the next window."""
    logger.warning("summary %s: stuck past the time limit; sending its task again", summary_id)
    Summary.objects.filter(pk=summary_id).update(resent_at=Now())


# Making a summary: the task's steps.


@dataclass(frozen=True, slots=True)
class Claim:
    summary_id: int
    attempt: int
    took_over: bool


@dataclass(frozen=True, slots=True)
class Busy:
    """Another worker is running the summary: come back in ``retry_in`` seconds, by when
    it is done or that worker is presumed gone (and the summary can be taken over)."""

    retry_in: float


# Past the moment a run turns stale, so that the retry finds it stale (or done), not busy.
BUSY_RETRY_MARGIN = timedelta(seconds=2)


@transaction.atomic
def summary_claim(*, summary_id: int, task_id: str) -> Claim | Busy | None:
    """Claim a pending summary (or one stuck in ``running``) for this worker.

    :class:`Busy` when another worker is running it and may still be alive: the summary
    is not touched (never two summarizer calls for one range at once), and the delivery
    must come back when that run is done or stale; dropping it would leave the summary
    ``running`` for ever should that worker be dead. None when there is nothing to do:
    the summary is done, failed or gone.
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
        window = stale_after()
        if summary.started_at is not None and (age := now - summary.started_at) < window:
            # At most the window itself (the task holds it within the visibility timeout).
            wait = min(window - age + BUSY_RETRY_MARGIN, window)
            return Busy(wait.total_seconds())
        took_over = True
        logger.warning(
            "summary %s: taking over from a worker gone since %s", summary_id, summary.started_at
        )
    summary.status = SummaryStatus.RUNNING
    summary.attempts += 1
    summary.started_at = now
    summary.task_id = task_id[:64]
    summary.save(update_fields=["status", "attempts", "started_at", "task_id"])
    return Claim(summary.pk, summary.attempts, took_over)


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
def summary_release(*, claim: Claim, error: str) -> None:
    """Give the claimed summary back (``pending``) to be retried, recording ``error``."""
    summary = Summary.objects.select_for_update().get(pk=claim.summary_id)
    if not _holds(summary, claim):
        return
    summary.status = SummaryStatus.PENDING
    summary.error = error
    summary.save(update_fields=["status", "error"])


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
