"""Services for the objects segments belong to: worlds, rulesets, NPCs and entries.

Each carries a ``revision``, bumped by every saved change (for an entry: its world, its
ordered rulesets and its cast too). A caller that passes ``expected_revision`` (the
revision it read) gets ``StaleRevisionError`` instead of a save over someone else's change;
the check is made on the row locked inside the writing transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import ProtectedError

from assembler.request import MAX_TIER
from promptadmin.content.models import NPC, Entry, EntryNpc, EntryRuleset, Ruleset, World
from promptadmin.content.services.segments import CHANGING_CONTENT
from promptadmin.core.actors import Actor, record_actor
from promptadmin.core.cache import content_changed
from promptadmin.core.errors import InUseError
from promptadmin.core.revisions import locked_revision
from promptadmin.core.roles import Role, require
from promptadmin.core.text import normalize_newlines

CatalogObject = TypeVar("CatalogObject", World, Ruleset, NPC, Entry)
CATALOG_FIELDS = ("slug", "name", "description")
# How many NPCs an entry's cast may list (the preview's NPC rows are bounded alike).
MAX_CAST = 20


@dataclass(frozen=True)
class CastMember:
    """One NPC of an entry's cast, as the services take it: priority is the list order."""

    npc: NPC
    tier: int = 0


def _what(obj: Any) -> str:
    return f"{obj._meta.verbose_name.capitalize()} '{obj.slug}'"


def _lock(obj: CatalogObject, expected_revision: int | None) -> CatalogObject:
    return locked_revision(obj, expected_revision, _what)


def _save(obj: CatalogObject, actor: Actor, update_fields: list[str] | None = None) -> None:
    obj.full_clean(validate_constraints=True)
    record_actor(obj, actor)
    if update_fields is not None:
        obj.revision += 1
        update_fields = [*update_fields, "revision", "updated_at"]
    obj.save(update_fields=update_fields)
    content_changed()


@transaction.atomic
def catalog_create(
    *, actor: Actor, model: type[CatalogObject], slug: str, name: str, description: str = ""
) -> CatalogObject:
    """Create a World, Ruleset or NPC."""
    require(actor, role=Role.AUTHOR, action=CHANGING_CONTENT)
    if model is Entry:
        raise TypeError("Use entry_create() for entries.")
    obj = model(
        slug=slug, name=normalize_newlines(name), description=normalize_newlines(description)
    )
    _save(obj, actor)
    return obj


def _apply(
    obj: CatalogObject, slug: str | None, name: str | None, description: str | None
) -> list[str]:
    """Set the fields given (not None) that differ; their names."""
    changes = {
        "slug": slug,
        "name": normalize_newlines(name),
        "description": normalize_newlines(description),
    }
    changed = [
        field
        for field, value in changes.items()
        if value is not None and getattr(obj, field) != value
    ]
    for field in changed:
        setattr(obj, field, changes[field])
    return changed


@transaction.atomic
def catalog_update(
    *,
    actor: Actor,
    obj: CatalogObject,
    expected_revision: int | None = None,
    slug: str | None = None,
    name: str | None = None,
    description: str | None = None,
) -> CatalogObject:
    """Change the slug, name or description of a World, Ruleset, NPC or Entry (None:
    unchanged).

    Saves only what changed and bumps the revision; nothing changed: no new revision.
    """
    require(actor, role=Role.AUTHOR, action=CHANGING_CONTENT)
    current = _lock(obj, expected_revision)
    changed = _apply(current, slug, name, description)
    if changed:
        _save(current, actor, update_fields=changed)
    return current


@transaction.atomic
def catalog_delete(
    *, actor: Actor, obj: CatalogObject, expected_revision: int | None = None
) -> None:
    """Delete an object nothing points at; otherwise say what still uses it."""
    require(actor, role=Role.AUTHOR, action=CHANGING_CONTENT)
    obj = _lock(obj, expected_revision)
    record_actor(obj, actor)
    try:
        with transaction.atomic():
            if isinstance(obj, Entry):
                for link in [*obj.ruleset_links.all(), *obj.cast_links.all()]:
                    record_actor(link, actor)
                    link.delete()
            obj.delete()
        content_changed()
    except ProtectedError as exc:
        users: dict[str, int] = {}
        for item in exc.protected_objects:
            label = str(item._meta.verbose_name_plural)
            users[label] = users.get(label, 0) + 1
        listed = ", ".join(f"{count} {label}" for label, count in sorted(users.items()))
        raise InUseError(
            f"{obj._meta.verbose_name.capitalize()} '{obj.slug}' is still used by {listed}; "
            "move or delete those first."
        ) from None


def _set_rulesets(entry: Entry, rulesets: Sequence[Ruleset], actor: Actor) -> bool:
    slugs = [r.slug for r in rulesets]
    duplicates = sorted({s for s in slugs if slugs.count(s) > 1})
    if duplicates:
        raise ValidationError(
            {"rulesets": f"A ruleset can appear once per entry; repeated: {', '.join(duplicates)}."}
        )
    current = list(entry.ruleset_links.order_by("position"))
    if [link.ruleset_id for link in current] == [r.pk for r in rulesets]:
        return False
    # Replace the whole ordered list: simpler than shuffling positions under the
    # (entry, position) unique constraint, and each link change is still in history.
    for link in current:
        record_actor(link, actor)
        link.delete()
    for position, ruleset in enumerate(rulesets, start=1):
        link = EntryRuleset(entry=entry, ruleset=ruleset, position=position)
        record_actor(link, actor)
        link.save()
    return True


def _set_cast(entry: Entry, cast: Sequence[CastMember], actor: Actor) -> bool:
    if len(cast) > MAX_CAST:
        raise ValidationError({"cast": f"A cast lists at most {MAX_CAST} NPCs; got {len(cast)}."})
    slugs = [member.npc.slug for member in cast]
    duplicates = sorted({s for s in slugs if slugs.count(s) > 1})
    if duplicates:
        raise ValidationError(
            {"cast": f"An NPC can appear once in a cast; repeated: {', '.join(duplicates)}."}
        )
    for index, member in enumerate(cast):
        if not 0 <= member.tier <= MAX_TIER:
            raise ValidationError(
                {"cast": f"NPC '{member.npc.slug}' (row {index + 1}): a tier is 0 to {MAX_TIER}."}
            )
    current = list(entry.cast_links.order_by("position"))
    if [(link.npc_id, link.tier) for link in current] == [(m.npc.pk, m.tier) for m in cast]:
        return False
    for link in current:
        record_actor(link, actor)
        link.delete()
    for position, member in enumerate(cast, start=1):
        link = EntryNpc(entry=entry, npc=member.npc, tier=member.tier, position=position)
        record_actor(link, actor)
        link.save()
    return True


@transaction.atomic
def entry_create(
    *,
    actor: Actor,
    slug: str,
    name: str,
    world: World,
    rulesets: Sequence[Ruleset] = (),
    cast: Sequence[CastMember] = (),
    description: str = "",
) -> Entry:
    """Create an entry in ``world`` with ``rulesets`` (and its ``cast``) in the given order."""
    require(actor, role=Role.AUTHOR, action=CHANGING_CONTENT)
    entry = Entry(
        slug=slug,
        name=normalize_newlines(name),
        description=normalize_newlines(description),
        world=world,
    )
    _save(entry, actor)
    _set_rulesets(entry, rulesets, actor)
    _set_cast(entry, cast, actor)
    return entry


@transaction.atomic
def entry_update(
    *,
    actor: Actor,
    entry: Entry,
    expected_revision: int | None = None,
    slug: str | None = None,
    name: str | None = None,
    description: str | None = None,
    world: World | None = None,
    rulesets: Sequence[Ruleset] | None = None,
    cast: Sequence[CastMember] | None = None,
) -> Entry:
    """Change an entry's fields, its world, its ordered rulesets or its cast (None:
    unchanged).

    All of it is one change: one new revision, whatever part changed.
    """
    require(actor, role=Role.AUTHOR, action=CHANGING_CONTENT)
    entry = _lock(entry, expected_revision)
    changed = _apply(entry, slug, name, description)
    if world is not None and entry.world_id != world.pk:
        entry.world = world
        changed.append("world")
    links_changed = False
    if rulesets is not None:
        links_changed |= _set_rulesets(entry, rulesets, actor)
    if cast is not None:
        links_changed |= _set_cast(entry, cast, actor)
    if changed or links_changed:
        # The ordering lives in link rows; saving the entry records that it changed.
        _save(entry, actor, update_fields=changed)
    return entry
