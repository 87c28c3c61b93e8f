"""Playtest runs: what a run asks for, and a run as read."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from promptadmin.api import fields as f
from promptadmin.api.serializers.common import StrictSerializer
from promptadmin.playtests.models import PlaytestRun


class ScenariosField(serializers.JSONField):
    """``"all"`` or a list of scenario names (checked by the service)."""


class PlaytestInputSerializer(StrictSerializer):
    scenarios = ScenariosField(help_text='Scenario names, or "all" (every saved scenario).')
    release = f.Text(
        required=False,
        default="working",
        max_length=100,
        help_text='"working", a label or a release name.',
    )
    compare_to = f.Text(
        required=False,
        allow_null=True,
        default=None,
        max_length=100,
        help_text="A label or a release name: its replies are shown beside the release's.",
    )


class PlaytestQueuedSerializer(serializers.Serializer):
    id = f.Integer()
    status = serializers.ChoiceField(choices=PlaytestRun.Status.choices)
    url = f.Text()


class VerdictSerializer(serializers.Serializer):
    kind = f.Text()
    passed = f.Flag()
    detail = f.Text()


class TokensSerializer(serializers.Serializer):
    in_ = f.Integer()
    out = f.Integer()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["in"] = self.fields.pop("in_")


class SampleSerializer(serializers.Serializer):
    reply = f.Text(allow_null=True, help_text="null: the endpoint gave no reply (see why).")
    tokens = TokensSerializer(allow_null=True)
    latency_ms = f.Integer(allow_null=True)
    cached = f.Flag(help_text="The reply came from the cache: no call was made.")
    expectations = VerdictSerializer(many=True)


class ResultSerializer(serializers.Serializer):
    scenario = f.Text()
    side = serializers.ChoiceField(choices=PlaytestRun.Side.choices)
    samples = SampleSerializer(many=True)
    passed = f.Flag()


class PlaytestSerializer(serializers.Serializer):
    id = f.Integer()
    status = serializers.ChoiceField(choices=PlaytestRun.Status.choices)
    release = f.Text()
    compare_to = f.Text(allow_null=True)
    model = f.Text()
    calls = f.Integer(help_text="Calls made to the endpoint.")
    cached = f.Integer(help_text="Answers taken from the cache instead.")
    results = ResultSerializer(many=True)
