"""What the studio's forms share: service errors on fields, object pickers, JSON boxes."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.db import models

from promptadmin.content.kinds import KINDS, kind_of
from promptadmin.content.models import SEGMENT_SCOPES, is_slug
from promptadmin.core.storedjson import StoredJsonError, check_stored_json, loads
from promptadmin.core.templatetags.bidi import isolate

# Only the assemblable scopes are ever offered for writing.
SCOPE_CHOICES = [(scope.value, scope.label) for scope in SEGMENT_SCOPES]


def add_service_errors(
    form: forms.Form, error: ValidationError, rename: Mapping[str, str] | None = None
) -> None:
    """Show a service's ``ValidationError`` on the form, next to the fields it names."""
    rename = rename or {}
    if not hasattr(error, "error_dict"):
        form.add_error(None, error)
        return
    for name, messages in error.message_dict.items():
        field = rename.get(name, name)
        form.add_error(field if field in form.fields else None, messages)


def object_value(obj: models.Model) -> str:
    """How an object is named in pickers and URLs: ``world:iron-coast``."""
    return f"{kind_of(obj).key}:{obj.slug}"  # type: ignore[attr-defined]


def object_choices(kinds: Iterable[str]) -> list[tuple[str, list[tuple[str, str]]]]:
    """Grouped choices of the objects of ``kinds`` (one query per kind)."""
    groups = []
    for kind in kinds:
        objects = KINDS[kind].model._default_manager.order_by("name", "slug")
        options = [(object_value(obj), f"{isolate(obj.name)} ({obj.slug})") for obj in objects]
        groups.append((KINDS[kind].plural, options))
    return groups


def resolve_object(value: str) -> models.Model | None:
    """The object named ``kind:slug``, or None when there is no such object."""
    kind, _, slug = value.partition(":")
    if kind not in KINDS or not is_slug(slug):
        return None
    return KINDS[kind].model._default_manager.filter(slug=slug).first()


def json_object(raw: str, what: str) -> dict[str, Any]:
    """The JSON object typed in a box, checked as every stored JSON value is."""
    try:
        value = loads(raw)
    except json.JSONDecodeError as exc:
        raise ValidationError(
            f"{what} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})."
        ) from None
    except RecursionError:
        raise ValidationError(f"{what} nests objects or arrays too deeply.") from None
    except ValueError as exc:
        raise ValidationError(f"{what} is not valid JSON: {exc}.") from None
    if not isinstance(value, dict):
        raise ValidationError(
            f'{what} must be a JSON object in braces, for example {{"title": "Old wars"}}.'
        )
    try:
        check_stored_json(value)
    except StoredJsonError as error:
        raise ValidationError(f"{what}: {error.explanation}") from None
    return value
