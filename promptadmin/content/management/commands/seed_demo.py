"""Load the demo game. Idempotent: objects are found by slug, segments by a seed key."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand
from django.db import transaction

from promptadmin.content import demo
from promptadmin.content.kinds import scope_kind
from promptadmin.content.models import NPC, Entry, Ruleset, Segment, World
from promptadmin.content.services import catalog, segments


class Command(BaseCommand):
    help = "Create the demo worlds, rulesets, entries, NPCs and segments (idempotent)."

    @transaction.atomic
    def handle(self, *args: Any, **options: Any) -> None:
        created = 0
        objects: dict[type, dict[str, Any]] = {}
        for model, rows in ((World, demo.WORLDS), (Ruleset, demo.RULESETS), (NPC, demo.NPCS)):
            objects[model] = {}
            for row in rows:
                obj = model.objects.filter(slug=row["slug"]).first()
                if obj is None:
                    obj = catalog.catalog_create(actor=None, model=model, **row)
                    created += 1
                objects[model][row["slug"]] = obj
        objects[Entry] = {}
        for row in demo.ENTRIES:
            entry = Entry.objects.filter(slug=row["slug"]).first()
            if entry is None:
                entry = catalog.entry_create(
                    actor=None,
                    slug=row["slug"],
                    name=row["name"],
                    description=row["description"],
                    world=objects[World][row["world"]],
                    rulesets=[objects[Ruleset][slug] for slug in row["rulesets"]],
                )
                created += 1
            objects[Entry][row["slug"]] = entry

        existing = set(Segment.objects.exclude(import_key="").values_list("import_key", flat=True))
        for key, scope, ref_slug, sort_order, tier, title, content in demo.SEGMENTS:
            if key in existing:
                continue
            kind = scope_kind(scope)
            ref = objects[kind.model][ref_slug] if kind else None
            segments.segment_create(
                actor=None,
                scope=scope,
                ref=ref,
                content=content,
                title=title,
                import_key=key,
                sort_order=sort_order,
                tier=tier,
            )
            created += 1
        for key, scope, content in demo.LEGACY_SEGMENTS:
            if key in existing:
                continue
            segments.segment_import_legacy(actor=None, scope=scope, content=content, import_key=key)
            created += 1
        self.stdout.write(
            f"seed_demo: {created} objects created" if created else "seed_demo: nothing to do"
        )
