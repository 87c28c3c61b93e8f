"""Every change to conversations: appending messages, asking for a summary, and the steps
of making one (claim, complete, release), used by the API, the studio and the task alike.

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
  such window) or :func:`summary_request` sends its task again, in case the task was lost
  with it;
- a result is stored only by the worker holding the current claim.

Whether a run or a request is stale is judged by the database's clock (``Now()``), which
also stamps every summary time: web processes and workers on other hosts may disagree on
the time, and one whose clock ran ahead would take over a run started moments ago.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, F, OuterRef, Q, Subquery, Sum
from django.db.models.functions import Now
from django.utils import timezone

from assembler.history import (
    HistoryMessage,
    SummaryPlan,
    needs_summary,
    plan_summary,
)
from assembler.request import MAX_BUDGET
from assembler.summarize import (
    DEFAULT_INSTRUCTIONS,
    ExtractiveSummarizer,
    OpenAISummarizer,
    Summarizer,
    SummarizerUnavailable,
    summarize_with_fallback,
)
from assembler.templates import TemplateError
from assembler.templates import render as render_template
from promptadmin.conversations.models import (
    DEFAULT_HISTORY_BUDGET,
    MAX_MESSAGE_CHARS,
    MAX_MESSAGES_PER_APPEND,
    Conversation,
    Message,
    Role,
    Summary,
    SummaryStatus,
    could_be_key,
    key_validator,
)
from promptadmin.conversations.selectors import summary_text
from promptadmin.core import roles
from promptadmin.core.actors import Actor
from promptadmin.core.errors import ConflictError
from promptadmin.core.tokens import tokenizer
from promptadmin.prompts import selectors as prompts

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class AppendResult:
    conversation: Conversation
    positions: list[int]
    summary_pending: bool


def _text_problem(text: str) -> str | None:
    if len(text) > MAX_MESSAGE_CHARS:
        return f"A message may be at most {MAX_MESSAGE_CHARS} characters long; got {len(text)}."
    if not text.strip():
        return "A message may not be empty."
    if "\x00" in text:
        return "Text may not contain NUL (U+0000) characters."
    if not text.isascii():
        try:
            text.encode()
        except UnicodeEncodeError:
            return "Text may not contain lone surrogates (U+D800 to U+DFFF): they are not UTF-8."
    return None


def validate_key(key: str) -> None:
    """Refuse a conversation key that is not 1-200 letters, digits and ``._:@-``."""
    try:
        key_validator(key)
    except ValidationError as error:
        raise ValidationError({"key": error.messages}) from None


def validate_history_budget(budget: int, field: str = "history_budget") -> None:
    if isinstance(budget, bool) or not isinstance(budget, int) or not 1 <= budget <= MAX_BUDGET:
        raise ValidationError({field: f"Must be an integer from 1 to {MAX_BUDGET}."})


def _validate_messages(messages: Sequence[Mapping[str, Any]]) -> None:
    if not messages:
        raise ValidationError({"messages": "Send at least one message."})
    if len(messages) > MAX_MESSAGES_PER_APPEND:
        raise ValidationError(
            {"messages": f"At most {MAX_MESSAGES_PER_APPEND} messages per request."}
        )
    errors: dict[str, str] = {}
    for index, message in enumerate(messages):
        role, content = message.get("role"), message.get("content")
        if role not in Role.values:
            errors[f"messages.{index}.role"] = f"Must be one of: {', '.join(Role.values)}."
        if not isinstance(content, str):
            errors[f"messages.{index}.content"] = "Expected a string."
        elif (problem := _text_problem(content)) is not None:
            errors[f"messages.{index}.content"] = problem
    if errors:
        raise ValidationError(errors)


def _locked(key: str, *, resent_too: bool = False) -> tuple[Conversation, int | None] | None:
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


def _get_or_create_locked(key: str, history_budget: int | None) -> tuple[Conversation, int | None]:
    located = _locked(key)
    if located is not None:
        return located
    try:
        with transaction.atomic():
            conversation = Conversation.objects.create(
                key=key, history_budget=history_budget or DEFAULT_HISTORY_BUDGET
            )
        return conversation, None
    except IntegrityError:
        # Created by a concurrent append a moment ago: append after its messages.
        located = _locked(key)
        if located is None:  # pragma: no cover - the row cannot vanish
            raise
        return located


@transaction.atomic
def conversation_append(
    *,
    actor: Actor,
    key: str,
    messages: Sequence[Mapping[str, Any]],
    history_budget: int | None = None,
) -> AppendResult:
    """Append ``messages`` (``role``, ``content``) to conversation ``key``, creating it.

    ``history_budget`` sets the conversation's budget (on creation, or a change later).
    Positions follow on from the last one under a row lock, so concurrent appends never
    interleave. When the history not yet summarized passes the threshold, a summary is
    asked for (see :func:`summary_request`), unless it could only find nothing to
    summarize (see :func:`_over_threshold`). While one is asked for, an append that finds
    it stuck (``running`` past the time limit, or ``pending`` as long) sends its task
    again (after commit), so a summary whose worker or task was lost is still made; at
    most once per such window, however many appends come.
    Queries: the locked read (which also looks for a stuck summary; plus the insert on
    creation), the insert of the messages, the update of the conversation's counters,
    and one more only when over the threshold with no summary asked for yet (the summary
    request) or when sending a stuck summary's task again (recording when).
    """
    roles.require(actor, role=roles.Role.AUTHOR, action="Appending to a conversation")
    validate_key(key)
    if history_budget is not None:
        validate_history_budget(history_budget)
    _validate_messages(messages)
    conversation, stuck_summary_id = _get_or_create_locked(key, history_budget)
    tok = tokenizer()
    rows = []
    added = 0
    for offset, message in enumerate(messages, start=1):
        count = tok.count(message["content"])
        added += count
        rows.append(
            Message(
                conversation=conversation,
                position=conversation.last_position + offset,
                role=message["role"],
                content=message["content"],
                token_count=count,
                token_encoding=tok.name,
            )
        )
    Message.objects.bulk_create(rows)
    conversation.last_position += len(rows)
    conversation.unsummarized_tokens += added
    changes: dict[str, Any] = {
        "last_position": conversation.last_position,
        "unsummarized_tokens": F("unsummarized_tokens") + added,
        "updated_at": timezone.now(),
    }
    if history_budget is not None and history_budget != conversation.history_budget:
        conversation.history_budget = history_budget
        changes["history_budget"] = history_budget
    if conversation.nothing_to_summarize_through is not None and any(
        message["role"] == Role.USER for message in messages
    ):
        conversation.nothing_to_summarize_through = None
        changes["nothing_to_summarize_through"] = None
    if not conversation.summary_pending and _over_threshold(conversation):
        _enqueue_summary(conversation)
        conversation.summary_pending = changes["summary_pending"] = True
    elif stuck_summary_id is not None:
        _send_stuck(stuck_summary_id)
    Conversation.objects.filter(pk=conversation.pk).update(**changes)
    return AppendResult(conversation, [row.position for row in rows], conversation.summary_pending)


def _over_threshold(conversation: Conversation) -> bool:
    """Whether to ask for a summary of ``conversation``: the history not yet summarized is
    over the threshold of its budget, and a summary could find something to summarize.

    :func:`assembler.history.plan_summary` keeps verbatim the newest messages within
    ``keep_recent`` tokens (:func:`summary_targets`) and always the newest user message and
    everything after it; it finds a message old enough to summarize only when

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
    keep_recent, _ = summary_targets(conversation.history_budget)
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
    conversation_id, requested_through, status, attempts, content, token_encoding,
    backend, model, prompt_name, error, task_id, previous_cut, created_at
) VALUES (%s, %s, 'pending', 0, '', '', '', '', '', '', '', false, {now})
ON CONFLICT (conversation_id) WHERE status IN ('pending', 'running')
DO UPDATE SET requested_through = EXCLUDED.requested_through
WHERE conversations_summary.status = 'pending'
RETURNING id, created_at = {now}
"""


def _upsert_sql() -> str:
    """:data:`_UPSERT` for this database, with its ``Now()`` as Django writes it."""
    compiler = Summary.objects.none().query.get_compiler(connection=connection)
    now, params = compiler.compile(Now())
    assert not params
    return _UPSERT.format(now=now)


def _send_after_commit(summary_id: int) -> None:
    from promptadmin.conversations.tasks import enqueue_summary

    transaction.on_commit(lambda: enqueue_summary(summary_id))


def _send_stuck(summary_id: int) -> None:
    """Send again the task of a stuck summary: ``running`` past the time limit (its worker
    is gone, and its task may be too: the broker dropped it, or it was acked by a delivery
    that found the run still young) or ``pending`` as long (its task was lost). The
    delivery claims or takes it over; any extra one finds it running and comes back later,
    or finds it done. When is recorded: it is not sent again within the next window."""
    logger.warning("summary %s: stuck past the time limit; sending its task again", summary_id)
    Summary.objects.filter(pk=summary_id).update(resent_at=Now())
    _send_after_commit(summary_id)


def _enqueue_summary(conversation: Conversation, *, always: bool = False) -> int | None:
    """The guarded statement behind :func:`summary_request`; the id of the summary
    pending afterwards, or None while one is running. The caller holds the row lock.
    The task is enqueued for a new summary, or with ``always`` for a pending one too (the
    task is idempotent: a second delivery finds it running or done)."""
    with connection.cursor() as cursor:
        cursor.execute(_upsert_sql(), [conversation.pk, conversation.last_position])
        row = cursor.fetchone()
    if row is None:
        return None
    summary_id, inserted = row
    if always or inserted:
        _send_after_commit(int(summary_id))
    return int(summary_id)


NOTHING_TO_SUMMARIZE = (
    "Nothing to summarize: every message not yet summarized is recent enough to be shown "
    "verbatim within the history budget."
)


class NothingToSummarize(ConflictError):
    """No message of the conversation is old enough to summarize (see
    :func:`assembler.history.plan_summary`)."""

    def __init__(self) -> None:
        super().__init__(NOTHING_TO_SUMMARIZE)


@transaction.atomic
def summary_request(*, actor: Actor, key: str) -> int | None:
    """Ask for a summary of conversation ``key`` up to its newest message, now.

    Raises :class:`NothingToSummarize` (and records nothing) when no message is old
    enough to summarize: a summary asked for would only fail.

    One statement, guarded by the database: it inserts a pending summary (its task is
    enqueued after commit), or moves the pending one's range up to the newest message (a
    newer request supersedes it), or leaves alone one that is running (that one asks
    again when done, if still needed). Returns the pending summary's id, or None while
    one is running.
    The pending summary's task is sent again even when it already was, and so is that of
    a summary stuck ``running`` past the time limit (even one an append sent again
    lately): should the broker have lost it, or its worker have died with it, asking
    again is how it gets made.
    """
    roles.require(actor, role=roles.Role.AUTHOR, action="Asking for a summary")
    located = _locked(key, resent_too=True)
    if located is None:
        raise Conversation.DoesNotExist(f"No conversation with key {key!r}.")
    conversation, stuck_summary_id = located
    if _plan(conversation, conversation.last_position)[0] is None:
        raise NothingToSummarize
    summary_id = _enqueue_summary(conversation, always=True)
    if stuck_summary_id is not None and stuck_summary_id != summary_id:
        _send_stuck(stuck_summary_id)
    if not conversation.summary_pending:
        Conversation.objects.filter(pk=conversation.pk).update(summary_pending=True)
    return summary_id


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


class RetryLater(Exception):
    """The summarizer is unavailable; the task should retry (the summary is pending again)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def stale_after() -> timedelta:
    """How long a ``running`` summary may go on before its worker is presumed gone."""
    return timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT)


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


def _history_messages(conversation_id: int, after: int, through: int) -> list[HistoryMessage]:
    encoding = tokenizer().name
    rows = (
        Message.objects.filter(
            conversation_id=conversation_id, position__gt=after, position__lte=through
        )
        .order_by("position")
        .values_list("position", "role", "content", "token_count", "token_encoding")
    )
    return [
        HistoryMessage(position, role, content, count if enc == encoding else None)
        for position, role, content, count, enc in rows
    ]


def previous_summary(conversation_id: int) -> Summary | None:
    """The newest done summary of a conversation."""
    return (
        Summary.objects.filter(conversation_id=conversation_id, status=SummaryStatus.DONE)
        .order_by("-covers_through")
        .first()
    )


@dataclass(frozen=True, slots=True)
class Instructions:
    """What the endpoint is told to do, and the registered prompt version it comes from
    (``prompt_name`` empty and ``prompt_version`` None for the built-in instructions)."""

    text: str
    prompt_name: str = ""
    prompt_version: int | None = None


BUILT_IN_INSTRUCTIONS = Instructions(DEFAULT_INSTRUCTIONS)


def summarizer_instructions() -> Instructions:
    """The system text of the ``production`` version of the registered prompt named by
    ``SUMMARIZER_PROMPT`` (``component/agent[/task_type]``; a task type without a prompt
    of its own falls back to the default of (component, agent)), rendered without
    variables. The built-in instructions when there is no such prompt or label, or its
    text cannot be rendered without variables or is blank (logged)."""
    name = settings.SUMMARIZER_PROMPT
    address = prompts.parse_langfuse_name(name)
    try:
        if address is None:
            raise prompts.PromptLookupError(f"{name!r} cannot name a registered prompt")
        component, agent, task_type = address
        resolved = prompts.fetch_prompt(component=component, agent=agent, task_type=task_type)
    except prompts.PromptLookupError as missing:
        logger.info("summarizer prompt %s: %s; using the built-in instructions", name, missing)
        return BUILT_IN_INSTRUCTIONS
    try:
        text = render_template(resolved.system, resolved.syntax, {}).text
    except TemplateError as error:
        text, problem = "", str(error)
    else:
        problem = "its system text is blank"
    if not text.strip():
        logger.warning(
            "summarizer prompt %s version %s: %s; using the built-in instructions",
            resolved.langfuse_name,
            resolved.version,
            problem,
        )
        return BUILT_IN_INSTRUCTIONS
    return Instructions(text, resolved.langfuse_name, resolved.version)


def primary_summarizer(instructions: Instructions) -> Summarizer:
    """The configured summarizer: the OpenAI-compatible endpoint, told ``instructions``,
    or the extractive one."""
    if settings.SUMMARIZER_BASE_URL:
        return OpenAISummarizer(
            base_url=settings.SUMMARIZER_BASE_URL,
            model=settings.SUMMARIZER_MODEL,
            api_key=settings.SUMMARIZER_API_KEY or "unused",
            tokenizer=tokenizer(),
            timeout=settings.SUMMARIZER_TIMEOUT,
            max_retries=settings.SUMMARIZER_MAX_RETRIES,
            instructions=instructions.text,
        )
    return ExtractiveSummarizer(tokenizer())


def summary_targets(history_budget: int) -> tuple[int, int]:
    """(tokens kept verbatim, summary target) for a history budget: the summary takes a
    quarter of the budget, the messages kept after it half, leaving room to grow."""
    max_input = settings.SUMMARIZER_MAX_INPUT_TOKENS
    target = max(1, min(history_budget // 4, max_input // 4))
    return history_budget // 2, target


FALLBACK_NOTE = "fell back to the extractive summarizer after: "


def _plan(conversation: Conversation, through: int) -> tuple[SummaryPlan | None, Summary | None]:
    """The next summarization of ``conversation``'s messages up to ``through`` (None when
    none is old enough), and the newest done summary it builds on."""
    previous = previous_summary(conversation.pk)
    after = previous.covers_through if previous is not None else 0
    assert after is not None
    keep_recent, target = summary_targets(conversation.history_budget)
    plan = plan_summary(
        messages=_history_messages(conversation.pk, after, through),
        previous=summary_text(previous) if previous is not None else None,
        keep_recent_tokens=keep_recent,
        target_tokens=target,
        tokenizer=tokenizer(),
        max_input_tokens=settings.SUMMARIZER_MAX_INPUT_TOKENS,
    )
    return plan, previous


def summary_make(*, claim: Claim, allow_fallback: bool) -> str:
    """Make the claimed summary: plan, summarize, store. Returns what happened.

    When the endpoint is unavailable and ``allow_fallback`` is False, the summary goes
    back to ``pending`` (the error recorded) and :class:`RetryLater` is raised; on the
    last attempt the extractive summarizer makes it, and ``error`` says why.
    """
    summary = Summary.objects.select_related("conversation").get(pk=claim.summary_id)
    plan, previous = _plan(summary.conversation, summary.requested_through)
    if plan is None:
        summary_discard(claim=claim)
        return "nothing_to_summarize"
    tok = tokenizer()
    # Only the endpoint is told instructions: the extractive summarizer needs no prompt.
    instructions = summarizer_instructions() if settings.SUMMARIZER_BASE_URL else None
    primary = primary_summarizer(instructions or BUILT_IN_INSTRUCTIONS)
    try:
        # An unavailable endpoint is worth another try later, until the last attempt; a
        # refused summary falls back at once (the rule is the assembler's).
        result = summarize_with_fallback(
            primary, ExtractiveSummarizer(tok), plan, retry_unavailable=not allow_fallback
        )
    except SummarizerUnavailable as unavailable:
        summary_release(claim=claim, error=f"{primary.backend}: {unavailable}")
        raise RetryLater(str(unavailable)) from unavailable
    finally:
        close = getattr(primary, "close", None)
        if close is not None:
            close()
    outcome = result.outcome
    error = f"{FALLBACK_NOTE}{result.fallback_reason}" if result.fallback_used else ""
    # The prompt is recorded on a summary it helped make, not on the fallback's.
    told = instructions if instructions is not None and not result.fallback_used else None
    stored = summary_complete(
        claim=claim,
        covers_through=plan.covers_through,
        builds_on_id=previous.pk if previous is not None else None,
        content=outcome.text,
        token_count=outcome.tokens,
        backend=outcome.backend,
        model=outcome.model,
        error=error,
        message_cut=plan.message_cut,
        previous_cut=plan.previous_cut,
        prompt_name=told.prompt_name if told is not None else "",
        prompt_version=told.prompt_version if told is not None else None,
    )
    return "done" if stored else "superseded"


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
) -> bool:
    """Store the claimed summary as done and update the conversation's counters; False
    (nothing stored) when the claim was lost to a worker that took over. ``message_cut``
    and ``previous_cut`` record what was read short of the whole (see
    :class:`assembler.history.SummaryPlan`); ``prompt_name`` and ``prompt_version`` the
    registered prompt the endpoint was told (see :func:`summarizer_instructions`)."""
    conversation, summary = _lock_for_result(claim.summary_id)
    if not _holds(summary, claim):
        return False
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
    summary.finished_at = Now()
    summary.save()
    unsummarized = Message.objects.filter(
        conversation=conversation, position__gt=covers_through
    ).aggregate(total=Sum("token_count"))["total"]
    conversation.summarized_through = covers_through
    conversation.current_summary = summary
    conversation.unsummarized_tokens = unsummarized or 0
    conversation.summary_pending = False
    conversation.nothing_to_summarize_through = None
    # Messages came in while this one was made, or it read a bounded part: go on.
    if _over_threshold(conversation):
        _enqueue_summary(conversation)
        conversation.summary_pending = True
    conversation.save(
        update_fields=[
            "summarized_through",
            "current_summary",
            "unsummarized_tokens",
            "summary_pending",
            "nothing_to_summarize_through",
        ]
    )
    return True


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
def summary_discard(*, claim: Claim) -> None:
    """Drop the claimed summary, which found no message old enough to summarize: nothing
    failed, there was nothing to do yet.

    When the history it was asked for was over the part kept verbatim, its newest user
    message was the oldest not yet summarized: the conversation records the newest message
    it was asked for, and asks for no summary again until a user message follows (see
    :func:`_over_threshold`). Otherwise (its budget grew since it was asked for, say)
    more messages of any role can make one possible. Messages sent meanwhile were not read
    by this summary: when they make one possible, it is asked for again at once."""
    conversation, summary = _lock_for_result(claim.summary_id)
    if not _holds(summary, claim):
        return
    through = summary.requested_through
    summary.delete()
    logger.info("summary %s: nothing to summarize through message %s", claim.summary_id, through)
    since = Message.objects.filter(conversation=conversation, position__gt=through).aggregate(
        tokens=Sum("token_count"), users=Count("pk", filter=Q(role=Role.USER))
    )
    asked_for = conversation.unsummarized_tokens - (since["tokens"] or 0)
    keep_recent, _ = summary_targets(conversation.history_budget)
    anchored = asked_for > keep_recent and not since["users"]
    conversation.nothing_to_summarize_through = through if anchored else None
    conversation.summary_pending = False
    if _over_threshold(conversation):
        _enqueue_summary(conversation)
        conversation.summary_pending = True
    conversation.save(update_fields=["nothing_to_summarize_through", "summary_pending"])


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
