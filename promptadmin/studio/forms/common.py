"""What the studio's forms share: service errors on fields, object pickers, JSON boxes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.db import models

from promptadmin.content.kinds import KINDS, kind_of
from promptadmin.content.models import SEGMENT_SCOPES, is_slug

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


class AutoDirSelect(forms.Select):
    """A select whose every option takes its direction from its own text (``dir="auto"``).

    Option text cannot hold markup, so a name is not wrapped in ``<bdi>``; nor in the
    invisible isolate characters, which stood before every name and stopped typing a
    letter to pick an option (and screen readers and tests reading the labels). An option
    with a ``dir`` is isolated: a right-to-left name, or one holding an override, cannot
    reorder the text around it.
    """

    def create_option(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        option: dict[str, Any] = super().create_option(*args, **kwargs)
        option["attrs"]["dir"] = "auto"
        return option


def object_value(obj: models.Model) -> str:
    """How an object is named in pickers and URLs: ``world:iron-coast``."""
    return f"{kind_of(obj).key}:{obj.slug}"  # type: ignore[attr-defined]


def object_choices(kinds: Iterable[str]) -> list[tuple[str, list[tuple[str, str]]]]:
    """Grouped choices of the objects of ``kinds`` (one query per kind)."""
    groups = []
    for kind in kinds:
        objects = KINDS[kind].model._default_manager.order_by("name", "slug")
        options = [(object_value(obj), f"{obj.name} ({obj.slug})") for obj in objects]
        groups.append((KINDS[kind].plural, options))
    return groups


def resolve_object(value: str) -> models.Model | None:
    """The object named ``kind:slug``, or None when there is no such object."""
    kind, _, slug = value.partition(":")
    if kind not in KINDS or not is_slug(slug):
        return None
    return KINDS[kind].model._default_manager.filter(slug=slug).first()
