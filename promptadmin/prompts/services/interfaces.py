"""Interfaces (LLM backend kinds) and the adapter instructions registered for (interface, task)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, TypeVar

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import ProtectedError

from assembler.request import INT32
from assembler.storable import StoredJsonError, check_stored_json
from assembler.templates import TemplateSyntaxError, parse
from promptadmin.core.actors import Actor, record_actor
from promptadmin.core.errors import InUseError, StaleStateError
from promptadmin.core.roles import Role, require
from promptadmin.core.text import normalize_newlines
from promptadmin.prompts.models import NAME_HELP, NAME_RE, AdapterInstruction, Interface
from promptadmin.prompts.services import CHANGING_PROMPTS, prompts_changed

INTERFACE_FIELDS = ("name", "supports_system_prompt", "supports_structured_output")
ADAPTER_FIELDS = ("interface", "task", "order", "system_addition", "user_addition", "active")
ADAPTER_TEXTS = ("system_addition", "user_addition")  # what authors write: see core.text
MAX_ADDITION = 50_000
MAX_ORDER = INT32


def _check_interface(changes: dict[str, Any], instance: Interface | None) -> None:
    errors: dict[str, list[str]] = {}
    if "name" in changes:
        name = changes["name"]
        if not isinstance(name, str) or not NAME_RE.fullmatch(name):
            errors["name"] = [NAME_HELP]
        elif Interface.objects.filter(name=name).exclude(pk=getattr(instance, "pk", None)).exists():
            errors["name"] = [f"An interface named '{name}' already exists."]
    for flag in ("supports_system_prompt", "supports_structured_output"):
        if flag in changes and not isinstance(changes[flag], bool):
            errors[flag] = ["Expected true or false."]
    if errors:
        raise ValidationError(errors)


@transaction.atomic
def interface_create(
    *,
    actor: Actor,
    name: str,
    supports_system_prompt: bool = True,
    supports_structured_output: bool = False,
) -> Interface:
    require(actor, role=Role.AUTHOR, action=CHANGING_PROMPTS)
    fields = {
        "name": name,
        "supports_system_prompt": supports_system_prompt,
        "supports_structured_output": supports_structured_output,
    }
    _check_interface(fields, None)
    interface = Interface(**fields)
    record_actor(interface, actor)
    interface.save()
    prompts_changed()
    return interface


Row = TypeVar("Row", Interface, AdapterInstruction)


def _locked(row: Row, expected_updated_at: datetime | None) -> Row:
    """``row`` read again under a lock until the transaction ends; StaleStateError when the
    caller saw an older state (its last change at ``expected_updated_at``) than this one."""
    current = type(row)._default_manager.select_for_update().get(pk=row.pk)
    if expected_updated_at is not None and current.updated_at != expected_updated_at:
        seen, latest = (
            f"{moment.astimezone(UTC):%Y-%m-%d %H:%M:%S.%f} UTC"
            for moment in (expected_updated_at, current.updated_at)
        )
        raise StaleStateError(
            f"The {current._meta.verbose_name} changed since you read it (you saw it as of "
            f"{seen}, it last changed at {latest}): read it again and reapply your change."
        )
    return current


def _refuse_unknown(function: str, changes: dict[str, Any], fields: Iterable[str]) -> None:
    unknown = set(changes) - set(fields)
    if unknown:
        raise TypeError(f"{function}() got unexpected fields: {', '.join(sorted(unknown))}")


def _save_changes(row: Row, changes: dict[str, Any], actor: Actor) -> Row:
    """Save the fields of ``changes`` whose values differ from ``row``'s; none: no write."""
    changed = [name for name, value in changes.items() if getattr(row, name) != value]
    if changed:
        for name in changed:
            setattr(row, name, changes[name])
        record_actor(row, actor)
        row.save(update_fields=[*changed, "updated_at"])
        prompts_changed()
    return row


@transaction.atomic
def interface_update(
    *,
    actor: Actor,
    interface: Interface,
    expected_updated_at: datetime | None = None,
    **changes: Any,
) -> Interface:
    """Change an interface's name or capabilities; saves only what changed.
    ``expected_updated_at``: when it last changed as the caller saw it (StaleStateError
    when it changed since)."""
    require(actor, role=Role.AUTHOR, action=CHANGING_PROMPTS)
    _refuse_unknown("interface_update", changes, INTERFACE_FIELDS)
    interface = _locked(interface, expected_updated_at)
    _check_interface(changes, interface)
    return _save_changes(interface, changes, actor)


@transaction.atomic
def interface_delete(
    *, actor: Actor, interface: Interface, expected_updated_at: datetime | None = None
) -> None:
    """Delete an interface no adapter instruction uses; ``expected_updated_at`` as for
    interface_update."""
    require(actor, role=Role.AUTHOR, action=CHANGING_PROMPTS)
    interface = _locked(interface, expected_updated_at)
    record_actor(interface, actor)
    try:
        with transaction.atomic():
            interface.delete()
    except ProtectedError as exc:
        raise InUseError(
            f"Interface '{interface.name}' still has {len(exc.protected_objects)} adapter "
            "instructions; delete those first."
        ) from None
    prompts_changed()


def _check_adapter(changes: dict[str, Any]) -> None:
    errors: dict[str, list[str]] = {}
    if "interface" in changes and not isinstance(changes["interface"], Interface):
        errors["interface"] = ["Expected an interface."]
    if "task" in changes:
        task = changes["task"]
        if not isinstance(task, str) or not NAME_RE.fullmatch(task):
            errors["task"] = [NAME_HELP]
    if "order" in changes:
        order = changes["order"]
        if isinstance(order, bool) or not isinstance(order, int) or abs(order) > MAX_ORDER:
            errors["order"] = [f"Expected an integer between -{MAX_ORDER} and {MAX_ORDER}."]
    for field in ("system_addition", "user_addition"):
        if field not in changes:
            continue
        text = changes[field]
        if not isinstance(text, str):
            errors[field] = ["Expected text."]
            continue
        if len(text) > MAX_ADDITION:
            errors[field] = [f"At most {MAX_ADDITION} characters."]
            continue
        try:
            check_stored_json(text)
            parse(text, "curly")
        except StoredJsonError as error:
            errors[field] = [error.message]
        except TemplateSyntaxError as error:
            errors[field] = [str(error)]
    if "active" in changes and not isinstance(changes["active"], bool):
        errors["active"] = ["Expected true or false."]
    if errors:
        raise ValidationError(errors)


@transaction.atomic
def adapter_instruction_create(
    *,
    actor: Actor,
    interface: Interface,
    task: str,
    order: int = 0,
    system_addition: str = "",
    user_addition: str = "",
    active: bool = True,
) -> AdapterInstruction:
    """Register text an adapter adds for (interface, task): curly templates, rendered with
    the caller's instruction context."""
    require(actor, role=Role.AUTHOR, action=CHANGING_PROMPTS)
    fields = {
        "interface": interface,
        "task": task,
        "order": order,
        "system_addition": normalize_newlines(system_addition),
        "user_addition": normalize_newlines(user_addition),
        "active": active,
    }
    _check_adapter(fields)
    instruction = AdapterInstruction(**fields)
    record_actor(instruction, actor)
    instruction.save()
    prompts_changed()
    return instruction


@transaction.atomic
def adapter_instruction_update(
    *,
    actor: Actor,
    instruction: AdapterInstruction,
    expected_updated_at: datetime | None = None,
    **changes: Any,
) -> AdapterInstruction:
    """Change some of an adapter instruction's fields; saves only what changed.
    ``expected_updated_at`` as for interface_update."""
    require(actor, role=Role.AUTHOR, action=CHANGING_PROMPTS)
    _refuse_unknown("adapter_instruction_update", changes, ADAPTER_FIELDS)
    instruction = _locked(instruction, expected_updated_at)
    changes = {
        name: normalize_newlines(value) if name in ADAPTER_TEXTS else value
        for name, value in changes.items()
    }
    _check_adapter(changes)
    return _save_changes(instruction, changes, actor)


@transaction.atomic
def adapter_instruction_delete(
    *, actor: Actor, instruction: AdapterInstruction, expected_updated_at: datetime | None = None
) -> None:
    """Delete an adapter instruction; ``expected_updated_at`` as for interface_update."""
    require(actor, role=Role.AUTHOR, action=CHANGING_PROMPTS)
    instruction = _locked(instruction, expected_updated_at)
    record_actor(instruction, actor)
    instruction.delete()
    prompts_changed()
