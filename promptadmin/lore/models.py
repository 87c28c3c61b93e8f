"""Lore entries: world knowledge that the assembler brings into the ``lore`` layer when a
turn's text names one of the entry's keys (see :mod:`assembler.lore`).

An entry belongs to a world, or to every world (``world`` null). Its limits (keys, key
length, title, group, priority, content) are the assembler's, imported from
:mod:`assembler.lore`; the services check an entry by building the assembler's
:class:`assembler.lore.LoreEntry` from it, so a row that is saved is a row that assembles.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone
from simple_history.models import HistoricalRecords

from assembler.lore import (
    MAX_LORE_GROUP_LENGTH,
    MAX_LORE_PRIORITY,
    MAX_LORE_TITLE_LENGTH,
    MIN_LORE_PRIORITY,
)
from assembler.lore import LoreEntry as AssemblerLoreEntry
from promptadmin.content.models import KeptOnInsertDateTimeField
from promptadmin.core.storedjson import validate_stored_json

IMPORT_KEY_LENGTH = 64

ASSEMBLED_FIELDS = (
    "title",
    "content",
    "keys",
    "whole_words",
    "case_sensitive",
    "priority",
    "group",
    "constant",
    "recursive",
)
"""What the assembler reads of an entry (see :meth:`LoreEntry.for_assembly`)."""


class LoreEntry(models.Model):
    """One piece of lore and the keys that call it up."""

    world = models.ForeignKey(
        "promptadmin.World",
        null=True,
        blank=True,
        # A world with lore is not deleted from under it: the delete says what still uses it.
        on_delete=models.PROTECT,
        related_name="lore_entries",
        help_text="Empty: the entry is lore of every world.",
    )
    title = models.CharField(max_length=MAX_LORE_TITLE_LENGTH, blank=True)
    content = models.TextField()
    keys = models.JSONField(default=list, blank=True)
    whole_words = models.BooleanField(default=True)
    case_sensitive = models.BooleanField(default=False)
    priority = models.IntegerField(default=0)
    group = models.CharField(max_length=MAX_LORE_GROUP_LENGTH, blank=True)
    constant = models.BooleanField(default=False)
    recursive = models.BooleanField(default=True)
    active = models.BooleanField(default=True)
    # What an interchange file had that has no field here (a SillyTavern entry's other
    # settings), kept so that an export gives it back.
    metadata = models.JSONField(default=dict, blank=True, validators=[validate_stored_json])
    # Where an imported entry came from (``st:<uid>``), so that importing the same file
    # into the same world again finds it. Internal: never shown to authors.
    import_key = models.CharField(max_length=IMPORT_KEY_LENGTH, blank=True, editable=False)
    # Cached count of ``content`` in ``token_encoding``; recomputed when either changes.
    token_count = models.PositiveIntegerField(null=True, blank=True, editable=False)
    token_encoding = models.CharField(max_length=64, blank=True, editable=False)
    # Bumped on every saved change; the optimistic-concurrency token for editors and the API.
    revision = models.PositiveIntegerField(default=1, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = KeptOnInsertDateTimeField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    history = HistoricalRecords(excluded_fields=["updated_at"])

    class Meta:
        verbose_name = "lore entry"
        verbose_name_plural = "lore entries"
        ordering = ("-priority", "id")
        constraints = [
            models.CheckConstraint(
                condition=Q(priority__gte=MIN_LORE_PRIORITY) & Q(priority__lte=MAX_LORE_PRIORITY),
                name="loreentry_priority_range",
            ),
            models.UniqueConstraint(
                fields=("world", "import_key"),
                condition=~Q(import_key=""),
                name="loreentry_unique_import_key",
            ),
        ]
        indexes = [
            # "The active lore of world W (and of every world)": what assembly loads.
            models.Index(fields=("world", "id"), condition=Q(active=True), name="lore_active"),
            models.Index(fields=("world", "group"), name="lore_world_group"),
            # The lore page, a world's entries in their order, a page at a time, and the
            # book's total tokens (read from the index alone), whatever the book's size.
            models.Index(
                fields=("world", "-priority", "id"),
                include=("token_count",),
                name="lore_world_order",
            ),
            # The same page for the lore of every world at once.
            models.Index(fields=("-priority", "id"), name="lore_order"),
        ]

    def __str__(self) -> str:
        return f"lore #{self.pk}: {self.label}"

    @property
    def label(self) -> str:
        """The title, or the start of the content."""
        if self.title.strip():
            return self.title.strip()
        first = self.content.strip().splitlines()[0] if self.content.strip() else ""
        return first[:60] + ("…" if len(first) > 60 else "")

    def for_assembly(self, token_count: int | None = None) -> AssemblerLoreEntry:
        """The assembler's entry for this row (raises :class:`assembler.lore.LoreError`
        naming the field at fault)."""
        row = {field: getattr(self, field) for field in ASSEMBLED_FIELDS}
        return assembled_entry({"id": self.pk or 0, **row}, token_count)


def assembled_entry(row: Mapping[str, Any], token_count: int | None) -> AssemblerLoreEntry:
    """The assembler's entry for a row holding ``id`` and :data:`ASSEMBLED_FIELDS` (as
    ``values()`` reads them and release bundles keep them): no model instance, which costs
    more than the entry itself when a book of 10,000 is built."""
    keys = row["keys"]
    return AssemblerLoreEntry(
        id=row["id"],
        title=row["title"].strip(),
        content=row["content"],
        keys=tuple(keys) if isinstance(keys, list) else (),
        whole_words=row["whole_words"],
        case_sensitive=row["case_sensitive"],
        priority=row["priority"],
        group=row["group"] or None,
        constant=row["constant"],
        recursive=row["recursive"],
        token_count=token_count,
    )
