"""factory_boy factories for the content model. Segments are created through the service."""

from __future__ import annotations

from typing import Any

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from promptadmin.content.models import NPC, Entry, Ruleset, Segment, World
from promptadmin.content.services import segments


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True  # the role hook saves what it changes

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password("pw-for-tests-only")

    @factory.post_generation
    def role(self, create: bool, extracted: str | None, **kwargs: Any) -> None:
        """``UserFactory(role="author")``: in that role's group (none: a viewer)."""
        if create and extracted:
            self.groups.add(Group.objects.get(name=extracted))


class WorldFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = World

    slug = factory.Sequence(lambda n: f"world-{n}")
    name = factory.Sequence(lambda n: f"World {n}")


class RulesetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Ruleset

    slug = factory.Sequence(lambda n: f"ruleset-{n}")
    name = factory.Sequence(lambda n: f"Ruleset {n}")


class NPCFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = NPC

    slug = factory.Sequence(lambda n: f"npc-{n}")
    name = factory.Sequence(lambda n: f"NPC {n}")


class EntryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Entry

    slug = factory.Sequence(lambda n: f"entry-{n}")
    name = factory.Sequence(lambda n: f"Entry {n}")
    world = factory.SubFactory(WorldFactory)


def make_segment(
    *, scope: str = "core", ref: Any = None, actor: Any = None, **fields: Any
) -> Segment:
    """A segment saved through ``segment_create`` (so token counts and history are real)."""
    fields.setdefault("content", f"Some {scope} text.")
    return segments.segment_create(actor=actor, scope=scope, ref=ref, **fields)


def make_cinder_gate(actor: Any = None) -> dict[str, Any]:
    """Issue 21's scene (``tests.assembler.builders.CINDER_GATE``) through the services: the
    world, a ruleset, Oren and Lysa, the entry ``cinder-gate`` casting them, and segments.
    Returns the preview's settings (``params``, a query for the studio or a body for the
    API, without the NPCs) and the long war segment, larger than the whole budget.
    """
    from promptadmin.content.services import catalog
    from tests.assembler.builders import CINDER_GATE as scene

    world = WorldFactory(slug="ash-plains", name="Ash Plains")
    rules = RulesetFactory(slug="d20", name="D20 rules")
    npcs = {slug: NPCFactory(slug=slug, name=name) for slug, (name, _rows) in scene["npcs"].items()}
    entry = catalog.entry_create(
        actor=actor,
        slug="cinder-gate",
        name="The cinder gate",
        world=world,
        rulesets=[rules],
        cast=[catalog.CastMember(npc=npcs[slug], tier=tier) for slug, tier in scene["cast"]],
    )
    title, content = scene["core"]
    make_segment(actor=actor, scope="core", title=title, content=content)
    title, content = scene["ruleset"]
    make_segment(actor=actor, scope="ruleset", ref=rules, title=title, content=content)
    made = [
        make_segment(
            actor=actor, scope="world", ref=world, title=title, content=content, sort_order=order
        )
        for order, (title, content) in enumerate(scene["world"], start=1)
    ]
    title, content = scene["entry"]
    make_segment(actor=actor, scope="entry", ref=entry, title=title, content=content)
    for slug, (_name, rows) in scene["npcs"].items():
        for tier, title, content in rows:
            make_segment(
                actor=actor, scope="npc", ref=npcs[slug], title=title, content=content, tier=tier
            )
    return {
        "params": {
            "entry": "cinder-gate",
            "token_budget": scene["token_budget"],
            "npc_budget": scene["npc_budget"],
            "input": scene["input"],
        },
        "cast": scene["cast"],
        "long_war": made[1],
    }
