"""Reads of conversations: the history block for a budget (used by the API, content's
assembly and the studio), summaries, lists for the studio. Never waits for a summary.

The hot path (``GET .../history`` and assembly with a ``history`` layer) reads the
conversation's state in one small query. What a state shows is fixed: messages are never
changed, a done summary never is, and the state names the newest message and the current
summary (:attr:`_State.version`). So what was loaded and fitted for a state is remembered
in this process (:class:`_Remembered`); an append or a new summary makes a new state, and
nothing needs invalidating. The two queries of this path are written by hand: through the
ORM, compiling each cost about four times running it (0.45 ms against 0.11 ms, measured).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import QuerySet, Subquery

from assembler.history import HistoryFit, HistoryMessage, SummaryText, fit_history
from assembler.request import History as HistoryInput
from assembler.tokens import Tokenizer
from promptadmin.conversations.models import Conversation, Message, Role, Summary, could_be_key
from promptadmin.core.tokens import cached_count, tokenizer

# Each message's part in the block takes at least three tokens ("User:" and a word), so a
# budget of B tokens shows at most B // 3 messages besides the current exchange.
_MIN_MESSAGE_TOKENS = 3


@dataclass(frozen=True, slots=True)
class History:
    """A conversation's history block for a budget, and how it was made (the studio's
    view, with the conversation and summary it read)."""

    conversation: Conversation
    fit: HistoryFit
    summary: Summary | None  # the summary shown, if one is
    summary_pending: bool


@dataclass(frozen=True, slots=True)
class ShownSummary:
    """The summary a history block shows, as the API names it."""

    pk: int
    covers_through: int
    status: str


@dataclass(frozen=True, slots=True)
class HistoryBlock:
    """A conversation's history block for a budget, and how it was made (the API's view)."""

    fit: HistoryFit
    summary: ShownSummary | None  # the summary shown, if one is
    summary_pending: bool


class _Remembered:
    """Values by key in this process, least recently used out first, bounded by their
    count and by the characters of text they hold (a budget of a million tokens can load
    megabytes of messages)."""

    def __init__(self, entries: int, chars: int) -> None:
        self.entries = entries
        self.chars = chars
        self._values: OrderedDict[Hashable, tuple[int, Any]] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any:
        """The value remembered under ``key``, or None."""
        with self._lock:
            found = self._values.get(key)
            if found is None:
                return None
            self._values.move_to_end(key)
            return found[1]

    def put(self, key: Hashable, value: Any, chars: int) -> None:
        """Remember ``value`` (holding ``chars`` characters of text), unless it alone is
        over the bound."""
        if chars > self.chars:
            return
        with self._lock:
            previous = self._values.pop(key, None)
            if previous is not None:
                self._held -= previous[0]
            self._values[key] = (chars, value)
            self._held += chars
            while len(self._values) > self.entries or self._held > self.chars:
                self._held -= self._values.popitem(last=False)[1][0]


# About 8 MB of text per process at most.
_remembered = _Remembered(entries=256, chars=8_000_000)


@dataclass(frozen=True, slots=True)
class _State:
    """A conversation as the hot path reads it.

    ``version`` names what the conversation shows: the position of its newest message
    (messages never change, and a new one comes after it) and its current summary (a done
    summary never changes), with the encoding that prices them. ``created_at`` is part of
    it because an id can come back after a rollback (SQLite reuses rolled-back ids).
    """

    key: str
    id: int
    history_budget: int
    summary_pending: bool
    last_position: int
    summary: ShownSummary | None
    summary_text: SummaryText | None
    version: tuple[Any, ...]


_STATE_SQL = """
SELECT c.id, c.created_at, c.history_budget, c.summary_pending, c.last_position,
       s.id, s.covers_through, s.status, s.content, s.token_count, s.token_encoding
FROM conversations_conversation c
LEFT JOIN conversations_summary s ON s.id = c.current_summary_id
WHERE c."key" = %s
"""


def _state(key: str, encoding: str) -> _State:
    """Conversation ``key`` with its current summary (the newest done one), in one query.
    Raises ``Conversation.DoesNotExist``."""
    row = None
    if could_be_key(key):
        with connection.cursor() as cursor:
            cursor.execute(_STATE_SQL, [key])
            row = cursor.fetchone()
    if row is None:
        raise Conversation.DoesNotExist(f"No conversation with key {key!r}.")
    pk, created_at, budget, pending, last_position = row[:5]
    summary_id, covers_through, status, content, count, count_encoding = row[5:]
    shown: ShownSummary | None = None
    text: SummaryText | None = None
    if summary_id is not None:
        shown = ShownSummary(summary_id, covers_through, status)
        # As summary_text: a count made with another encoding is counted afresh.
        text = SummaryText(content, covers_through, count if count_encoding == encoding else None)
    return _State(
        key=key,
        id=pk,
        history_budget=budget,
        summary_pending=bool(pending),
        last_position=last_position,
        summary=shown,
        summary_text=text,
        version=(pk, created_at, last_position, summary_id, encoding),
    )


_RECENT_SQL = """
SELECT position, role, content, token_count, token_encoding
FROM conversations_message
WHERE conversation_id = %s AND position > %s AND position <= %s
ORDER BY position DESC
LIMIT %s
"""
_MESSAGE_FIELDS = ("position", "role", "content", "token_count", "token_encoding")


def _history_messages(rows: Iterable[Sequence[Any]], encoding: str) -> list[HistoryMessage]:
    """Message rows (:data:`_MESSAGE_FIELDS`, in that order) as the assembler takes them:
    a token count made with another encoding than ``encoding`` is left to be counted
    afresh."""
    return [
        HistoryMessage(position, role, content, count if enc == encoding else None)
        for position, role, content, count, enc in rows
    ]


def history_messages(conversation_id: int, *, after: int, through: int) -> list[HistoryMessage]:
    """The messages after position ``after`` up to ``through``, oldest first, as the
    assembler takes them (what a summarization plans from). One query."""
    rows = (
        Message.objects.filter(
            conversation_id=conversation_id, position__gt=after, position__lte=through
        )
        .order_by("position")
        .values_list(*_MESSAGE_FIELDS)
    )
    return _history_messages(rows, tokenizer().name)


def _recent_messages(
    conversation_id: int, after: int, through: int, budget: int, encoding: str
) -> list[HistoryMessage]:
    """The messages after position ``after``, up to ``through`` (the newest when the
    conversation was read, so that what is loaded is what its state names), that could
    be shown within ``budget``, oldest first. One query; two when none of the newest
    ``budget // 3 + 1`` is a user message. Bounded by the budget, never by the
    conversation's length.

    Each message's part costs at least three tokens, so the newest ``budget // 3 + 1``
    hold every message the block could show besides the current exchange (the newest user
    message and what follows it, always shown first). When none of them is a user message,
    that exchange is more than the budget holds: the block then shows it from its start
    while it fits, so what is loaded is the newest user message and the ``budget // 3``
    after it (found by the index of user messages), and the newest too when those reach
    them."""
    window = budget // _MIN_MESSAGE_TOKENS + 1
    with connection.cursor() as cursor:
        cursor.execute(_RECENT_SQL, [conversation_id, after, through, window])
        newest = list(cursor.fetchall())
    if newest and all(row[1] != Role.USER for row in newest):
        oldest_loaded = newest[-1][0]
        earlier = Message.objects.filter(
            conversation_id=conversation_id, position__gt=after, position__lt=oldest_loaded
        )
        anchor = earlier.filter(role=Role.USER).order_by("-position").values("position")[:1]
        exchange = list(
            earlier.filter(position__gte=Subquery(anchor))
            .order_by("position")
            .values_list(*_MESSAGE_FIELDS)[:window]
        )
        newest.reverse()
        # Short of the window, the exchange runs on into the newest loaded: all of it.
        return _history_messages(
            exchange + newest if len(exchange) < window else exchange, encoding
        )
    newest.reverse()
    return _history_messages(newest, encoding)


def _load(state: _State, budget: int) -> HistoryInput:
    after = state.summary_text.covers_through if state.summary_text is not None else 0
    return HistoryInput(
        messages=tuple(
            _recent_messages(state.id, after, state.last_position, budget, tokenizer().name)
        ),
        summary=state.summary_text,
        budget=budget,
        conversation=state.key,
        summary_id=state.summary.pk if state.summary is not None else None,
    )


def history_block(key: str, *, budget: int | None = None) -> HistoryBlock:
    """The history block of conversation ``key`` within ``budget`` (default: the
    conversation's history budget): the newest done summary (if any) and the recent
    messages that fit, ``tokens`` the exact count of the text. One query when this
    process fitted the same state and budget before, else two (see
    :func:`_recent_messages`). Raises ``Conversation.DoesNotExist``."""
    tok = tokenizer()
    state = _state(key, tok.name)
    budget = state.history_budget if budget is None else budget
    remembered = ("block", state.version, budget)
    fitted = _remembered.get(remembered)
    if fitted is None:
        history = _load(state, budget)
        fit = fit_history(
            messages=history.messages, summary=history.summary, budget=budget, tokenizer=tok
        )
        fitted = (fit, state.summary if fit.summary_used else None)
        _remembered.put(remembered, fitted, len(fit.text))
    return HistoryBlock(fit=fitted[0], summary=fitted[1], summary_pending=state.summary_pending)


def history_for_assembly(key: str, budget: int | None) -> HistoryInput:
    """What the assembler's ``history`` layer needs for conversation ``key``: the newest
    ready summary and the messages after it that could fit ``budget`` (default: the
    conversation's history budget). Never waits for a summary. One query when this
    process loaded the same state and budget before, else two.
    Raises ``Conversation.DoesNotExist``."""
    state = _state(key, tokenizer().name)
    budget = state.history_budget if budget is None else budget
    remembered = ("input", state.version, budget)
    history: HistoryInput | None = _remembered.get(remembered)
    if history is None:
        history = _load(state, budget)
        chars = sum(len(message.content) for message in history.messages)
        if history.summary is not None:
            chars += len(history.summary.content)
        _remembered.put(remembered, history, chars)
    return history


def summary_text(summary: Summary) -> SummaryText:
    """A done summary as the assembler takes it."""
    assert summary.covers_through is not None
    return SummaryText(summary.content, summary.covers_through, cached_count(summary))


def conversation_get(key: str) -> Conversation:
    """The conversation with its newest done summary, in one query.
    Raises ``Conversation.DoesNotExist``."""
    if not could_be_key(key):
        raise Conversation.DoesNotExist(f"No conversation with key {key!r}.")
    return Conversation.objects.select_related("current_summary").get(key=key)


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
    """The history block of ``conversation`` within ``budget``, as :func:`history_block`
    but for a conversation already read (by :func:`conversation_get`, with its summary),
    and never remembered. One query (two when the newest user message is further back
    than the budget could show)."""
    tok = tok or tokenizer()
    summary = newest_summary(conversation)
    after = (summary.covers_through or 0) if summary is not None else 0
    messages = _recent_messages(
        conversation.pk, after, conversation.last_position, budget, tok.name
    )
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


def conversation_summaries(conversation: Conversation) -> QuerySet[Summary]:
    """The conversation's summaries, newest first, with who asked for each."""
    return (
        Summary.objects.filter(conversation=conversation)
        .select_related("requested_by")
        .order_by("-id")
    )


def conversation_list() -> QuerySet[Conversation]:
    return Conversation.objects.order_by("-updated_at", "-id")


def conversation_messages(conversation: Conversation) -> QuerySet[Message]:
    return Message.objects.filter(conversation=conversation).order_by("position")


def message_range(conversation: Conversation, *, first: int, last: int) -> QuerySet[Message]:
    """The messages at positions ``first`` to ``last``, oldest first, with who appended
    them: read by the (conversation, position) index, bounded by the range whatever the
    conversation's length."""
    return (
        Message.objects.filter(conversation=conversation, position__range=(first, last))
        .select_related("created_by")
        .order_by("position")
    )


MESSAGE_PAGE_SIZE = 200


@dataclass(frozen=True, slots=True)
class MessagePage:
    """Page ``number`` of ``pages`` of a conversation's messages (1: the newest), its
    messages oldest first (``first`` to ``last``; an empty range past the last page)."""

    messages: list[Message]
    number: int
    pages: int
    first: int
    last: int


def message_page(
    conversation: Conversation, *, page: int = 1, size: int = MESSAGE_PAGE_SIZE
) -> MessagePage:
    """Page ``page`` of ``size`` messages of ``conversation``, counting from the newest.

    One query, by position range (:func:`message_range`), and no count: positions run
    from 1 to the conversation's ``last_position`` without a gap (appends number them
    under a lock, and messages are never deleted). So a page costs the same at 100 and
    at 100,000 messages.
    """
    if page < 1 or size < 1:
        raise ValueError(f"page and size must be >= 1, got {page} and {size}")
    total = conversation.last_position
    pages = max(1, -(-total // size))
    last = total - (page - 1) * size
    first = max(1, last - size + 1)
    messages = list(message_range(conversation, first=first, last=last)) if last >= 1 else []
    return MessagePage(messages, page, pages, first, max(last, first - 1))
