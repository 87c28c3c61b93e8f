"""Services for the objects segments belong to: worlds, rulesets, NPCs and entries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import ProtectedError

from promptadmin.content_cache import content_changed
from promptadmin.models import NPC, Entry, EntryRuleset, Ruleset, World
from promptadmin.services.common import Actor, record_actor
from promptadmin.services.errors import InUseError

CatalogObject = TypeVar("CatalogObject", World, Ruleset, NPC, Entry)
CATALOG_FIELDS = ("slug", "name", "description")


def _save(obj: CatalogObject, actor: Actor, update_fields: list[str] | None = None) -> None:
    obj.full_clean(validate_constraints=True)
    record_actor(obj, actor)
    obj.save(update_fields=update_fields)
    content_changed()


@transaction.atomic
def catalog_create(
    *, actor: Actor, model: type[CatalogObject], slug: str, name: str, description: str = ""
) -> CatalogObject:
    """Create a World, Ruleset or NPC."""
    if model is Entry:
        raise TypeError("Use entry_create() for entries.")
    obj = model(slug=slug, name=name, description=description)
    _save(obj, actor)
    return obj


@transaction.atomic
def catalog_update(*, actor: Actor, obj: CatalogObject, **changes: Any) -> CatalogObject:
    """Change the slug, name or description of a World, Ruleset, NPC or Entry."""
    unknown = set(changes) - set(CATALOG_FIELDS)
    if unknown:
        raise TypeError(f"catalog_update() got unexpected fields: {', '.join(sorted(unknown))}")
    changed = [name for name, value in changes.items() if getattr(obj, name) != value]
    if not changed:
        return obj
    for name in changed:
        setattr(obj, name, changes[name])
    _save(obj, actor, update_fields=[*changed, "updated_at"])
    return obj


@transaction.atomic
def catalog_delete(*, actor: Actor, obj: CatalogObject) -> None:
    """Delete an object nothing points at; otherwise say what still uses it."""
    record_actor(obj, actor)
    try:
        with transaction.atomic():
            if isinstance(obj, Entry):
                for link in obj.ruleset_links.all():
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
    content_changed()
    return True


@transaction.atomic
def entry_create(
    *,
    actor: Actor,
    slug: str,
    name: str,
    world: World,
    rulesets: Sequence[Ruleset] = (),
    description: str = "",
) -> Entry:
    """Create an entry in ``world`` with ``rulesets`` in the given order."""
    entry = Entry(slug=slug, name=name, description=description, world=world)
    _save(entry, actor)
    _set_rulesets(entry, rulesets, actor)
    return entry


@transaction.atomic
def entry_update(
    *,
    actor: Actor,
    entry: Entry,
    world: World | None = None,
    rulesets: Sequence[Ruleset] | None = None,
    **changes: Any,
) -> Entry:
    """Change an entry's fields, its world, or its ordered rulesets."""
    entry = Entry.objects.select_for_update().get(pk=entry.pk)
    if world is not None and entry.world_id != world.pk:
        entry.world = world
        _save(entry, actor, update_fields=["world", "updated_at"])
    if changes:
        entry = catalog_update(actor=actor, obj=entry, **changes)
    if rulesets is not None and _set_rulesets(entry, rulesets, actor):
        # The ordering lives in link rows; touching the entry records that it changed.
        record_actor(entry, actor)
        entry.save(update_fields=["updated_at"])
    return entry
