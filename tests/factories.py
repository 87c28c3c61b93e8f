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
