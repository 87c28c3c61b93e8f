"""The changes people and API keys make to conversations: appending messages (and
creating the conversation), and asking for a summary now. Each checks its actor's
permission (authors, and keys with the write scope), validates, and records who: a
person, or an API key by its label.

The summary queue itself (how a summary is asked for, claimed and stored exactly once)
is :mod:`promptadmin.conversations.queue`; a summary's task is sent once the
transaction that asked for it commits (:func:`promptadmin.conversations.tasks.enqueue_summary`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from assembler.request import MAX_BUDGET
from promptadmin.conversations import queue, tasks
from promptadmin.conversations.models import (
    MAX_MESSAGE_CHARS,
    MAX_MESSAGES_PER_APPEND,
    Conversation,
    Message,
    Role,
    key_validator,
)
from promptadmin.conversations.summarizer import plan_next
from promptadmin.core.actors import Actor, attribution
from promptadmin.core.errors import ConflictError
from promptadmin.core.roles import Role as ActorRole
from promptadmin.core.roles import require
from promptadmin.core.tokens import tokenizer


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


def _send_after_commit(summary_id: int) -> None:
    transaction.on_commit(lambda: tasks.enqueue_summary(summary_id))


def _send_stuck(summary_id: int) -> None:
    """Send again the task of a stuck summary (see :func:`queue.mark_resent`)."""
    queue.mark_resent(summary_id)
    _send_after_commit(summary_id)


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
    summarize (see :func:`queue.over_threshold`). While one is asked for, an append that finds
    it stuck (``running`` past the time limit, or ``pending`` as long) sends its task
    again (after commit), so a summary whose worker or task was lost is still made; at
    most once per such window, however many appends come.
    Queries: the locked read (which also looks for a stuck summary; plus the insert on
    creation), the insert of the messages, the update of the conversation's counters,
    and one more only when over the threshold with no summary asked for yet (the summary
    request) or when sending a stuck summary's task again (recording when). Whatever the
    number of messages the conversation has.

    Authors and write keys may append; the conversation (when created) and each message
    record who appended them. A summary asked for because of the append records nobody:
    the threshold asked for it.
    """
    require(actor, role=ActorRole.AUTHOR, action="Appending to a conversation")
    validate_key(key)
    if history_budget is not None:
        validate_history_budget(history_budget)
    _validate_messages(messages)
    who = attribution(actor)
    conversation, stuck_summary_id = queue.get_or_create_locked(key, history_budget, who)
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
                created_by=who.user,
                created_via=who.via,
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
    if not conversation.summary_pending and queue.over_threshold(conversation):
        asked = queue.ask(conversation)
        if asked is not None and asked.new:
            _send_after_commit(asked.summary_id)
        conversation.summary_pending = changes["summary_pending"] = True
    elif stuck_summary_id is not None:
        _send_stuck(stuck_summary_id)
    Conversation.objects.filter(pk=conversation.pk).update(**changes)
    return AppendResult(conversation, [row.position for row in rows], conversation.summary_pending)


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
    enough to summarize: a summary asked for would only fail. Authors and write keys may
    ask; the summary records who asked.

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
    require(actor, role=ActorRole.AUTHOR, action="Asking for a summary")
    located = queue.locked(key, resent_too=True)
    if located is None:
        raise Conversation.DoesNotExist(f"No conversation with key {key!r}.")
    conversation, stuck_summary_id = located
    if plan_next(conversation, conversation.last_position)[0] is None:
        raise NothingToSummarize
    # Sent even when it already was: the task is idempotent, and should the broker have
    # lost it, asking again is how it gets made.
    who = attribution(actor)
    asked = queue.ask(conversation, requested_by=who.user, requested_via=who.via)
    summary_id = asked.summary_id if asked is not None else None
    if summary_id is not None:
        _send_after_commit(summary_id)
    if stuck_summary_id is not None and stuck_summary_id != summary_id:
        _send_stuck(stuck_summary_id)
    if not conversation.summary_pending:
        Conversation.objects.filter(pk=conversation.pk).update(summary_pending=True)
    return summary_id
