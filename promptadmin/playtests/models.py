"""Playtest runs, the model's answers (cached by what was asked), and each sample's verdicts."""

from __future__ import annotations

from django.db import models

from promptadmin.content.models import Job


class PlaytestRun(Job):
    """One playtest: scenarios on a release (and, to compare, another), sent to a model."""

    class Side(models.TextChoices):
        RELEASE = "release"
        COMPARE_TO = "compare_to"

    status = models.CharField(max_length=16, choices=Job.Status.choices, default=Job.Status.QUEUED)
    release = models.CharField(max_length=100, help_text="working, a label or a release name.")
    compare_to = models.CharField(max_length=100, blank=True, help_text="Empty: none.")
    model = models.CharField(max_length=200)
    # What is sent, worked out when the run is made: a later edit does not change the run.
    # [{"scenario", "side", "messages", "params", "expectations", "samples", "error"}]
    plan = models.JSONField(default=list)
    calls_needed = models.PositiveIntegerField(default=0)
    calls = models.PositiveIntegerField(default=0, help_text="Calls made to the endpoint.")
    cached = models.PositiveIntegerField(default=0, help_text="Answers taken from the cache.")
    error = models.TextField(blank=True)
    # A publish made while a reply expectation of this run failed, confirmed by its author.
    confirmed_at = models.DateTimeField(null=True, blank=True)
    confirmed_by = models.CharField(max_length=200, blank=True)

    def __str__(self) -> str:
        return f"playtest #{self.pk} ({self.status})"


class PlaytestCall(models.Model):
    """One answer of the endpoint (a reply or a judgement), keyed by everything asked:
    the same question is never paid for twice, within a run or across runs."""

    class Kind(models.TextChoices):
        REPLY = "reply"
        JUDGE = "judge"

    key = models.CharField(max_length=64, unique=True, help_text="SHA-256 of what was asked.")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    model = models.CharField(max_length=200)
    text = models.TextField()
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    latency_ms = models.PositiveIntegerField(default=0)
    run = models.ForeignKey(
        PlaytestRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="paid_calls"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.kind} {self.key[:12]}"


class PlaytestSample(models.Model):
    """One reply of a run for a scenario and side, with each expectation's verdict."""

    run = models.ForeignKey(PlaytestRun, on_delete=models.CASCADE, related_name="samples")
    scenario = models.CharField(max_length=100)
    side = models.CharField(max_length=16, choices=PlaytestRun.Side.choices)
    number = models.PositiveSmallIntegerField()
    call = models.ForeignKey(PlaytestCall, null=True, blank=True, on_delete=models.SET_NULL)
    cached = models.BooleanField(default=False, help_text="The reply came from the cache.")
    expectations = models.JSONField(default=list)
    passed = models.BooleanField(default=False)

    class Meta:
        ordering = ("id",)
        constraints = [
            models.UniqueConstraint(
                fields=["run", "scenario", "side", "number"], name="playtest_sample_once"
            )
        ]

    def __str__(self) -> str:
        return f"{self.scenario} {self.side} #{self.number}"
