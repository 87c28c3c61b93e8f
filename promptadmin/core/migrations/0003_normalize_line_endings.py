"""Store the working copy's authored text with ``\\n`` line endings (see ``core.text``).

Until the services normalized it, text saved from a browser's textarea kept its ``\\r\\n``
(and an old export could hold a lone ``\\r``): segments, the descriptions of worlds,
rulesets, NPCs, entries and prompts, adapter instructions and scenarios. Each such row is
changed as any change is made: its revision is bumped where it has one, and a new history
record says why; earlier records are left as they were (history is never rewritten).

Prompt versions and releases never change: they keep what was written then, and the next
version or release made is normalized. A segment's token count is cleared with its text:
assembly counts such a segment on the fly until ``recount_tokens`` (or the next save)
stores it again.

The reverse changes nothing: which line endings a text had is not worth restoring (the
history records keep them).
"""

from __future__ import annotations

from typing import Any

from django.db import migrations
from django.db.models import Q
from django.utils import timezone

REASON = "Line endings normalized to \\n"
# (app label, model, text columns, JSON columns holding text, history model or None,
# has a revision). The order is the order of the change.
MODELS: tuple[tuple[str, str, tuple[str, ...], tuple[str, ...], str | None, bool], ...] = (
    ("promptadmin", "Segment", ("title", "content"), (), "HistoricalSegment", True),
    ("promptadmin", "World", ("name", "description"), (), "HistoricalWorld", True),
    ("promptadmin", "Ruleset", ("name", "description"), (), "HistoricalRuleset", True),
    ("promptadmin", "NPC", ("name", "description"), (), "HistoricalNPC", True),
    ("promptadmin", "Entry", ("name", "description"), (), "HistoricalEntry", True),
    ("prompts", "Prompt", ("description", "expected_system"), (), "HistoricalPrompt", False),
    (
        "prompts",
        "AdapterInstruction",
        ("system_addition", "user_addition"),
        (),
        "HistoricalAdapterInstruction",
        False,
    ),
    ("releases", "Scenario", ("name",), ("state", "expectations"), "HistoricalScenario", True),
)
# The cache generations whose entries hold such text (promptadmin.core.cache,
# promptadmin.prompts.services): replaced, so nothing cached before is served after.
GENERATION_KEYS = ("assembly:generation", "prompts:generation")


def newlines(value: Any) -> Any:
    """Text with ``\\n`` line endings; in lists and objects, their text values."""
    if isinstance(value, str):
        return value.replace("\r\n", "\n").replace("\r", "\n")
    if isinstance(value, list):
        return [newlines(item) for item in value]
    if isinstance(value, dict):
        return {key: newlines(item) for key, item in value.items()}
    return value


def normalize(apps: Any, schema_editor: Any) -> None:
    now = timezone.now()
    for label, model_name, texts, documents, history_name, revised in MODELS:
        model = apps.get_model(label, model_name)
        holding = Q()
        for field in texts:
            holding |= Q(**{f"{field}__contains": "\r"})
        rows = model._default_manager.all()
        if not documents:  # JSON columns are looked at in Python: few rows, any database
            rows = rows.filter(holding)
        for row in rows.order_by("pk").iterator():
            changed = []
            for field in (*texts, *documents):
                value = getattr(row, field)
                new = newlines(value)
                if new != value:
                    setattr(row, field, new)
                    changed.append(field)
            if not changed:
                continue
            if model_name == "Segment" and "content" in changed:
                row.token_count = None
                row.token_encoding = ""
                changed += ["token_count", "token_encoding"]
            if revised:
                row.revision += 1
                changed.append("revision")
            row.updated_at = now
            changed.append("updated_at")
            model._default_manager.filter(pk=row.pk).update(
                **{field: getattr(row, field) for field in changed}
            )
            history = apps.get_model(label, history_name)
            values = {
                f.attname: getattr(row, f.attname)
                for f in history._meta.concrete_fields
                if not f.attname.startswith("history_")
            }
            history.objects.create(
                **values,
                history_date=now,
                history_type="~",
                history_change_reason=REASON,
                history_user_id=None,
            )
    try:
        from django.core.cache import cache

        cache.delete_many(list(GENERATION_KEYS))
    except Exception:  # an unreachable cache never fails a migration; its entries expire
        pass


class Migration(migrations.Migration):
    dependencies = [
        ("promptadmin_core", "0002_repair_numbers_beyond_64_bits"),
        # The newest state of every model changed here: a history record is written with
        # every column its table has.
        ("promptadmin", "0013_npc_tier_from_imported_metadata"),
        ("prompts", "0003_prompt_versions_immutable"),
        ("releases", "0007_scenario_playtest_parameters"),
    ]

    operations = [migrations.RunPython(normalize, migrations.RunPython.noop)]
