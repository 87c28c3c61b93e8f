"""Registered prompts: addressed by (component, agent, task type or the default).

The default prompt of (component, agent) has ``task_type = ""`` (stored as the empty
string, not NULL, so the uniqueness of (component, agent, task_type) counts it as a value
on every database); the API shows it as ``null``.

A :class:`PromptVersion` never changes once created. :class:`Label` rows point names
(``production``, ``staging`` ...) at versions; ``latest`` is never stored: it is always
the newest version. Every label change writes a :class:`LabelEvent`.
"""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q
from simple_history.models import HistoricalRecords

from assembler.templates import SYNTAXES

#: Component, agent, task type and interface names: lowercase words, no ``/`` (the
#: Langfuse-compatible name is ``component/agent/task_type``).
NAME_REGEX = r"^[a-z0-9][a-z0-9_.-]{0,63}$"
NAME_RE = re.compile(NAME_REGEX)
NAME_HELP = (
    "Lowercase letters, digits, '_', '.' or '-', starting with a letter or digit; at most 64."
)
name_validator = RegexValidator(NAME_REGEX, NAME_HELP)


def parse_langfuse_name(name: str) -> tuple[str, str, str | None] | None:
    """(component, agent, task type or None) of a prompt's Langfuse name,
    ``component/agent[/task_type]``; None when ``name`` is not one.

    >>> parse_langfuse_name("verifier/judge/rubric"), parse_langfuse_name("verifier/Judge")
    (('verifier', 'judge', 'rubric'), None)
    """
    parts = name.split("/")
    if len(parts) not in (2, 3) or not all(NAME_RE.fullmatch(part) for part in parts):
        return None
    return parts[0], parts[1], parts[2] if len(parts) == 3 else None


#: Label names, wherever one is set or asked for.
LABEL_REGEX = r"^[a-z0-9_.-]{1,36}$"
LABEL_RE = re.compile(LABEL_REGEX)
LABEL_HELP = "1 to 36 of lowercase letters, digits, '_', '.' or '-'."
#: The label that always names the newest version; never set by hand.
LATEST = "latest"
#: The label fetched when the caller names neither a label nor a version.
DEFAULT_LABEL = "production"

#: User template names: a plain identifier, and never ``system`` (the lint names the
#: system template so).
TEMPLATE_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
RESERVED_TEMPLATE_NAMES = frozenset({"system"})
#: The user template rendered when the caller names none.
# How a key that made a change is named (``API key 'name' (prefix)``), at most.
LABEL_COLUMN = 150
MAX_USER_TEMPLATES = 50
MAX_VARIABLES = 200
MAX_TEMPLATE_TEXT = 200_000


class Syntax(models.TextChoices):
    CURLY = "curly", "{{ name }} (curly)"
    FORMAT = "format", "{name} (format)"


assert tuple(Syntax.values) == SYNTAXES  # one list of syntaxes: the assembler's


class Prompt(models.Model):
    component = models.CharField(max_length=64, validators=[name_validator])
    agent = models.CharField(max_length=64, validators=[name_validator])
    task_type = models.CharField(
        max_length=64,
        blank=True,
        default="",
        validators=[RegexValidator(rf"^$|{NAME_REGEX}", NAME_HELP)],
        help_text="Empty for the default prompt of (component, agent).",
    )
    description = models.TextField(blank=True, default="")
    # NULL (no expectation) differs from "" (the system text must be empty).
    expected_system = models.TextField(  # noqa: DJ001
        null=True,
        blank=True,
        help_text="When set, every version's system text must equal it exactly (lint).",
    )
    # The highest version number ever given, deleted versions included: the next version
    # takes the one after it, so a number once served never names other content.
    last_version_number = models.PositiveIntegerField(default=0, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    history = HistoricalRecords(excluded_fields=["updated_at", "last_version_number"])

    class Meta:
        ordering = ["component", "agent", "task_type"]
        constraints = [
            models.UniqueConstraint(
                fields=["component", "agent", "task_type"], name="prompt_address_unique"
            )
        ]

    def __str__(self) -> str:
        return self.langfuse_name

    @property
    def langfuse_name(self) -> str:
        """``component/agent/task_type``, or ``component/agent`` for the default."""
        parts = [self.component, self.agent] + ([self.task_type] if self.task_type else [])
        return "/".join(parts)

    @property
    def task_type_or_none(self) -> str | None:
        return self.task_type or None


class PromptVersion(models.Model):
    """One immutable version: templates, declared variables, task and config.

    On PostgreSQL a trigger refuses any UPDATE of a version's row (migration 0003), so
    neither a queryset ``update()`` nor raw SQL can rewrite one.
    """

    prompt = models.ForeignKey(Prompt, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    syntax = models.CharField(max_length=8, choices=Syntax.choices, default=Syntax.CURLY)
    system = models.TextField(blank=True, default="")
    # name -> template; always presented sorted by name (jsonb keeps no key order).
    user_templates = models.JSONField(default=dict)
    variables = models.JSONField(default=list)
    task = models.CharField(
        max_length=64, blank=True, default="", help_text="Task name for adapter lookup."
    )
    config = models.JSONField(default=dict)
    commit_message = models.TextField(blank=True, default="")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    author_label = models.CharField(max_length=LABEL_COLUMN, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    content_hash = models.CharField(max_length=64)

    class Meta:
        ordering = ["prompt", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["prompt", "number"], name="prompt_version_unique"),
            models.CheckConstraint(condition=Q(syntax__in=SYNTAXES), name="prompt_version_syntax"),
        ]

    def __str__(self) -> str:
        return f"{self.prompt} v{self.number}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise TypeError("A prompt version never changes; create a new version instead.")
        super().save(*args, **kwargs)

    def sorted_user_templates(self) -> dict[str, str]:
        return {name: self.user_templates[name] for name in sorted(self.user_templates)}


class Label(models.Model):
    prompt = models.ForeignKey(Prompt, on_delete=models.CASCADE, related_name="labels")
    name = models.CharField(max_length=36, validators=[RegexValidator(LABEL_REGEX, LABEL_HELP)])
    # A version a label points at cannot be deleted.
    version = models.ForeignKey(PromptVersion, on_delete=models.PROTECT, related_name="labels")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["prompt", "name"], name="prompt_label_unique"),
            models.CheckConstraint(condition=~Q(name=LATEST), name="prompt_label_not_latest"),
        ]

    def __str__(self) -> str:
        return f"{self.prompt}@{self.name}"


class LabelAction(models.TextChoices):
    SET = "set", "set"
    MOVED = "moved", "moved"
    REMOVED = "removed", "removed"


class LabelEvent(models.Model):
    """Who set, moved or removed a label, when, and from which version to which."""

    prompt = models.ForeignKey(Prompt, on_delete=models.CASCADE, related_name="label_events")
    label = models.CharField(max_length=36)
    action = models.CharField(max_length=8, choices=LabelAction.choices)
    from_version = models.PositiveIntegerField(null=True, blank=True)
    to_version = models.PositiveIntegerField(null=True, blank=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_label = models.CharField(max_length=LABEL_COLUMN, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["prompt", "-created_at"], name="label_event_prompt_time")]

    def __str__(self) -> str:
        return f"{self.label} {self.action} ({self.from_version} -> {self.to_version})"


class Interface(models.Model):
    """An LLM backend kind and its capabilities."""

    name = models.CharField(max_length=64, unique=True, validators=[name_validator])
    supports_system_prompt = models.BooleanField(default=True)
    supports_structured_output = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    history = HistoricalRecords(excluded_fields=["updated_at"])

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class AdapterInstruction(models.Model):
    """Text an adapter adds for an (interface, task) pair: curly templates rendered with
    the caller's instruction context (missing keys render empty)."""

    interface = models.ForeignKey(
        Interface, on_delete=models.PROTECT, related_name="adapter_instructions"
    )
    task = models.CharField(max_length=64, validators=[name_validator])
    order = models.IntegerField(default=0)
    system_addition = models.TextField(blank=True, default="")
    user_addition = models.TextField(blank=True, default="")
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    history = HistoricalRecords(excluded_fields=["updated_at"])

    class Meta:
        ordering = ["interface__name", "task", "order", "id"]
        indexes = [models.Index(fields=["interface", "task"], name="adapter_interface_task")]

    def __str__(self) -> str:
        return f"{self.interface.name}/{self.task} #{self.order}"
