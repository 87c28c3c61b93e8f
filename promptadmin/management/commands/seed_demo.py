"""Load the demo game. Idempotent: objects are found by slug, segments by a seed key."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand
from django.db import transaction

from promptadmin import demo
from promptadmin.models import NPC, Entry, Ruleset, Segment, World
from promptadmin.services import catalog, segments

SEED_KEY = "demo_key"


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

        ref_model = {
            "ruleset": Ruleset,
            "world": World,
            "entry": Entry,
            "entry_start": Entry,
            "npc": NPC,
        }
        existing = set(
            Segment.objects.filter(metadata__has_key=SEED_KEY).values_list(
                f"metadata__{SEED_KEY}", flat=True
            )
        )
        for key, scope, ref_slug, sort_order, tier, title, content in demo.SEGMENTS:
            if key in existing:
                continue
            ref = objects[ref_model[scope]][ref_slug] if ref_slug else None
            segments.segment_create(
                actor=None,
                scope=scope,
                ref=ref,
                content=content,
                metadata={SEED_KEY: key, "title": title},
                sort_order=sort_order,
                tier=tier,
            )
            created += 1
        for key, scope, content in demo.LEGACY_SEGMENTS:
            if key in existing:
                continue
            segments.segment_import_legacy(
                actor=None, scope=scope, content=content, metadata={SEED_KEY: key}
            )
            created += 1
        self.stdout.write(
            f"seed_demo: {created} objects created" if created else "seed_demo: nothing to do"
        )
