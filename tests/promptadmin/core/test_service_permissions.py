"""Every service that changes state checks its actor's role itself, before anything else.

The table below names each such service (every public function of a ``services`` module
that takes an ``actor``) and the role it needs. The services are found by walking the
modules, so a new one missing from the table fails here, and each is called with people
and keys below its role and must refuse them with ``PermissionDenied`` whatever else its
arguments say: a task, a command or an import is checked like the API and the studio.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied

import promptadmin
from promptadmin.content.services.api_keys import api_key_create
from promptadmin.core.roles import Role
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

SERVICES: dict[str, Role] = {
    # content
    "segment_create": Role.AUTHOR,
    "segment_update": Role.AUTHOR,
    "segment_delete": Role.AUTHOR,
    "segment_restore": Role.AUTHOR,
    "segment_import_legacy": Role.ADMIN,
    "catalog_create": Role.AUTHOR,
    "catalog_update": Role.AUTHOR,
    "catalog_delete": Role.AUTHOR,
    "entry_create": Role.AUTHOR,
    "entry_update": Role.AUTHOR,
    "segments_import": Role.ADMIN,
    "import_job_create": Role.ADMIN,
    "deprecated_copy": Role.ADMIN,
    "deprecated_dismiss": Role.ADMIN,
    "deprecated_undo": Role.ADMIN,
    "deprecated_bulk": Role.ADMIN,
    "api_key_create": Role.ADMIN,
    "api_key_update": Role.ADMIN,
    "api_key_revoke": Role.ADMIN,
    # registered prompts
    "prompt_create": Role.AUTHOR,
    "prompt_version_create": Role.AUTHOR,
    "prompt_version_delete": Role.AUTHOR,
    "prompt_label_set": Role.AUTHOR,
    "prompt_label_remove": Role.AUTHOR,
    "interface_create": Role.AUTHOR,
    "interface_update": Role.AUTHOR,
    "interface_delete": Role.AUTHOR,
    "adapter_instruction_create": Role.AUTHOR,
    "adapter_instruction_update": Role.AUTHOR,
    "adapter_instruction_delete": Role.AUTHOR,
    # conversations
    "conversation_append": Role.AUTHOR,
    "summary_request": Role.AUTHOR,
    # releases
    "release_create": Role.AUTHOR,
    "release_label_set": Role.ADMIN,
    "release_label_remove": Role.ADMIN,
    "scenario_create": Role.AUTHOR,
    "scenario_update": Role.AUTHOR,
    "scenario_delete": Role.AUTHOR,
    # lore
    "lore_entry_create": Role.AUTHOR,
    "lore_entry_update": Role.AUTHOR,
    "lore_entry_delete": Role.AUTHOR,
    "lore_entry_restore": Role.AUTHOR,
    "lore_entries_update": Role.AUTHOR,
    "lorebook_import": Role.AUTHOR,
    # playtests
    "playtest_create": Role.AUTHOR,
    "playtest_confirm": Role.AUTHOR,
}


def service_modules() -> list[str]:
    """``promptadmin/<app>/services.py`` and every module of ``promptadmin/<app>/services/``."""
    root = Path(promptadmin.__file__).parent
    files = [*root.glob("*/services.py"), *root.glob("*/services/**/*.py")]
    return sorted(".".join(f.relative_to(root.parent).with_suffix("").parts) for f in files)


def discovered() -> dict[str, Callable[..., Any]]:
    """Every public function of a services module that takes an ``actor``, by name."""
    found: dict[str, Callable[..., Any]] = {}
    for name in service_modules():
        module = importlib.import_module(name.removesuffix(".__init__"))
        for attribute, value in vars(module).items():
            if attribute.startswith("_") or not inspect.isfunction(value):
                continue
            if value.__module__ != module.__name__:
                continue  # imported, or an alias (prompt_label_move): checked where defined
            if value.__name__ != attribute:
                continue
            if "actor" in inspect.signature(value).parameters:
                assert attribute not in found, f"two services named {attribute}"
                found[attribute] = value
    return found


def test_the_table_names_every_service_that_takes_an_actor() -> None:
    services = discovered()
    missing = sorted(set(services) - set(SERVICES))
    assert not missing, f"add these services (and their role check) to SERVICES: {missing}"
    assert not sorted(set(SERVICES) - set(services)), "SERVICES names services that are gone"


def arguments(service: Callable[..., Any]) -> dict[str, Any]:
    """Placeholders for every required argument but the actor: the role check comes first,
    so none of them is ever looked at when the actor is refused."""
    return {
        name: object()
        for name, parameter in inspect.signature(service).parameters.items()
        if name != "actor"
        and parameter.kind is inspect.Parameter.KEYWORD_ONLY
        and parameter.default is inspect.Parameter.empty
    }


def person(group: str | None) -> Any:
    user = UserFactory()
    if group is not None:
        user.groups.add(Group.objects.get(name=group))
    return user


def key(scope: str) -> Any:
    return api_key_create(actor=None, name=f"{scope} key", scope=scope)[0]


# People and keys below each role: who must be refused.
BELOW = {
    Role.AUTHOR: [("a viewer", lambda: person(None)), ("a read key", lambda: key("read"))],
    Role.ADMIN: [
        ("a viewer", lambda: person(None)),
        ("a read key", lambda: key("read")),
        ("an author", lambda: person("author")),
        ("a write key", lambda: key("write")),
    ],
}
# Someone with exactly the role: never refused for their role.
AT = {
    Role.AUTHOR: [("an author", lambda: person("author")), ("a write key", lambda: key("write"))],
    Role.ADMIN: [("an admin", lambda: person("admin")), ("an admin key", lambda: key("admin"))],
}


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_each_service_refuses_anyone_below_its_role_before_anything_else(name: str) -> None:
    service = discovered()[name]
    for who, make in BELOW[SERVICES[name]]:
        with pytest.raises(PermissionDenied):
            service(actor=make(), **arguments(service))
            pytest.fail(f"{name} let {who} through")


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_each_service_lets_its_role_past_the_check(name: str) -> None:
    # The placeholders are no valid input: the service refuses them, but not for the role.
    service = discovered()[name]
    for who, make in AT[SERVICES[name]]:
        try:
            service(actor=make(), **arguments(service))
        except PermissionDenied as refused:
            pytest.fail(f"{name} refused {who}: {refused}")
        except Exception:  # any other refusal is about the placeholders
            pass
