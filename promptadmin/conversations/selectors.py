"""Reads of conversations: the history block for a budget (used by the API and by
content's assembly), summaries, lists for the studio. Never waits for a summary."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet

from assembler.history import HistoryFit, HistoryMessage, fit_history
from assembler.request import History as HistoryInput
from assembler.tokens import Tokenizer
from promptadmin.conversations.models import Conversation, Message, Role, Summary
from promptadmin.conversations.services import summary_text
from promptadmin.core.tokens import tokenizer

# Each message's part in the block takes at least three tokens ("User:" and a word), so a
# budget of B tokens shows at most B // 3 messages besides the current exchange.
_MIN_MESSAGE_TOKENS = 3


@dataclass(frozen=True, slots=True)
class History:
    """A conversation's history block for a budget, and how it was made."""

    conversation: Conversation
    fit: HistoryFit
    summary: Summary | None  # the summary shown, if one is
    summary_pending: bool


def conversation_get(key: str) -> Conversation:
    """The conversation with its newest done summary, in one query."""
    return Conversation.objects.select_related("current_summary").get(key=key)


def _recent_messages(
    conversation: Conversation, after: int, budget: int, encoding: str
) -> list[HistoryMessage]:
    """The messages after position ``after`` that could be shown within ``budget``: the
    newest ``budget // 3 + 1`` and, when none of those is a user message, everything from
    the newest user message on. Oldest first."""
    rows = Message.objects.filter(conversation=conversation, position__gt=after)
    fields = ("position", "role", "content", "token_count", "token_encoding")
    newest = list(
        rows.order_by("-position").values_list(*fields)[: budget // _MIN_MESSAGE_TOKENS + 1]
    )
    if newest and all(row[1] != Role.USER for row in newest):
        oldest_loaded = newest[-1][0]
        anchor = (
            rows.filter(role=Role.USER, position__lt=oldest_loaded)
            .order_by("-position")
            .values_list("position", flat=True)
            .first()
        )
        if anchor is not None:
            newest += list(
                rows.filter(position__gte=anchor, position__lt=oldest_loaded)
                .order_by("-position")
                .values_list(*fields)
            )
    newest.reverse()
    return [
        HistoryMessage(position, role, content, count if enc == encoding else None)
        for position, role, content, count, enc in newest
    ]


_SUMMARY_FIELDS = ("id", "covers_through", "content", "token_count", "token_encoding", "status")


def newest_summary(conversation: Conversation) -> Summary | None:
    """The newest done summary: the conversation's ``current_summary``, which the services
    keep (read with the conversation when it was fetched by :func:`conversation_get`)."""
    return conversation.current_summary


def conversation_history(
    conversation: Conversation,
    *,
    budget: int,
    tok: Tokenizer | None = None,
    exact_check: bool = True,
) -> History:
    """The history block of ``conversation`` within ``budget``: the newest done summary
    (if any) and the recent messages that fit. One query (two when the newest user
    message is further back than the budget could show), the conversation being read
    with its summary by :func:`conversation_get`."""
    tok = tok or tokenizer()
    summary = newest_summary(conversation)
    after = (summary.covers_through or 0) if summary is not None else 0
    messages = _recent_messages(conversation, after, budget, tok.name)
    fit = fit_history(
        messages=messages,
        summary=summary_text(summary) if summary is not None else None,
        budget=budget,
        tokenizer=tok,
        exact_check=exact_check,
    )
    return History(
        conversation=conversation,
        fit=fit,
        summary=summary if fit.summary_used else None,
        summary_pending=conversation.summary_pending,
    )


def history_for_assembly(key: str, budget: int | None) -> HistoryInput:
    """What the assembler's ``history`` layer needs for conversation ``key``: the newest
    ready summary and the messages after it that could fit ``budget`` (default: the
    conversation's history budget). Never waits for a summary. Two queries.
    Raises ``Conversation.DoesNotExist``."""
    conversation = (
        Conversation.objects.select_related("current_summary")
        .only(
            "id",
            "key",
            "history_budget",
            *(f"current_summary__{name}" for name in _SUMMARY_FIELDS),
        )
        .get(key=key)
    )
    budget = conversation.history_budget if budget is None else budget
    summary = newest_summary(conversation)
    after = (summary.covers_through or 0) if summary is not None else 0
    return HistoryInput(
        messages=_recent_messages(conversation, after, budget, tokenizer().name),
        summary=summary_text(summary) if summary is not None else None,
        budget=budget,
        conversation=conversation.key,
        summary_id=summary.pk if summary is not None else None,
    )


def conversation_summaries(conversation: Conversation) -> QuerySet[Summary]:
    return Summary.objects.filter(conversation=conversation).order_by("-id")


def conversation_list() -> QuerySet[Conversation]:
    return Conversation.objects.order_by("-updated_at", "-id")


def conversation_messages(conversation: Conversation) -> QuerySet[Message]:
    return Message.objects.filter(conversation=conversation).order_by("position")
