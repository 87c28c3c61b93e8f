"""Imported NPC segments get the tier their legacy row kept in its metadata.

Until the import read it (``legacy_import.tier_from_metadata``), an NPC row exported with
``{"tier": 1}`` in its metadata became a segment of tier 0, so assembly showed it at the
lowest tier only. Each such segment still as imported (revision 1: nobody has set a tier
since) gets the tier, the key leaves its metadata, and the change is recorded as any
change is: a new revision and a history record (earlier records are left as they were).

The reverse puts the key back and the tier to 0, as a further revision.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations
from django.utils import timezone

MAX_TIER = 32767
REASON = "Tier taken from the imported metadata"
UNDONE = "Tier put back in the metadata"


def _record(apps: Any, row: Any, now: Any, why: str) -> None:
    history = apps.get_model("promptadmin", "HistoricalSegment")
    values = {
        f.attname: getattr(row, f.attname)
        for f in history._meta.concrete_fields
        if not f.attname.startswith("history_")
    }
    history.objects.create(
        **values,
        history_date=now,
        history_type="~",
        history_change_reason=why,
        history_user_id=None,
    )


def _save(apps: Any, row: Any, why: str) -> None:
    now = timezone.now()
    row.revision += 1
    row.updated_at = now
    type(row)._default_manager.filter(pk=row.pk).update(
        tier=row.tier, metadata=row.metadata, revision=row.revision, updated_at=now
    )
    _record(apps, row, now, why)


def take_tier(apps: Any, schema_editor: Any) -> None:
    segments = apps.get_model("promptadmin", "Segment")
    rows = segments.objects.filter(
        scope="npc", legacy_id__isnull=False, revision=1, tier=0, metadata__has_key="tier"
    )
    for row in rows.order_by("pk").iterator():
        tier = row.metadata.get("tier")
        if isinstance(tier, bool) or not isinstance(tier, int) or not 0 < tier <= MAX_TIER:
            continue
        row.tier = tier
        row.metadata = {key: value for key, value in row.metadata.items() if key != "tier"}
        _save(apps, row, REASON)


def give_back(apps: Any, schema_editor: Any) -> None:
    history = apps.get_model("promptadmin", "HistoricalSegment")
    segments = apps.get_model("promptadmin", "Segment")
    taken = history.objects.filter(history_change_reason=REASON).values_list("id", "revision")
    for pk, revision in taken:
        row = segments.objects.filter(pk=pk, revision=revision).first()
        if row is None or "tier" in row.metadata:  # changed since: left as it is
            continue
        row.metadata = {**row.metadata, "tier": row.tier}
        row.tier = 0
        _save(apps, row, UNDONE)


class Migration(migrations.Migration):
    dependencies = [("promptadmin", "0012_entry_health_in_the_background")]

    operations = [migrations.RunPython(take_tier, give_back)]
