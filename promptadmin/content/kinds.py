"""The one registry of the kinds of object a segment can belong to.

Scope → kind of object → model, API field, URL section and the words people read: every
entry point (services, API, studio, admin, the demo seed) derives what it needs from
here, so a kind is described once.

>>> KINDS["npc"].label, KINDS["npc"].plural, KINDS["npc"].section
('NPC', 'NPCs', 'npcs')
>>> scope_kind("entry_start").key, scope_kind("core")
('entry', None)
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Model

from promptadmin.content.models import NPC, SCOPE_REF_FIELD, Entry, Ruleset, World


@dataclass(frozen=True)
class Kind:
    """One kind of object segments belong to."""

    key: str  # the segment's foreign key, the API's filter, ``kind:slug`` in pickers
    model: type[World | Ruleset | Entry | NPC]
    label: str  # in a sentence: "Choose the NPC this segment belongs to."
    plural: str  # as a heading: "NPCs"
    section: str  # URL path segment, in the studio and the API: "npcs"

    @property
    def singular(self) -> str:
        return self.label

    @property
    def scopes(self) -> tuple[str, ...]:
        """The segment scopes whose segments belong to an object of this kind."""
        return tuple(scope for scope, field in SCOPE_REF_FIELD.items() if field == self.key)


# In the order pickers and filters list them.
KINDS: dict[str, Kind] = {
    "world": Kind("world", World, "world", "Worlds", "worlds"),
    "ruleset": Kind("ruleset", Ruleset, "ruleset", "Rulesets", "rulesets"),
    "entry": Kind("entry", Entry, "entry", "Entries", "entries"),
    "npc": Kind("npc", NPC, "NPC", "NPCs", "npcs"),
}

# The kinds edited on the shared catalog pages (entries have pages of their own).
CATALOG_KINDS: tuple[str, ...] = ("world", "ruleset", "npc")


def scope_kind(scope: str) -> Kind | None:
    """The kind of object a segment of ``scope`` belongs to (None: core, deprecated)."""
    field = SCOPE_REF_FIELD.get(scope)
    return KINDS[field] if field else None


def kind_of(obj: Model) -> Kind:
    """The kind of ``obj`` (a World, Ruleset, Entry or NPC)."""
    for kind in KINDS.values():
        if type(obj) is kind.model:
            return kind
    raise TypeError(f"{type(obj).__name__} is not a kind of object segments belong to.")
