"""What the core app stores: the record of repairs made to stored JSON values."""

from __future__ import annotations

from django.db import models


class StoredJsonRepair(models.Model):
    """One value in a stored JSON field that a repair changed, and what it was.

    Numbers beyond 64 bits, accepted before :mod:`promptadmin.core.storedjson` refused
    them, come back from PostgreSQL as integers no JSON encoder of the app can write;
    migration 0002 keeps each as its decimal text under the same key and records it here
    (and, for a model with a history, in a new history record too), so that the repair is
    visible and its reverse puts every number back.
    """

    model = models.CharField(max_length=100, help_text="app_label.ModelName of the row.")
    row_id = models.BigIntegerField()
    field = models.CharField(max_length=64)
    path = models.JSONField(help_text="Keys and list indexes from the top of the field.")
    original = models.TextField(help_text="The number as it was stored, in decimal.")
    repaired_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("model", "row_id", "field", "id")
        verbose_name = "stored JSON repair"

    def __str__(self) -> str:
        where = ".".join(str(step) for step in self.path)
        return f"{self.model} #{self.row_id} {self.field}.{where}"
