"""Conversations, their messages (append-only) and the summaries of their older part.

The database keeps the guarantees that matter when several web processes and workers
work at once: a message position is unique per conversation; a conversation has at most
one summary pending or running (so a range is never summarized twice at once); and a
range, once summarized, has one summary (unique ``covers_through``).
"""

from __future__ import annotations

import re

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q

from assembler.history import ROLES
from assembler.request import (
    CONVERSATION_KEY_HELP,
    CONVERSATION_KEY_PATTERN,
    MAX_BUDGET,
    MAX_CONVERSATION_KEY,
)
from promptadmin.core.storedjson import validate_stored_json

KEY_MAX_LENGTH = MAX_CONVERSATION_KEY
key_validator = RegexValidator(CONVERSATION_KEY_PATTERN, CONVERSATION_KEY_HELP, code="invalid_key")
_KEY = re.compile(CONVERSATION_KEY_PATTERN)


def could_be_key(value: str) -> bool:
    """Whether a conversation could have ``value`` as its key. Reads check it first: a
    text PostgreSQL cannot store (with a NUL) fails the query instead of finding nothing."""
    return _KEY.match(value) is not None


DEFAULT_HISTORY_BUDGET = 2000
MAX_MESSAGE_CHARS = 100_000
"""The longest message, in characters."""
MAX_MESSAGES_PER_APPEND = 100


class Role(models.TextChoices):
    USER = "user", "User"
    ASSISTANT = "assistant", "Assistant"
    SYSTEM = "system", "System"


assert tuple(Role.values) == ROLES  # the assembler's roles, named once there


class Conversation(models.Model):
    key = models.CharField(max_length=KEY_MAX_LENGTH, unique=True, validators=[key_validator])
    metadata = models.JSONField(default=dict, blank=True, validators=[validate_stored_json])
    history_budget = models.PositiveIntegerField(
        default=DEFAULT_HISTORY_BUDGET,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_BUDGET)],
        help_text="Tokens the history block may take; summaries start at a share of it.",
    )
    # Kept by the services so an append needs no scan of the messages.
    last_position = models.PositiveIntegerField(default=0)
    summarized_through = models.PositiveIntegerField(default=0)
    unsummarized_tokens = models.PositiveBigIntegerField(default=0)
    summary_pending = models.BooleanField(default=False)
    # Set when a summary asked for found no message old enough to summarize: the newest
    # user message and everything after it are always kept verbatim, so until a user
    # message follows, more messages cannot change that (see ``_over_threshold`` in the
    # services). Cleared by a user message and by a summary made.
    nothing_to_summarize_through = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="The position of the newest message when a summary asked for found none "
        "old enough to summarize; none is asked for again until a user message follows.",
    )
    # The newest done summary (covering ``summarized_through``), read with the
    # conversation in one query on the hot path.
    current_summary = models.ForeignKey(
        "Summary", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Who started it: a person, or the API key named in ``created_via`` (then no user).
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_via = models.CharField(max_length=100, blank=True, help_text="The API key, if any.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(history_budget__gte=1) & Q(history_budget__lte=MAX_BUDGET),
                name="conversation_history_budget_range",
            )
        ]
        # The studio's list: the most recently active first, read in order.
        indexes = [models.Index(fields=["updated_at", "id"], name="conversation_by_update")]

    def __str__(self) -> str:
        return self.key

    def clean(self) -> None:
        if not isinstance(self.metadata, dict):
            raise ValidationError({"metadata": "Metadata must be a JSON object."})


class Message(models.Model):
    """One message; never changed or deleted by the application."""

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="messages"
    )
    position = models.PositiveIntegerField()
    role = models.CharField(max_length=16, choices=Role.choices)
    content = models.TextField()
    token_count = models.PositiveIntegerField()
    token_encoding = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    # Who appended it: a person, or the API key named in ``created_via`` (then no user).
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_via = models.CharField(max_length=100, blank=True, help_text="The API key, if any.")

    class Meta:
        ordering = ["conversation", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "position"], name="message_position_unique"
            ),
            models.CheckConstraint(condition=Q(role__in=ROLES), name="message_role_valid"),
        ]
        indexes = [
            # The newest user message before a position, found at once however long the
            # conversation (the history block always shows it: see the selectors).
            models.Index(
                fields=["conversation", "position"],
                condition=Q(role="user"),
                name="message_user_position",
            )
        ]

    def __str__(self) -> str:
        return f"{self.conversation_id}#{self.position} {self.role}"


class SummaryStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


ACTIVE_STATUSES = (SummaryStatus.PENDING, SummaryStatus.RUNNING)


class Summary(models.Model):
    """A summary of every message at or before ``covers_through``.

    A summary is asked for (``pending``, covering up to ``requested_through`` at most),
    claimed by one worker (``running``), then ``done`` (``covers_through`` set) or
    ``failed``. ``error`` records what went wrong, including a fall back to the extractive
    summarizer on a summary that is nevertheless done. One that finds no message old
    enough to summarize is deleted, its conversation noting it (nothing went wrong).
    """

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="summaries"
    )
    requested_through = models.PositiveIntegerField()
    covers_through = models.PositiveIntegerField(null=True, blank=True)
    builds_on = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    content = models.TextField(blank=True)
    # What the summarizer read short of the whole (SUMMARIZER_MAX_INPUT_TOKENS bounds one
    # summarization): a message longer than that is summarized from its beginning only,
    # and a previous summary made under a larger bound is cut to half of it.
    message_cut = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="The position of a message summarized from its beginning only.",
    )
    previous_cut = models.BooleanField(
        default=False, help_text="Whether the summary built on was read cut short."
    )
    # Which messages an extractive summary took its sentences from (null when the
    # summarizer cannot say: an endpoint writes its own).
    drawn_from = models.JSONField(
        null=True,
        blank=True,
        help_text="The positions of the messages the summary's sentences were taken from.",
    )
    token_count = models.PositiveIntegerField(null=True, blank=True)
    token_encoding = models.CharField(max_length=64, blank=True)
    backend = models.CharField(max_length=32, blank=True)
    model = models.CharField(max_length=200, blank=True)
    # The registered prompt (SUMMARIZER_PROMPT) whose version told the endpoint what to do;
    # empty and None when it was told the built-in instructions, or the extractive
    # summarizer made the summary.
    prompt_name = models.CharField(max_length=200, blank=True)
    prompt_version = models.PositiveIntegerField(null=True, blank=True)
    status = models.CharField(
        max_length=16, choices=SummaryStatus.choices, default=SummaryStatus.PENDING
    )
    attempts = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    task_id = models.CharField(max_length=64, blank=True)
    # Times from the database's clock (one clock for every web process and worker).
    created_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Until when the worker holding it is presumed alive: set when a worker claims it and
    # renewed while that worker runs it; for a summary given back to be retried, when the
    # retry is due and a lease more. Past it, the summary is stuck and taken over.
    lease_until = models.DateTimeField(null=True, blank=True)
    # When its task was last sent again, found stuck: at most once per lease (or per stale
    # window, for one never claimed), so that a backlog on the broker does not grow with
    # every append or sweep.
    resent_at = models.DateTimeField(null=True, blank=True)
    # Who asked for it (see :meth:`requester`): nobody when the history passing its
    # threshold did.
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    requested_via = models.CharField(max_length=100, blank=True, help_text="The API key, if any.")

    class Meta:
        ordering = ["conversation", "-id"]
        verbose_name_plural = "summaries"
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "covers_through"], name="summary_range_unique"
            ),
            models.UniqueConstraint(
                fields=["conversation"],
                condition=Q(status__in=ACTIVE_STATUSES),
                name="summary_one_active_per_conversation",
            ),
            models.CheckConstraint(
                condition=~Q(status=SummaryStatus.DONE) | Q(covers_through__isnull=False),
                name="summary_done_covers_a_range",
            ),
        ]
        indexes = [
            models.Index(
                fields=["conversation", "-covers_through"],
                condition=Q(status=SummaryStatus.DONE),
                name="summary_done_newest",
            ),
            # A page of a conversation's summaries, newest first.
            models.Index(fields=["conversation", "-id"], name="summary_conversation_newest"),
        ]

    def __str__(self) -> str:
        return f"summary {self.pk} of {self.conversation_id} ({self.status})"

    @property
    def requester(self) -> str | None:
        """Who asked for it: a username or an API key; None when it was asked for because
        the history passed its threshold."""
        if self.requested_by is not None:
            return str(self.requested_by.get_username())
        return self.requested_via or None

    @property
    def duration(self) -> float | None:
        """Seconds from the last start to the finish, when both are known."""
        if self.started_at is None or self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()
