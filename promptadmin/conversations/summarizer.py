"""Which summarizer makes a conversation's summaries, what it is told, and making a
claimed summary with it (plan, summarize, store), as the task's main step.

The summarizer is an OpenAI-compatible endpoint when ``SUMMARIZER_BASE_URL`` is set, told
the system text of a registered prompt (``SUMMARIZER_PROMPT``) or the built-in
instructions, and the assembler's extractive summarizer otherwise and as the fallback.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.conf import settings

from assembler.history import SummaryPlan, plan_summary
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
from promptadmin.conversations import queue
from promptadmin.conversations.models import Conversation, Summary
from promptadmin.conversations.selectors import history_messages, newest_summary, summary_text
from promptadmin.core.tokens import tokenizer
from promptadmin.prompts import selectors as prompts

logger = logging.getLogger(__name__)


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


def plan_next(
    conversation: Conversation, through: int
) -> tuple[SummaryPlan | None, Summary | None]:
    """The next summarization of ``conversation``'s messages up to ``through`` (None when
    none is old enough), and the newest done summary it builds on."""
    previous = newest_summary(conversation)
    after = previous.covers_through if previous is not None else 0
    assert after is not None
    keep_recent, target = queue.targets(conversation)
    plan = plan_summary(
        messages=history_messages(conversation.pk, after=after, through=through),
        previous=summary_text(previous) if previous is not None else None,
        keep_recent_tokens=keep_recent,
        target_tokens=target,
        tokenizer=tokenizer(),
        max_input_tokens=settings.SUMMARIZER_MAX_INPUT_TOKENS,
    )
    return plan, previous


class RetryLater(Exception):
    """The summarizer is unavailable; the task should retry (the summary is pending again)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


FALLBACK_NOTE = "fell back to the extractive summarizer after: "


@dataclass(frozen=True, slots=True)
class Made:
    """What :func:`summary_make` did (``done``, ``superseded`` when the claim was lost,
    ``nothing_to_summarize``), and the next summary asked for, whose task is to be sent."""

    outcome: str
    next_summary: int | None = None


def summary_make(*, claim: queue.Claim, allow_fallback: bool, retry_in: float = 0.0) -> Made:
    """Make the claimed summary: plan, summarize, store.

    When the endpoint is unavailable and ``allow_fallback`` is False, the summary goes
    back to ``pending`` (the error recorded, to be retried in ``retry_in`` seconds) and
    :class:`RetryLater` is raised; on the last attempt the extractive summarizer makes
    it, and ``error`` says why.
    """
    summary = Summary.objects.select_related("conversation").get(pk=claim.summary_id)
    plan, previous = plan_next(summary.conversation, summary.requested_through)
    if plan is None:
        return Made("nothing_to_summarize", queue.summary_discard(claim=claim))
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
        queue.summary_release(
            claim=claim, error=f"{primary.backend}: {unavailable}", retry_in=retry_in
        )
        raise RetryLater(str(unavailable)) from unavailable
    finally:
        close = getattr(primary, "close", None)
        if close is not None:
            close()
    outcome = result.outcome
    error = f"{FALLBACK_NOTE}{result.fallback_reason}" if result.fallback_used else ""
    # The prompt is recorded on a summary it helped make, not on the fallback's.
    told = instructions if instructions is not None and not result.fallback_used else None
    stored = queue.summary_complete(
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
        drawn_from=outcome.drawn_from,
    )
    return Made("done" if stored.stored else "superseded", stored.next_summary)
