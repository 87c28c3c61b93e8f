"""Conversation history under a token budget, and when and what to summarize.

A conversation is a list of messages, each with a position (strictly increasing). A
summary stands for every message at or before its ``covers_through`` position.

The history block
-----------------
The block is its parts joined by a blank line (:data:`PART_SEPARATOR`), oldest first:

- the summary, when one is shown: the line ``Summary of earlier conversation:``
  (:data:`SUMMARY_HEADING`), a line break, then the summary text;
- each message shown: its role's label (``User``, ``Assistant`` or ``System``), a colon, a
  space, then the message text exactly as written.

There is no trailing newline; an empty history is the empty string. The same rendering is
the input a summarizer reads (:attr:`SummaryPlan.text`).

>>> from assembler.tokens import get_tokenizer
>>> tokenizer = get_tokenizer()
>>> messages = [
...     HistoryMessage(1, "user", "Open the north gate."),
...     HistoryMessage(2, "assistant", "The gate creaks open."),
...     HistoryMessage(3, "user", "I walk through."),
... ]
>>> fit = fit_history(messages=messages, summary=SummaryText("Ann reached the gate.", 1),
...                   budget=100, tokenizer=tokenizer)
>>> print(fit.text)
Summary of earlier conversation:
Ann reached the gate.
<BLANKLINE>
Assistant: The gate creaks open.
<BLANKLINE>
User: I walk through.
>>> fit.mode, fit.positions, fit.tokens
('summary_and_recent', (2, 3), 25)

Pricing
-------
Like assembly (see :mod:`assembler.assembly`), a block is priced from its parts: each
message's count (``token_count`` when given, trusted like a segment's cached count) plus
the cost of the joins between parts, measured on a few characters either side
(:meth:`Tokenizer.join_cost`, remembered). Each step of a fit costs constant time; one
encode of the finished block then checks the sum.

The price is not always the count, so that check cannot go: a run of punctuation,
spaces or line breaks longer than the window at a join tokenizes differently whole. A
summary of thirty "!" and a full stop before ``User: Go on.`` is priced 15 and has 16
tokens; a message of thirty "!" is priced 9 and has 7. Only a caller that counts the
finished text anyway, as assembly counts its whole prompt, leaves the check out.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal, TypeAlias

from assembler.tokens import Tokenizer

Role: TypeAlias = Literal["user", "assistant", "system"]
ROLES: tuple[Role, ...] = ("user", "assistant", "system")

ROLE_LABELS: dict[str, str] = {"user": "User", "assistant": "Assistant", "system": "System"}
"""How each role is named in the history block."""

SUMMARY_HEADING = "Summary of earlier conversation:"
PART_SEPARATOR = "\n\n"
_LABEL_SEPARATOR = " "
_HEADING_SEPARATOR = "\n"

HistoryMode: TypeAlias = Literal["full", "summary_and_recent", "recent_only"]

DEFAULT_SUMMARY_THRESHOLD = 0.8
DEFAULT_MAX_INPUT_TOKENS = 16000


@dataclass(frozen=True, slots=True)
class HistoryMessage:
    """One message of a conversation.

    ``token_count`` is the count of ``content`` (in the encoding used to fit) stored with
    the message, so that it is not counted again; ``None`` means count it now.
    """

    position: int
    role: Role
    content: str
    token_count: int | None = None

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(
                f"message {self.position}: role must be one of {', '.join(ROLES)}, "
                f"got {self.role!r}"
            )
        if self.token_count is not None and self.token_count < 0:
            raise ValueError(
                f"message {self.position}: token_count must be >= 0, got {self.token_count}"
            )


@dataclass(frozen=True, slots=True)
class SummaryText:
    """A summary of every message at or before position ``covers_through``."""

    content: str
    covers_through: int
    token_count: int | None = None

    def __post_init__(self) -> None:
        if self.token_count is not None and self.token_count < 0:
            raise ValueError(f"summary: token_count must be >= 0, got {self.token_count}")


@dataclass(frozen=True, slots=True)
class HistoryTrim:
    """A message shown cut short: the newest user message when it alone is over budget,
    or the first message after it when that message and the newest user message do not
    fit together. Tokens are those of the message's part (label included)."""

    position: int
    tokens_before: int
    tokens_after: int


@dataclass(frozen=True, slots=True)
class HistoryFit:
    """The history block fitted to a budget.

    - ``mode``: ``full`` when there is no summary and every message is shown whole;
      ``summary_and_recent`` when the summary is shown (with the recent messages that
      fit); ``recent_only`` otherwise (no summary, or one that did not fit).
    - ``text``: the block (see the module's documentation); ``tokens``: its token count.
    - ``positions``: the messages shown, oldest first.
    - ``summary_used``: whether the summary is shown; ``covers_through`` is then its
      ``covers_through``, else None.
    - ``omitted``: messages neither shown nor stood for by the summary shown, oldest first.
      Messages at or before a given summary's ``covers_through`` are never shown, so they
      are listed here when that summary is not shown.
    - ``trimmed``: the message cut short, if one was.
    """

    mode: HistoryMode
    text: str
    tokens: int
    positions: tuple[int, ...]
    summary_used: bool
    covers_through: int | None
    omitted: tuple[int, ...]
    trimmed: HistoryTrim | None


def render_message(message: HistoryMessage) -> str:
    """A message as it appears in the history block.

    >>> render_message(HistoryMessage(4, "assistant", "The gate is shut."))
    'Assistant: The gate is shut.'
    """
    return ROLE_LABELS[message.role] + ":" + _LABEL_SEPARATOR + message.content


def render_summary(summary: SummaryText) -> str:
    """A summary as it appears in the history block.

    >>> print(render_summary(SummaryText("Ann reached the gate.", covers_through=8)))
    Summary of earlier conversation:
    Ann reached the gate.
    """
    return SUMMARY_HEADING + _HEADING_SEPARATOR + summary.content


@dataclass(frozen=True, slots=True)
class _Part:
    text: str
    tokens: int


def _message_part(message: HistoryMessage, tokenizer: Tokenizer) -> _Part:
    label = ROLE_LABELS[message.role] + ":"
    content = message.content
    count = message.token_count if message.token_count is not None else tokenizer.count(content)
    tokens = tokenizer.count_cached(label) + tokenizer.join_cost(label, _LABEL_SEPARATOR, content)
    return _Part(label + _LABEL_SEPARATOR + content, tokens + count)


def _summary_part(summary: SummaryText, tokenizer: Tokenizer) -> _Part:
    content = summary.content
    count = summary.token_count if summary.token_count is not None else tokenizer.count(content)
    tokens = tokenizer.count_cached(SUMMARY_HEADING)
    tokens += tokenizer.join_cost(SUMMARY_HEADING, _HEADING_SEPARATOR, content)
    return _Part(SUMMARY_HEADING + _HEADING_SEPARATOR + content, tokens + count)


def _join(tokenizer: Tokenizer, left: _Part, right: _Part) -> int:
    return tokenizer.join_cost(left.text, PART_SEPARATOR, right.text)


def _priced_total(parts: Sequence[_Part], tokenizer: Tokenizer) -> int:
    total = sum(part.tokens for part in parts)
    return total + sum(_join(tokenizer, a, b) for a, b in itertools.pairwise(parts))


def _check_order(messages: Sequence[HistoryMessage]) -> None:
    for before, after in itertools.pairwise(messages):
        if after.position <= before.position:
            raise ValueError(
                "messages must be in strictly increasing order of position: "
                f"{after.position} comes after {before.position}"
            )


def _newest_user_index(messages: Sequence[HistoryMessage]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "user":
            return index
    return None


def _trimmed_part(
    message: HistoryMessage, room: int, tokenizer: Tokenizer
) -> tuple[_Part, int] | None:
    """``message``'s part cut to at most ``room`` tokens, with the tokens it had before;
    None when not even one token of its text fits."""
    whole = _message_part(message, tokenizer)
    label = ROLE_LABELS[message.role] + ":" + _LABEL_SEPARATOR
    content_tokens = (
        message.token_count if message.token_count is not None else tokenizer.count(message.content)
    )
    allowed = room - (whole.tokens - content_tokens)
    while allowed > 0:
        content = tokenizer.truncate(message.content, allowed)
        if not content:
            return None
        tokens = tokenizer.count(label + content)
        if tokens <= room:
            return _Part(label + content, tokens), whole.tokens
        allowed -= tokens - room
    return None


@dataclass(slots=True)
class _Selection:
    summary: _Part | None
    parts: list[_Part]
    first: int  # index (in the visible messages) of the oldest message shown
    start: int  # index of the newest user message (where the current exchange starts)
    last: int  # index after the newest message shown
    trimmed: HistoryTrim | None
    tokens: int | None = None  # the price of the parts, when worked out on the way

    def all_parts(self) -> list[_Part]:
        return [self.summary, *self.parts] if self.summary is not None else list(self.parts)


def _select(
    visible: Sequence[HistoryMessage],
    summary: SummaryText | None,
    budget: int,
    tokenizer: Tokenizer,
    older_cap: int | None = None,
) -> _Selection:
    """Choose what to show within ``budget``, priced from parts (see :func:`fit_history`);
    at most ``older_cap`` messages older than the current exchange, when given."""
    anchor = _newest_user_index(visible)
    start = len(visible) if anchor is None else anchor
    required = [_message_part(message, tokenizer) for message in visible[start:]]
    required_tokens = _priced_total(required, tokenizer)
    if required_tokens > budget:
        return _select_over_budget(visible, start, required, budget, tokenizer)

    # The current exchange fits. The summary comes next, then older messages, newest first.
    parts = required
    total = required_tokens
    summary_part = None if summary is None else _summary_part(summary, tokenizer)
    if summary_part is not None:
        with_summary = total + summary_part.tokens
        if parts:
            with_summary += _join(tokenizer, summary_part, parts[0])
        if with_summary <= budget:
            total = with_summary
        else:
            summary_part = None
    first = start
    oldest = parts[0] if parts else None
    # The join between the summary and the oldest message shown, in ``total``.
    summary_join = 0
    if summary_part is not None and oldest is not None:
        summary_join = _join(tokenizer, summary_part, oldest)
    older: list[_Part] = []  # newest first
    while first > 0 and (older_cap is None or start - first < older_cap):
        part = _message_part(visible[first - 1], tokenizer)
        added = part.tokens
        if oldest is not None:
            added += _join(tokenizer, part, oldest)
        if summary_part is not None:
            # The summary moves in front of the new oldest message.
            join = _join(tokenizer, summary_part, part)
            added += join - summary_join
        if total + added > budget:
            break
        total += added
        older.append(part)
        oldest = part
        if summary_part is not None:
            summary_join = join
        first -= 1
    older.reverse()
    return _Selection(summary_part, older + parts, first, start, len(visible), None, total)


def _select_over_budget(
    visible: Sequence[HistoryMessage],
    start: int,
    required: list[_Part],
    budget: int,
    tokenizer: Tokenizer,
) -> _Selection:
    """The newest user message and what follows it do not fit: show them from the newest
    user message on, whole while they fit, the first that does not cut short."""
    parts: list[_Part] = []
    total = 0
    trimmed = None
    end = start
    for index in range(start, len(visible)):
        part = required[index - start]
        join = _join(tokenizer, parts[-1], part) if parts else 0
        if total + join + part.tokens <= budget:
            parts.append(part)
            total += join + part.tokens
            end += 1
            continue
        # The join to a part cut short is priced on the whole part's first characters,
        # which the cut part shares.
        cut = _trimmed_part(visible[index], budget - total - join, tokenizer)
        if cut is not None:
            parts.append(cut[0])
            trimmed = HistoryTrim(visible[index].position, cut[1], cut[0].tokens)
            end += 1
        break
    return _Selection(None, parts, start, start, end, trimmed)


def fit_history(
    *,
    messages: Sequence[HistoryMessage],
    summary: SummaryText | None,
    budget: int,
    tokenizer: Tokenizer,
    exact_check: bool = True,
) -> HistoryFit:
    """The history block for ``messages`` (oldest first) and ``summary`` within ``budget``.

    Messages at or before ``summary.covers_through`` are never shown (they may be passed or
    left out). Of the others, the block shows, newest to oldest and whole messages only:

    1. the newest user message and every message after it (the current exchange);
    2. the summary, when there is one and it fits beside them;
    3. older messages, newest first, as long as each fits; the first that does not ends
       the block, so the messages shown are always consecutive.

    When the current exchange alone is over budget, the block is only that exchange: the
    newest user message whole if it fits (else cut short), then the messages after it
    whole while they fit, the first that does not cut short, the rest left out. The cut
    is reported in ``trimmed``. A message shown cut short keeps at least one token of its
    text, so a budget too small for that shows nothing.

    The block is priced from its parts (see the module's documentation); with
    ``exact_check`` (the default) one encode of the finished block checks the price.
    Should the price have understated it (a stale ``token_count``, or a very long run of
    punctuation or letters at a join), the fit goes on one step at a time, each checked
    exactly: one older message fewer, then no summary, then the current exchange cut to a
    budget lowered by the difference. ``tokens`` is then exact.
    A caller that counts the finished text anyway, as assembly does with its whole prompt,
    passes ``exact_check=False``: ``tokens`` is the price, which equals the exact count
    but for those rare joins.

    >>> from assembler.tokens import get_tokenizer
    >>> tokenizer = get_tokenizer()
    >>> messages = [HistoryMessage(1, "user", "Hello."), HistoryMessage(2, "assistant", "Hi!")]
    >>> fit = fit_history(messages=messages, summary=None, budget=50, tokenizer=tokenizer)
    >>> print(fit.text)
    User: Hello.
    <BLANKLINE>
    Assistant: Hi!
    >>> fit.mode, fit.tokens
    ('full', 8)
    >>> long = HistoryMessage(3, "user", "Tell me about the old wars of the north. Start "
    ...                       "with the first one.")
    >>> small = fit_history(messages=[long], summary=None, budget=14, tokenizer=tokenizer)
    >>> small.text
    'User: Tell me about the old wars of the north.'
    >>> small.trimmed
    HistoryTrim(position=3, tokens_before=18, tokens_after=12)
    """
    if budget < 0:
        raise ValueError(f"budget must be >= 0, got {budget}")
    _check_order(messages)
    covered = -math.inf if summary is None else summary.covers_through
    skipped = [message for message in messages if message.position <= covered]
    visible = messages[len(skipped) :]

    # Priced first; should the exact count be over, one step at a time, each checked
    # exactly: one older message fewer, then no summary, then a tighter budget. (The price
    # can fall short of the count where a long run of punctuation or whitespace meets a
    # join, see the module's documentation: a caller that reports the count or must keep
    # the budget, as the history API does, has the block counted.)
    target, older_cap, shown_summary = budget, None, summary
    while True:
        selection = _select(visible, shown_summary, max(target, 0), tokenizer, older_cap)
        parts = selection.all_parts()
        text = PART_SEPARATOR.join(part.text for part in parts)
        if not exact_check:
            tokens = selection.tokens
            if tokens is None:
                tokens = _priced_total(parts, tokenizer)
            break
        tokens = tokenizer.count(text)
        if tokens <= budget or target < 0:
            break
        older_cap = selection.start - selection.first
        if older_cap:
            older_cap -= 1
        elif selection.summary is not None:
            shown_summary = None
        else:
            target -= tokens - budget

    shown = visible[selection.first : selection.last]
    summary_used = selection.summary is not None
    omitted = [
        message.position for message in [*visible[: selection.first], *visible[selection.last :]]
    ]
    if not summary_used:
        omitted = [message.position for message in skipped] + omitted
    mode: HistoryMode
    if summary_used:
        mode = "summary_and_recent"
    elif summary is None and not omitted and selection.trimmed is None:
        mode = "full"
    else:
        mode = "recent_only"
    return HistoryFit(
        mode=mode,
        text=text,
        tokens=tokens,
        positions=tuple(message.position for message in shown),
        summary_used=summary_used,
        covers_through=summary.covers_through if summary is not None and summary_used else None,
        omitted=tuple(sorted(omitted)),
        trimmed=selection.trimmed,
    )


def fitted_messages(
    fit: HistoryFit, messages: Sequence[HistoryMessage], summary: SummaryText | None
) -> list[tuple[Role, str]]:
    """What ``fit`` shows, as chat messages (role, content), oldest first, for a caller
    that sends the history to a model as messages rather than as a block of text: the
    summary shown (rendered as in the block) as a ``system`` message, then each message
    shown in its own role, the one cut short as cut. ``messages`` and ``summary`` are
    those ``fit`` was made from.

    >>> from assembler.tokens import get_tokenizer
    >>> messages = [HistoryMessage(1, "user", "Open the gate."),
    ...             HistoryMessage(2, "assistant", "It creaks open.")]
    >>> summary = SummaryText("Ann came.", 0)
    >>> fit = fit_history(messages=messages, summary=summary, budget=100,
    ...                   tokenizer=get_tokenizer())
    >>> for role, content in fitted_messages(fit, messages, summary):
    ...     print(f"{role}: {content!r}")
    system: 'Summary of earlier conversation:\\nAnn came.'
    user: 'Open the gate.'
    assistant: 'It creaks open.'
    """
    positions = set(fit.positions)
    shown = [message for message in messages if message.position in positions]
    chat: list[tuple[Role, str]] = []
    if fit.summary_used and summary is not None:
        chat.append(("system", render_summary(summary)))
    chat += [(message.role, message.content) for message in shown]
    if fit.trimmed is not None and shown:
        # The part cut short is the block's last: what follows the parts before it.
        last = shown[-1]
        before = [render_summary(summary)] if fit.summary_used and summary is not None else []
        before += [render_message(message) for message in shown[:-1]]
        start = len(PART_SEPARATOR.join(before)) + (len(PART_SEPARATOR) if before else 0)
        label = ROLE_LABELS[last.role] + ":" + _LABEL_SEPARATOR
        chat[-1] = (last.role, fit.text[start + len(label) :])
    return chat


def needs_summary(
    *,
    unsummarized_tokens: int,
    budget: int,
    threshold: float = DEFAULT_SUMMARY_THRESHOLD,
    keep_recent_tokens: int = 0,
) -> bool:
    """Whether history not yet summarized has passed ``threshold`` of the history budget,
    and ``keep_recent_tokens`` too: :func:`plan_summary` keeps that much verbatim, so under
    it every message is recent and a summary would find nothing to summarize.

    ``unsummarized_tokens`` is the sum of the token counts of the messages after the
    newest summary's ``covers_through`` (all messages when there is no summary).

    >>> needs_summary(unsummarized_tokens=800, budget=1000)
    False
    >>> needs_summary(unsummarized_tokens=801, budget=1000)
    True
    >>> needs_summary(unsummarized_tokens=600, budget=1000, threshold=0.5)
    True
    >>> needs_summary(unsummarized_tokens=400, budget=1000, threshold=0.3, keep_recent_tokens=500)
    False
    """
    if budget <= 0:
        raise ValueError(f"budget must be > 0, got {budget}")
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    if unsummarized_tokens < 0:
        raise ValueError(f"unsummarized_tokens must be >= 0, got {unsummarized_tokens}")
    return unsummarized_tokens > max(budget * threshold, keep_recent_tokens)


def summary_targets(
    history_budget: int, max_input_tokens: int = DEFAULT_MAX_INPUT_TOKENS
) -> tuple[int, int]:
    """(tokens kept verbatim, summary target) for a conversation's history budget.

    The messages kept after a summary take half of the budget and the summary a quarter,
    leaving a quarter to grow into before the next summary is due. The target is also at
    most a quarter of what one summarization reads (``max_input_tokens``), as
    :func:`plan_summary` requires, and at least one token.

    >>> summary_targets(2000)
    (1000, 500)
    >>> summary_targets(200_000, max_input_tokens=16000)
    (100000, 4000)
    >>> summary_targets(3)
    (1, 1)
    """
    if history_budget <= 0:
        raise ValueError(f"history_budget must be > 0, got {history_budget}")
    target = max(1, min(history_budget // 4, max_input_tokens // 4))
    return history_budget // 2, target


# Below this, one summarization could not read a summary and a message beside it.
MIN_MAX_INPUT_TOKENS = 64


@dataclass(frozen=True, slots=True)
class SummaryPlan:
    """One summarization to run: what it reads and what the summary it makes will cover.

    - ``previous``: the summary it builds on, as read (its text cut short when
      ``previous_cut``), or None.
    - ``messages``: the messages it reads, oldest first, as read (the text of the one at
      position ``message_cut`` cut short, when not None).
    - ``covers_through``: the new summary covers every message up to this position (the
      previous summary's messages included).
    - ``target_tokens``: the size the summary should not exceed.
    - ``text``: what the summarizer reads, rendered like the history block (see the
      module's documentation); ``input_tokens``: its exact token count, at most the
      ``max_input_tokens`` planned with.
    - ``complete``: False when this reads only a bounded prefix of what is pending: once
      its summary is stored, plan again.
    """

    previous: SummaryText | None
    messages: tuple[HistoryMessage, ...]
    covers_through: int
    target_tokens: int
    text: str
    input_tokens: int
    complete: bool
    previous_cut: bool
    message_cut: int | None


def plan_summary(
    *,
    messages: Sequence[HistoryMessage],
    previous: SummaryText | None,
    keep_recent_tokens: int,
    target_tokens: int,
    tokenizer: Tokenizer,
    max_input_tokens: int = DEFAULT_MAX_INPUT_TOKENS,
) -> SummaryPlan | None:
    """The next summarization for ``messages`` (oldest first), or None if none is due.

    The messages after ``previous`` (all when None) are pending. The recent ones stay
    verbatim: the newest messages whose parts add up to at most ``keep_recent_tokens``,
    and always the newest user message and everything after it (history fitting always
    shows them, and never shows a message a summary covers). The older pending messages
    are summarized together with ``previous``: a summary is made from the previous summary
    plus the messages after it, so none reads the whole conversation. None when no pending
    message is older than the recent ones.

    One summarization never reads more than ``max_input_tokens`` (exact count of
    :attr:`SummaryPlan.text`):

    - ``previous`` longer than half of that (only a summary made under other settings can
      be) is cut short to half;
    - when the previous summary and every older pending message are too much, the plan
      reads the previous summary and the longest run of the oldest pending messages that
      fits, and says it is not ``complete``;
    - when not even the oldest pending message fits beside the previous summary, the plan
      reads it cut short (``message_cut``); the summary still covers the whole message.

    How it converges: every plan covers at least one more message, and the summary it
    makes is held to ``target_tokens`` (see :mod:`assembler.summarize`), at most a quarter
    of ``max_input_tokens``; so the next plan again reads a short summary plus new
    messages. A backlog of ``n`` messages is summarized in at most ``n`` plans, usually in
    about ``backlog_tokens / (max_input_tokens - target_tokens)``.

    >>> from assembler.tokens import get_tokenizer
    >>> tokenizer = get_tokenizer()
    >>> messages = [HistoryMessage(position, role, text) for position, role, text in [
    ...     (1, "user", "My name is Ann."), (2, "assistant", "Welcome, Ann."),
    ...     (3, "user", "Open the gate."), (4, "assistant", "It is open.")]]
    >>> plan = plan_summary(messages=messages, previous=None, keep_recent_tokens=0,
    ...                     target_tokens=100, tokenizer=tokenizer)
    >>> print(plan.text)
    User: My name is Ann.
    <BLANKLINE>
    Assistant: Welcome, Ann.
    >>> plan.covers_through, plan.input_tokens, plan.complete
    (2, 13, True)
    """
    if keep_recent_tokens < 0:
        raise ValueError(f"keep_recent_tokens must be >= 0, got {keep_recent_tokens}")
    if max_input_tokens < MIN_MAX_INPUT_TOKENS:
        raise ValueError(
            f"max_input_tokens must be >= {MIN_MAX_INPUT_TOKENS}, got {max_input_tokens}"
        )
    if not 0 < target_tokens <= max_input_tokens // 4:
        raise ValueError(
            "target_tokens must be > 0 and at most a quarter of max_input_tokens "
            f"({max_input_tokens // 4}), got {target_tokens}"
        )
    _check_order(messages)
    covered = -math.inf if previous is None else previous.covers_through
    pending = [message for message in messages if message.position > covered]

    keep_from = len(pending)
    kept = 0
    while keep_from > 0:
        tokens = _message_part(pending[keep_from - 1], tokenizer).tokens
        if kept + tokens > keep_recent_tokens:
            break
        kept += tokens
        keep_from -= 1
    anchor = _newest_user_index(pending)
    if anchor is not None:
        keep_from = min(keep_from, anchor)
    candidates = pending[:keep_from]
    if not candidates:
        return None

    previous_cut = False
    if previous is not None:
        half = max_input_tokens // 2
        if _summary_part(previous, tokenizer).tokens > half:
            previous = _cut_summary(previous, half, tokenizer)
            previous_cut = True

    limit = max_input_tokens
    while True:
        read, cut = _read_prefix(previous, candidates, limit, tokenizer)
        parts = [_summary_part(previous, tokenizer)] if previous is not None else []
        parts += [_message_part(message, tokenizer) for message in read]
        text = PART_SEPARATOR.join(part.text for part in parts)
        tokens = tokenizer.count(text)
        if tokens <= max_input_tokens:
            break
        limit -= tokens - max_input_tokens
    return SummaryPlan(
        previous=previous,
        messages=tuple(read),
        covers_through=read[-1].position,
        target_tokens=target_tokens,
        text=text,
        input_tokens=tokens,
        complete=len(read) == len(candidates),
        previous_cut=previous_cut,
        message_cut=cut,
    )


def _cut_summary(summary: SummaryText, limit: int, tokenizer: Tokenizer) -> SummaryText:
    """``summary`` with its text cut so that its part takes at most ``limit`` tokens."""
    allowed = limit - tokenizer.count_cached(SUMMARY_HEADING) - 1
    while True:
        content = tokenizer.truncate(summary.content, allowed)
        cut = SummaryText(content, summary.covers_through)
        if _summary_part(cut, tokenizer).tokens <= limit or allowed <= 0:
            return cut
        allowed -= 1


def _read_prefix(
    previous: SummaryText | None,
    candidates: Sequence[HistoryMessage],
    limit: int,
    tokenizer: Tokenizer,
) -> tuple[list[HistoryMessage], int | None]:
    """The longest run of the oldest ``candidates`` that fits ``limit`` beside ``previous``
    (priced from parts), or the oldest alone cut short; and the position of a cut."""
    last = _summary_part(previous, tokenizer) if previous is not None else None
    total = 0 if last is None else last.tokens
    read: list[HistoryMessage] = []
    for message in candidates:
        part = _message_part(message, tokenizer)
        added = part.tokens + (0 if last is None else _join(tokenizer, last, part))
        if total + added > limit:
            break
        read.append(message)
        total += added
        last = part
    if read:
        return read, None
    first = candidates[0]
    join = 0 if last is None else _join(tokenizer, last, _message_part(first, tokenizer))
    cut = _trimmed_part(first, limit - total - join, tokenizer)
    label = len(render_message(replace(first, content="")))
    content = "" if cut is None else cut[0].text[label:]
    return [replace(first, content=content, token_count=None)], first.position
