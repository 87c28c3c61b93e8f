"""What the studio's forms share: service errors on fields, object pickers, JSON boxes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from django import forms
from django.core.exceptions import ValidationError
from django.db import models

from promptadmin.content.kinds import KINDS, kind_of
from promptadmin.content.models import SEGMENT_SCOPES, is_slug
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
