"""Summarizers: what turns a :class:`~assembler.history.SummaryPlan` into summary text.

Two implementations of the :class:`Summarizer` protocol:

- :class:`ExtractiveSummarizer` needs no network and always gives the same summary for
  the same plan: it keeps sentences from across the whole range, those that carry
  decisions, errors, names, numbers and the conversation's recurring words, and says
  which messages it drew them from;
- :class:`OpenAISummarizer` asks an OpenAI-compatible chat-completions endpoint, through
  the official ``openai`` package (imported only when one is made: it is slow to import
  and assembly never needs it).

Every summary either passes :func:`validate_summary` or is refused with
:class:`SummaryRejected`; an endpoint that cannot answer (for now) raises
:class:`SummarizerUnavailable`, one that refuses the request :class:`SummarizerRefused`.
All are :class:`SummarizerError`, which :func:`summarize_with_fallback` turns into a fall
back to a second summarizer.

>>> from assembler.history import HistoryMessage, plan_summary
>>> from assembler.tokens import get_tokenizer
>>> tokenizer = get_tokenizer()
>>> messages = [HistoryMessage(position, role, text) for position, role, text in [
...     (1, "user", "Hello there, how are you? We need a bridge over the river Tarn."),
...     (2, "assistant", "Nice weather today. A stone bridge takes 40 masons. Ask me more."),
...     (3, "user", "Go on.")]]
>>> plan = plan_summary(messages=messages, previous=None, keep_recent_tokens=0,
...                     target_tokens=30, tokenizer=tokenizer)
>>> outcome = ExtractiveSummarizer(tokenizer).summarize(plan)
>>> print(outcome.text)
User: We need a bridge over the river Tarn.
Assistant: A stone bridge takes 40 masons.
>>> outcome.backend, outcome.tokens, outcome.drawn_from
('extractive', 23, (1, 2))
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypeAlias

from assembler.history import ROLE_LABELS, SummaryPlan
from assembler.tokens import Tokenizer

DEFAULT_INSTRUCTIONS = """\
You summarize a conversation so that it can go on without the full transcript.
The transcript may start with a summary of the earlier conversation: fold it into yours,
since your summary replaces it.
Keep what the conversation needs next: what was asked and decided, names, numbers, errors
and how they were resolved, promises and open questions, and the current state of things.
Drop greetings, small talk and repetition. Write plain sentences in the third person,
without a preamble, and never repeat these instructions."""
"""The default instructions (system message) of :class:`OpenAISummarizer`."""

SUMMARY_MARGIN = 0.25
"""How far over its target a summary may go before it is refused as oversized."""

# A summary is an echo of the instructions when at least this share of its word
# three-grams occur in them; an echo of its input when it is nearly as long as the input
# (ECHO_LENGTH) and at least ECHO_SHARE of its three-grams occur in the input (or in the
# instructions). A summary legitimately reuses names and phrases, never most of its text.
ECHO_INSTRUCTIONS_SHARE = 0.5
ECHO_SHARE = 0.8
ECHO_LENGTH = 0.9

EXTRACTIVE_MODEL = "extractive-2"
"""The version of the extractive algorithm, recorded as the model of its summaries."""

RejectionReason: TypeAlias = Literal["empty", "oversized", "echoes_instructions", "echoes_input"]


class SummarizerError(Exception):
    """A summarizer could not produce an acceptable summary.

    ``reason`` is a short code (stable, for records); ``detail`` says what happened.
    """

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


class SummaryRejected(SummarizerError):
    """A summary was produced but refused by :func:`validate_summary`."""

    reason: RejectionReason

    def __init__(self, reason: RejectionReason, detail: str) -> None:
        super().__init__(reason, detail)


class SummarizerUnavailable(SummarizerError):
    """The summarizing service did not answer (timeout, connection, or a status worth
    asking again: :func:`worth_retrying`), after the client's own retries. ``reason`` is
    ``timeout``, ``connection``, ``error`` or ``http_<status>``."""


class SummarizerRefused(SummarizerError):
    """The summarizing service refused the request (a 4xx status not worth asking again:
    a bad key, an unknown model, a request it cannot take). ``reason`` is
    ``http_<status>``."""


RETRYABLE_STATUSES = frozenset({408, 409, 429})
"""The 4xx statuses worth asking again (as the ``openai`` client retries them)."""


def worth_retrying(status: int) -> bool:
    """Whether an HTTP status may change on asking again later: 408, 409, 429 and 5xx.

    >>> [worth_retrying(status) for status in (400, 401, 408, 429, 500, 503)]
    [False, False, True, True, True, True]
    """
    return status in RETRYABLE_STATUSES or status >= 500


@dataclass(frozen=True, slots=True)
class SummaryOutcome:
    """A summary that passed validation: its text and exact token count, and what made
    it (``backend``: ``extractive`` or ``openai``; ``model``: the model that answered).

    ``drawn_from``: the positions of the messages the summary's sentences were taken
    from, ascending (lines kept from the previous summary are not listed); None when the
    summarizer cannot say (an endpoint writes its own sentences).
    """

    text: str
    tokens: int
    backend: str
    model: str
    drawn_from: tuple[int, ...] | None = None


class Summarizer(Protocol):
    """Makes the summary a plan asks for, or raises :class:`SummarizerError`."""

    @property
    def backend(self) -> str:
        """A short name for records (``extractive``, ``openai``)."""
        ...

    def summarize(self, plan: SummaryPlan) -> SummaryOutcome:
        """The summary of ``plan.text``, held to ``plan.target_tokens``."""
        ...


def summary_limit(target_tokens: int, margin: float = SUMMARY_MARGIN) -> int:
    """The most tokens a summary with target ``target_tokens`` may take.

    >>> summary_limit(1000)
    1250
    """
    return math.floor(target_tokens * (1 + margin))


def validate_summary(
    text: str,
    *,
    plan: SummaryPlan,
    tokenizer: Tokenizer,
    instructions: str = "",
    margin: float = SUMMARY_MARGIN,
) -> int:
    """The token count of summary ``text`` for ``plan``, or :class:`SummaryRejected`.

    Refused as ``empty`` when blank; ``oversized`` when over :func:`summary_limit` of the
    plan's target; ``echoes_instructions`` when at least half of its word three-grams come
    from ``instructions`` (what the summarizer was told); ``echoes_input`` when it is at
    least 90% as long as the plan's input and at least 80% of its three-grams come from
    that input or the instructions (a copy, not a summary).

    >>> from assembler.history import HistoryMessage, plan_summary
    >>> from assembler.tokens import get_tokenizer
    >>> tokenizer = get_tokenizer()
    >>> messages = [HistoryMessage(1, "user", "Build the bridge with 40 masons, not 30."),
    ...             HistoryMessage(2, "user", "Go on.")]
    >>> plan = plan_summary(messages=messages, previous=None, keep_recent_tokens=0,
    ...                     target_tokens=20, tokenizer=tokenizer)
    >>> validate_summary("Ann wants 40 masons.", plan=plan, tokenizer=tokenizer)
    7
    >>> validate_summary(plan.text, plan=plan, tokenizer=tokenizer)
    Traceback (most recent call last):
    ...
    assembler.summarize.SummaryRejected: echoes_input: 15 of 15 tokens and 100% of its \
phrases are copied from the input
    """
    if not text.strip():
        raise SummaryRejected("empty", "the summary is empty")
    tokens = tokenizer.count(text)
    limit = summary_limit(plan.target_tokens, margin)
    if tokens > limit:
        raise SummaryRejected(
            "oversized",
            f"{tokens} tokens, over the target of {plan.target_tokens} by more than "
            f"{margin:.0%} ({limit})",
        )
    phrases = _phrases(text)
    if instructions and phrases:
        share = len(phrases & _phrases(instructions)) / len(phrases)
        if share >= ECHO_INSTRUCTIONS_SHARE:
            raise SummaryRejected(
                "echoes_instructions",
                f"{share:.0%} of its phrases are copied from the instructions",
            )
    if phrases and tokens >= ECHO_LENGTH * plan.input_tokens:
        share = len(phrases & (_phrases(plan.text) | _phrases(instructions))) / len(phrases)
        if share >= ECHO_SHARE:
            raise SummaryRejected(
                "echoes_input",
                f"{tokens} of {plan.input_tokens} tokens and {share:.0%} of its phrases are "
                "copied from the input",
            )
    return tokens


_WORD = re.compile(r"\w+")


def _phrases(text: str) -> set[tuple[str, ...]]:
    """The word three-grams of ``text`` (the whole text when shorter), case-folded."""
    words = _WORD.findall(text.casefold())
    if len(words) < 3:
        return {tuple(words)} if words else set()
    return {tuple(words[index : index + 3]) for index in range(len(words) - 2)}


# Extractive summarization

# Sentences end at . ! ? … (then whitespace), at CJK full stops, and at line breaks.
_SENTENCE_END = re.compile(r"(?<=[.!?\u2026])\s+|(?<=[\u3002\uff01\uff1f])|\n+")
_DECISION = re.compile(
    r"\b(decid\w*|agree\w*|chose|choose|chosen|will|won't|plan\w*|must|settled|confirm\w*|"
    r"approv\w*|accept\w*|reject\w*|let's|going to|instead|need\w*|should|promis\w*)\b",
    re.IGNORECASE,
)
_ERROR = re.compile(
    r"\b(error\w*|exception\w*|fail\w*|bug\w*|crash\w*|broke\w*|refus\w*|denied|invalid|"
    r"timeout|timed out|cannot|can't|unable|wrong|traceback|warning\w*)\b",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"\d")
# A capitalized word after the first (a name), or an identifier: snake_case, camelCase
# or dotted names, or text in backticks.
_NAME = re.compile(r"(?<=\s)[A-Z][\w'-]+|\b\w+_\w+\b|\b[a-z]+[A-Z]\w*\b|\b\w+\.\w+\b|`[^`]+`")

_LABEL = re.compile("^(?:" + "|".join(ROLE_LABELS.values()) + "): ")

SCORE_DECISION = 3
SCORE_ERROR = 3
SCORE_NUMBER = 2
SCORE_NAME = 2


def sentence_score(sentence: str) -> int:
    """How much a sentence carries: 3 for a decision (decide, agree, will, must, plan,
    should...), 3 for an error or refusal (error, failed, refused, cannot...), 2 for a
    number, 2 for a name (a capitalized word after the first, an identifier, backticks).

    >>> sentence_score("Nice weather today.")
    0
    >>> sentence_score("We decided to hire Orsolya for 300 silver.")
    7
    >>> sentence_score("The build failed with error E42.")
    7
    """
    score = 0
    if _DECISION.search(sentence):
        score += SCORE_DECISION
    if _ERROR.search(sentence):
        score += SCORE_ERROR
    if _NUMBER.search(sentence):
        score += SCORE_NUMBER
    if _NAME.search(sentence):
        score += SCORE_NAME
    return score


# Words too common to tell what a conversation is about.
_STOPWORDS = frozenset(
    word
    for line in (
        "about after again also always another because been before being between both",
        "could didn does doing done down each even every from have having here into just",
        "know like made make many more most much must need never only other over same",
        "should some such than that their them then there these they thing think this",
        "those though through very want well were what when where which while will with",
        "would your yours yeah okay sure thanks thank please hello",
    )
    for word in line.split()
)
# A word is a topic of the conversation when it recurs in this many messages or more.
TOPIC_MESSAGES = 2
SCORE_TOPIC = 1
"""Per recurring word a sentence holds, up to :data:`MAX_TOPIC_SCORE`."""
MAX_TOPIC_SCORE = 2


def _content_words(text: str) -> frozenset[str]:
    """The words of ``text`` that say what it is about: numbers, words in other scripts
    than Latin letters, and words of four letters or more that are not among the most
    common."""
    words = _WORD.findall(text.casefold())
    return frozenset(
        word
        for word in words
        if not word.isascii()
        or any(c.isdigit() for c in word)
        or (len(word) >= 4 and word not in _STOPWORDS)
    )


@dataclass(frozen=True, slots=True)
class _Sentence:
    index: int  # in reading order
    line: str  # as written in the summary
    score: int  # what it carries: cue words and the conversation's topics
    tokens: int
    source: int | None  # the message's position; None for a previous summary's line
    words: frozenset[str]


def _spread(count: int) -> list[int]:
    """``0 .. count - 1`` in an order that covers the range early: the ends, then the
    middle, then the quarters, and so on.

    >>> _spread(5)
    [0, 4, 2, 1, 3]
    >>> _spread(1)
    [0]
    """
    if count <= 2:
        return list(range(count))
    order = [0, count - 1]
    seen = set(order)
    denominator = 2
    while len(order) < count:
        for numerator in range(1, denominator, 2):
            index = round(numerator * (count - 1) / denominator)
            if index not in seen:
                seen.add(index)
                order.append(index)
        denominator *= 2
    return order


class ExtractiveSummarizer:
    """Keeps telling sentences from across the whole range, within the plan's target; no
    network.

    The input is split into sentences (at ``. ! ? …`` followed by space, CJK full stops
    and line breaks): each line of the previous summary, and each sentence of a message,
    written ``Role: sentence``; repeated sentences count once. A sentence is worth
    keeping for what it carries (:func:`sentence_score`), plus a point per topic of the
    conversation it mentions (a word recurring in several messages; at most two);
    sentences worth nothing are taken only when none is worth anything.

    So that the summary stands for the whole range, not its most eventful stretch, the
    messages are cut into as many consecutive stretches as the summary could hold
    sentences, and the sentences are chosen in rounds: each round takes one from the
    previous summary (which stands for everything before), then one from each stretch,
    visiting the stretches ends first, then the middle, then between (so that a budget
    that runs out mid-round still leaves the summary spread out). Within a stretch the
    sentence taken is the best by its worth times its novelty (the share of its words the
    summary does not hold yet, so a repetition in other words loses to a new fact; one
    whose words are all held already adds nothing and is left), newer first among equals,
    among those that still fit. Rounds go on until nothing more fits. The kept sentences
    are written one per line in their original order, and ``drawn_from`` lists the
    messages they come from.

    The limit is the plan's target, and at most ``max_ratio`` (default three quarters) of
    the input's tokens: a summary that keeps everything is a copy. When no whole sentence
    fits, the best one is cut short. The same plan always gives the same summary.
    """

    backend = "extractive"

    def __init__(self, tokenizer: Tokenizer, *, max_ratio: float = 0.75) -> None:
        if not 0 < max_ratio < ECHO_LENGTH:
            raise ValueError(f"max_ratio must be in (0, {ECHO_LENGTH}), got {max_ratio}")
        self.tokenizer = tokenizer
        self.max_ratio = max_ratio

    def summarize(self, plan: SummaryPlan) -> SummaryOutcome:
        """The extractive summary of ``plan`` (see the class)."""
        limit = min(plan.target_tokens, math.floor(plan.input_tokens * self.max_ratio))
        sentences = self._sentences(plan)
        pool = [sentence for sentence in sentences if sentence.score > 0] or sentences
        chosen = self._choose(pool, plan, limit)
        text, kept = self._write(chosen, pool, limit)
        tokens = validate_summary(text, plan=plan, tokenizer=self.tokenizer)
        drawn_from = tuple(sorted({s.source for s in kept if s.source is not None}))
        return SummaryOutcome(text, tokens, self.backend, EXTRACTIVE_MODEL, drawn_from)

    def _sentences(self, plan: SummaryPlan) -> list[_Sentence]:
        # (text scored, line written, source): a message's sentences are written with its
        # role; the previous summary's lines as they are, scored without a role label.
        units: list[tuple[str, str, int | None]] = []
        if plan.previous is not None:
            units += [(_LABEL.sub("", line), line, None) for line in _split(plan.previous.content)]
        for message in plan.messages:
            label = ROLE_LABELS[message.role] + ": "
            units += [
                (sentence, label + sentence, message.position)
                for sentence in _split(message.content)
            ]
        # The conversation's topics: words that recur in several messages.
        sources: dict[str, set[int | None]] = {}
        for text, _, source in units:
            for word in _content_words(text):
                sources.setdefault(word, set()).add(source)
        topics = {word for word, where in sources.items() if len(where) >= TOPIC_MESSAGES}
        seen: set[str] = set()
        sentences: list[_Sentence] = []
        for text, line, source in units:
            key = " ".join(line.casefold().split())
            if key in seen:
                continue
            seen.add(key)
            words = _content_words(text)
            topical = min(MAX_TOPIC_SCORE, SCORE_TOPIC * len(words & topics))
            score = sentence_score(text) + topical
            count = self.tokenizer.count(line)
            sentences.append(_Sentence(len(sentences), line, score, count, source, words))
        return sentences

    def _choose(self, pool: Sequence[_Sentence], plan: SummaryPlan, limit: int) -> list[_Sentence]:
        """The sentences to keep, in the order chosen (see the class)."""
        if not pool or limit <= 0:
            return []
        positions = [message.position for message in plan.messages]
        typical = sorted(sentence.tokens for sentence in pool)[len(pool) // 2]
        stretches = max(1, min(len(positions), limit // max(1, typical + 1)))
        groups: list[list[_Sentence]] = [[] for _ in range(stretches + 1)]  # 0: previous
        where = {position: index for index, position in enumerate(positions)}
        for sentence in pool:
            group = 0
            if sentence.source is not None:
                group = 1 + where[sentence.source] * stretches // len(positions)
            groups[group].append(sentence)
        order = [0, *(1 + index for index in _spread(stretches))]
        chosen: list[_Sentence] = []
        held: set[str] = set()
        total = 0
        while True:
            added = False
            for group in order:
                room = limit - total - (1 if chosen else 0)  # a line break between lines
                fitting = [
                    s
                    for s in groups[group]
                    if s.tokens <= room and not (s.words and s.words <= held)
                ]
                if not fitting:
                    continue
                best = max(fitting, key=lambda s: (self._worth(s, held), s.index))
                groups[group].remove(best)
                chosen.append(best)
                held |= best.words
                total += best.tokens + (1 if len(chosen) > 1 else 0)
                added = True
            if not added:
                return chosen

    @staticmethod
    def _worth(sentence: _Sentence, held: set[str]) -> float:
        """What ``sentence`` carries, in the share that is new beside ``held``."""
        if not sentence.words:
            return float(sentence.score)
        return sentence.score * len(sentence.words - held) / len(sentence.words)

    def _write(
        self, chosen: list[_Sentence], pool: Sequence[_Sentence], limit: int
    ) -> tuple[str, list[_Sentence]]:
        """The chosen sentences in their original order, one per line, and those kept:
        dropped last chosen first should the joined text count over ``limit``."""
        chosen = list(chosen)
        while chosen:
            kept = sorted(chosen, key=lambda s: s.index)
            text = "\n".join(s.line for s in kept)
            if self.tokenizer.count(text) <= limit:
                return text, kept
            chosen.pop()
        if not pool or limit <= 0:
            return "", []
        best = max(pool, key=lambda s: (s.score, s.index))
        return self.tokenizer.truncate(best.line, limit), [best]


def _split(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCE_END.split(text) if part.strip()]


# OpenAI-compatible endpoint

# Tokenizers differ between models: the reply may run this much over the summary limit
# in the model's tokens before it is cut off (it is then still checked in ours).
_REPLY_SLACK = 0.2


class OpenAISummarizer:
    """Summaries from an OpenAI-compatible chat-completions endpoint.

    Built on ``openai.OpenAI(base_url=..., api_key=..., timeout=..., max_retries=...)``:
    the client retries connection errors, timeouts, 408, 409, 429 and 5xx answers with
    exponential backoff, honouring ``Retry-After``; ``max_retries`` bounds how many times.
    The request is a system message (``instructions``, then a line asking for at most the
    plan's target in tokens) and a user message (the plan's text), with ``max_tokens`` a
    little above the summary limit. A reply cut off at that limit is refused as
    ``oversized``; every reply is checked by :func:`validate_summary`, the instructions
    sent included. When the endpoint does not answer, or answers with a status worth
    asking again (:func:`worth_retrying`), :class:`SummarizerUnavailable`; any other 4xx
    is :class:`SummarizerRefused`.

    Base URL, model, key, timeout, retries and instructions come from the caller (the
    Django side reads them from its settings). The instructions are sent on top of the
    plan's text, which alone is bounded by the plan's ``max_input_tokens``.
    """

    backend = "openai"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str,
        tokenizer: Tokenizer,
        timeout: float = 30.0,
        max_retries: int = 2,
        instructions: str = DEFAULT_INSTRUCTIONS,
    ) -> None:
        import openai  # slow to import, and only summarizing needs it

        if not instructions.strip():
            raise ValueError("instructions must not be blank")
        self.model = model
        self.tokenizer = tokenizer
        self.instructions = instructions
        self.timeout = timeout
        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries
        )

    def close(self) -> None:
        """Close the client's connections."""
        self._client.close()

    def system_message(self, plan: SummaryPlan) -> str:
        """The system message sent for ``plan``."""
        return (
            f"{self.instructions.rstrip()}\n\nKeep the summary under {plan.target_tokens} tokens."
        )

    def summarize(self, plan: SummaryPlan) -> SummaryOutcome:
        """The endpoint's summary of ``plan`` (see the class)."""
        import openai

        system = self.system_message(plan)
        limit = summary_limit(plan.target_tokens)
        try:
            response = self._client.chat.completions.create(
                model=self.model,
                messages=[
                    {"role": "system", "content": system},
                    {"role": "user", "content": plan.text},
                ],
                max_tokens=math.ceil(limit * (1 + _REPLY_SLACK)),
            )
        except openai.APITimeoutError as error:
            raise SummarizerUnavailable("timeout", f"no answer within {self.timeout}s") from error
        except openai.APIConnectionError as error:
            raise SummarizerUnavailable("connection", str(error)) from error
        except openai.APIStatusError as error:
            if not worth_retrying(error.status_code):
                raise SummarizerRefused(f"http_{error.status_code}", error.message) from error
            raise SummarizerUnavailable(f"http_{error.status_code}", error.message) from error
        except openai.OpenAIError as error:
            raise SummarizerUnavailable("error", str(error)) from error
        if not response.choices:
            raise SummaryRejected("empty", "the answer has no choices")
        choice = response.choices[0]
        if choice.finish_reason == "length":
            raise SummaryRejected("oversized", "the answer was cut off at the token limit")
        text = (choice.message.content or "").strip()
        tokens = validate_summary(text, plan=plan, tokenizer=self.tokenizer, instructions=system)
        return SummaryOutcome(text, tokens, self.backend, response.model or self.model)


# Fallback


@dataclass(frozen=True, slots=True)
class SummaryResult:
    """A summary, and whether the fallback made it and why (the primary's error, as
    ``<reason>: <detail>``; None when the primary made it)."""

    outcome: SummaryOutcome
    fallback_used: bool
    fallback_reason: str | None


def summarize_with_fallback(
    primary: Summarizer,
    fallback: Summarizer,
    plan: SummaryPlan,
    *,
    retry_unavailable: bool = False,
) -> SummaryResult:
    """``primary``'s summary of ``plan``, or ``fallback``'s when ``primary`` fails.

    Only :class:`SummarizerError` falls back (anything else is a bug and propagates); an
    error of the fallback propagates too. With ``retry_unavailable``, an unavailable
    primary (:class:`SummarizerUnavailable`: timeout, connection, 408, 409, 429, 5xx)
    propagates instead, for the caller to try again later; a refused request
    (:class:`SummarizerRefused`: another 4xx) or summary (empty, oversized, an echo) still
    falls back at once, since asking again would not change it.

    >>> from assembler.history import HistoryMessage, plan_summary
    >>> from assembler.tokens import get_tokenizer
    >>> tokenizer = get_tokenizer()
    >>> class Down:
    ...     backend = "down"
    ...     def summarize(self, plan):
    ...         raise SummarizerUnavailable("timeout", "no answer within 1.0s")
    >>> messages = [HistoryMessage(1, "user", "Hire 40 masons."), HistoryMessage(2, "user", "Ok?")]
    >>> plan = plan_summary(messages=messages, previous=None, keep_recent_tokens=0,
    ...                     target_tokens=20, tokenizer=tokenizer)
    >>> result = summarize_with_fallback(Down(), ExtractiveSummarizer(tokenizer), plan)
    >>> result.outcome.backend, result.fallback_used, result.fallback_reason
    ('extractive', True, 'down: timeout: no answer within 1.0s')
    """
    try:
        return SummaryResult(primary.summarize(plan), fallback_used=False, fallback_reason=None)
    except SummarizerError as failure:
        if retry_unavailable and isinstance(failure, SummarizerUnavailable):
            raise
        error = failure
    outcome = fallback.summarize(plan)
    return SummaryResult(outcome, fallback_used=True, fallback_reason=f"{primary.backend}: {error}")
