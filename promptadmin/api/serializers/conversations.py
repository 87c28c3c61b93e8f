"""Serializers of the conversation endpoints."""

from __future__ import annotations

from typing import Any, get_args

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from assembler.history import HistoryMode
from assembler.request import MAX_BUDGET
from promptadmin.api import fields as f
from promptadmin.api.serializers.common import StrictSerializer
from promptadmin.conversations.models import (
    MAX_MESSAGE_CHARS,
    MAX_MESSAGES_PER_APPEND,
    Role,
    Summary,
    SummaryStatus,
)
from promptadmin.conversations.selectors import HistoryBlock


def _history_budget(
    kind: type[serializers.IntegerField], help_text: str
) -> serializers.IntegerField:
    """An optional history budget, the same bounds in a body (``f.Integer``: a JSON number)
    and in a query string (``IntegerField``: digits)."""
    return kind(required=False, min_value=1, max_value=MAX_BUDGET, help_text=help_text)


class MessageInputSerializer(StrictSerializer):
    role = serializers.ChoiceField(choices=Role.choices)
    content = f.Text(max_length=MAX_MESSAGE_CHARS, trim_whitespace=False)


class AppendInputSerializer(StrictSerializer):
    messages = serializers.ListField(
        child=MessageInputSerializer(),
        min_length=1,
        max_length=MAX_MESSAGES_PER_APPEND,
        allow_empty=False,
        help_text=f"1 to {MAX_MESSAGES_PER_APPEND} messages, oldest first.",
    )
    history_budget = _history_budget(
        f.Integer, "Tokens the history block may take (set on creation, or changed)."
    )


class AppendOutputSerializer(serializers.Serializer):
    conversation = serializers.CharField(help_text="The conversation's key.")
    positions = serializers.ListField(child=serializers.IntegerField())
    summary_pending = serializers.BooleanField()


class HistoryQuerySerializer(StrictSerializer):
    budget = _history_budget(
        serializers.IntegerField,
        "Token budget of the block; default: the conversation's history budget.",
    )


class SummaryRefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    covers_through = serializers.IntegerField()
    status = serializers.ChoiceField(choices=SummaryStatus.choices)


class HistoryOutputSerializer(serializers.Serializer):
    mode = serializers.ChoiceField(choices=get_args(HistoryMode))
    text = serializers.CharField()
    tokens = serializers.IntegerField()
    summary = SummaryRefSerializer(allow_null=True)
    messages = serializers.ListField(
        child=serializers.IntegerField(), help_text="Positions of the messages shown."
    )
    summary_pending = serializers.BooleanField()


class SummaryPromptSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="The prompt, as component/agent[/task_type].")
    version = serializers.IntegerField(help_text="Its version (the one labelled production).")


class SummaryOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    covers_through = serializers.IntegerField(allow_null=True)
    builds_on = serializers.IntegerField(allow_null=True, source="builds_on_id")
    status = serializers.ChoiceField(choices=SummaryStatus.choices)
    backend = serializers.CharField()
    model = serializers.CharField()
    tokens = serializers.IntegerField(allow_null=True, source="token_count")
    attempts = serializers.IntegerField()
    error = serializers.CharField()
    created = serializers.DateTimeField(source="created_at")
    requested_by = serializers.CharField(
        allow_null=True,
        source="requester",
        help_text="Who asked for it: a username or an API key; null when the history passing "
        "its threshold asked for it.",
    )
    finished = serializers.DateTimeField(allow_null=True, source="finished_at")
    message_cut = serializers.IntegerField(
        allow_null=True,
        help_text="The position of a message longer than one summarization reads "
        "(SUMMARIZER_MAX_INPUT_TOKENS), summarized from its beginning only; null when every "
        "message was read whole.",
    )
    drawn_from = serializers.ListField(
        child=serializers.IntegerField(),
        allow_null=True,
        help_text="The positions of the messages the summary's sentences were taken from "
        "(the extractive summarizer; lines kept from the summary it builds on are not "
        "listed); null when the summarizer cannot say (an endpoint writes its own).",
    )
    previous_cut = serializers.BooleanField(
        help_text="Whether the summary this one builds on was read cut short (made under a "
        "larger SUMMARIZER_MAX_INPUT_TOKENS)."
    )
    prompt = serializers.SerializerMethodField(
        help_text="The registered prompt version (SUMMARIZER_PROMPT) whose system text the "
        "endpoint was told; null when it was told the built-in instructions, or when the "
        "extractive summarizer made the summary."
    )

    @extend_schema_field(SummaryPromptSerializer(allow_null=True))
    def get_prompt(self, summary: Summary) -> dict[str, Any] | None:
        if summary.prompt_version is None:
            return None
        return {"name": summary.prompt_name, "version": summary.prompt_version}


class SummarizeOutputSerializer(serializers.Serializer):
    summary = serializers.IntegerField(
        allow_null=True, help_text="The pending summary; null while one is already running."
    )
    summary_pending = serializers.BooleanField()


def history_data(history: HistoryBlock) -> dict[str, Any]:
    summary = history.summary
    fit = history.fit
    return {
        "mode": fit.mode,
        "text": fit.text,
        "tokens": fit.tokens,
        "summary": None
        if summary is None
        else {"id": summary.pk, "covers_through": summary.covers_through, "status": summary.status},
        "messages": list(fit.positions),
        "summary_pending": history.summary_pending,
    }
