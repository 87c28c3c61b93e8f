"""The content app moved into promptadmin/content/ but kept the label of the single app it
came from, so an existing database needs no migration."""

from __future__ import annotations

from django.apps import apps

from promptadmin.content.models import NPC, ApiKey, Entry, Ruleset, Segment, World


def test_the_content_app_keeps_the_label_promptadmin_in_the_module_promptadmin_content() -> None:
    config = apps.get_app_config("promptadmin")
    assert config.name == "promptadmin.content"
    assert config.label == "promptadmin"
    for model in (World, Ruleset, Entry, NPC, Segment, ApiKey):
        assert model._meta.app_label == "promptadmin"
        assert model._meta.db_table == f"promptadmin_{model.__name__.lower()}"
