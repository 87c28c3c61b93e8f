"""What the studio's forms share: service errors on fields, object pickers, JSON boxes."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.db import models
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from assembler.request import MAX_BUDGET
from promptadmin.content.kinds import KINDS, kind_of
from promptadmin.content.models import SEGMENT_SCOPES, is_slug
from promptadmin.core.templatetags.bidi import labelled

# A token budget's box: the request parser words what is out of range.
BUDGET = forms.NumberInput(attrs={"min": 0, "max": MAX_BUDGET})


def optional_number(
    label: str, help_text: str, widget: forms.Widget = BUDGET
) -> forms.IntegerField:
    """A whole number a person may leave empty (the request's default then)."""
    return forms.IntegerField(required=False, widget=widget, label=label, help_text=help_text)


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

    It is written here, as Django's templates would write it, rather than by a template
    per option: a select of every world (250 in a large game) took 40 ms that way.
    """

    def create_option(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        option: dict[str, Any] = super().create_option(*args, **kwargs)
        option["attrs"]["dir"] = "auto"
        return option

    def render(self, name: str, value: Any, attrs: Any = None, renderer: Any = None) -> str:
        widget = self.get_context(name, value, attrs)["widget"]
        html = [format_html('<select name="{}"{}>', widget["name"], _attributes(widget["attrs"]))]
        for group, options, _index in widget["optgroups"]:
            if group:
                html.append(format_html('\n  <optgroup label="{}">', group))
            html += [
                format_html(
                    '\n  <option value="{}"{}>{}</option>',
                    option["value"],
                    _attributes(option["attrs"]),
                    option["label"],
                )
                for option in options
            ]
            if group:
                html.append("\n  </optgroup>")
        html.append("\n</select>")
        return mark_safe("".join(html))


def _attributes(attrs: Mapping[str, Any]) -> SafeString:
    """HTML attributes as Django's ``attrs.html`` writes them: in order, ``True`` as the
    bare name, ``False`` left out."""
    return mark_safe(  # each attribute is escaped by format_html
        "".join(
            format_html(" {}", name) if value is True else format_html(' {}="{}"', name, value)
            for name, value in attrs.items()
            if value is not False
        )
    )


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


def object_label(obj: models.Model) -> str:
    """How a picker's box shows a chosen object: ``The Iron Coast (iron-coast)``, with no
    invisible characters, so that it can be typed back as it reads."""
    return labelled(obj.name, obj.slug)  # type: ignore[attr-defined]


# "Name (slug)": what a picker shows, typed back (or kept) without JavaScript.
_LABELLED = re.compile(r"\((?P<slug>[^()\s]+)\)\s*$")


# Longer than any name and slug: not worth a query.
MAX_PICKED_LENGTH = 300


class AmbiguousObject(ValidationError):
    """Typed text naming several objects."""


def resolve_picked(value: str, kinds: Iterable[str]) -> models.Model | None:
    """The object a picker's value names, among ``kinds``: ``kind:slug`` (what picking
    an option sends), else what a person typed without JavaScript: ``Name (slug)``, a slug,
    or a name. None when nothing matches; ``AmbiguousObject`` when several do."""
    value = value.replace("\u2068", "").replace("\u2069", "").strip()  # a label's isolates
    kinds = tuple(kinds)
    if not value or len(value) > MAX_PICKED_LENGTH or "\x00" in value:
        return None
    kind, sep, _slug = value.partition(":")
    if sep and kind in KINDS:
        return resolve_object(value)
    labelled = _LABELLED.search(value)
    if labelled is not None:
        value = labelled["slug"]
    found: list[models.Model] = []
    for key in kinds:
        manager = KINDS[key].model._default_manager
        # A slug names one object of its kind; else a name, whatever its case.
        matches = list(manager.filter(slug=value)[:1]) if is_slug(value) else []
        found += matches or list(manager.filter(name__iexact=value)[:2])
    if len(found) > 1:
        listed = ", ".join(object_value(obj) for obj in found[:5])
        raise AmbiguousObject(f"Several objects are called '{value}': pick one ({listed}).")
    return found[0] if found else None


def clean_picked(value: str, kinds: Iterable[str] = tuple(KINDS)) -> models.Model | None:
    """What a form's :class:`ObjectPicker` field holds: None when left empty, else the
    object it names; a ValidationError on the field when it names none or several."""
    if not value:
        return None
    obj = resolve_picked(value, kinds)  # AmbiguousObject: an error on the field
    if obj is None:
        if ":" in value:
            raise ValidationError("That object no longer exists; choose another.")
        raise ValidationError(f"Nothing is called '{value}'; choose from the list.")
    return obj


class ObjectPicker(forms.Widget):
    """A searchable picker of worlds, rulesets, entries or NPCs: a text box that lists
    matches as you type (htmx asks ``studio:object_picker``; arrow keys and Enter choose,
    see studio.js) and a hidden input holding the choice as ``kind:slug``.

    Without JavaScript the text box is the field: a name, a slug or ``Name (slug)``
    typed there is resolved on the server (:func:`resolve_picked`).
    """

    template_name = "studio/_object_picker.html"

    def __init__(
        self, kinds: Iterable[str] = tuple(KINDS), attrs: Any = None, *, bare: bool = False
    ) -> None:
        super().__init__(attrs)
        self.kinds = tuple(kinds)
        # ``bare``: the value is the slug alone, as a link or a form of one kind names
        # its object (``?entry=cinder-gate``), not ``kind:slug``.
        if bare and len(self.kinds) != 1:
            raise ValueError("A bare picker picks objects of one kind.")
        self.bare = bare
        # Labels known to the caller (``kind:slug`` -> label), saving a query per picker
        # on pages that show many.
        self.labels: dict[str, str] = {}

    def search_name(self, name: str) -> str:
        return f"{name}_search"

    def value_from_datadict(self, data: Any, files: Any, name: str) -> str:
        """The picked ``kind:slug`` (a bare picker's: the slug); or the typed text when it
        no longer shows the pick (typed without JavaScript, or a draft restored)."""
        return self.chosen(data.get(name), data.get(self.search_name(name)))

    def chosen(self, picked: str | None, typed: str | None) -> str:
        """What a picker holding ``picked`` in its hidden input and ``typed`` in its box
        chose (for rows of pickers sharing one name, read side by side)."""
        picked, typed = (picked or "").strip(), (typed or "").strip()
        if not typed:
            return picked
        labelled = _LABELLED.search(typed)
        if picked and labelled is not None:
            slug = labelled["slug"]
            if picked == slug if self.bare else picked.endswith(f":{slug}"):
                return picked
        return typed

    def qualified(self, value: str) -> str:
        """``value`` as ``kind:slug`` when it is a bare picker's slug, else as it is."""
        if self.bare and value and ":" not in value and is_slug(value):
            return f"{self.kinds[0]}:{value}"
        return value

    def label_for(self, value: str) -> str:
        if not value:
            return ""
        qualified = self.qualified(value)
        if qualified in self.labels:
            return self.labels[qualified]
        kind, sep, _slug = qualified.partition(":")
        if not sep or kind not in KINDS:
            return value  # typed text, shown back as typed
        obj = resolve_object(qualified)
        return object_label(obj) if obj is not None else value

    def render(self, name: str, value: Any, attrs: Any = None, renderer: Any = None) -> str:
        # The project's templates (the default form renderer reads only the apps').
        return mark_safe(render_to_string(self.template_name, self.get_context(name, value, attrs)))

    def get_context(self, name: str, value: Any, attrs: Any) -> dict[str, Any]:
        context = super().get_context(name, value, attrs)
        value = "" if value is None else str(getattr(value, "slug", value))
        qualified = self.qualified(value)
        picked = qualified.partition(":")[0] in KINDS and ":" in qualified
        widget = context["widget"]
        widget_id = widget["attrs"].get("id") or f"id_{name}"
        widget.update(
            {
                "value": value if picked else "",
                "label": self.label_for(value),
                "search_name": self.search_name(name),
                "input_id": widget_id,
                "listbox_id": f"{widget_id}_options",
                "url": f"{reverse('studio:object_picker')}?kinds={','.join(self.kinds)}"
                f"&field={self.search_name(name)}{'&bare=1' if self.bare else ''}",
                "kinds": [KINDS[key].label for key in self.kinds],
            }
        )
        return context


def picked_slug(picker: ObjectPicker, picked: str | None, typed: str | None) -> str:
    """The slug a bare ``picker`` (one kind) holding ``picked`` and ``typed`` chose; what
    was typed, as typed, when it names no such object (or several): the caller's checks
    then say what is wrong with it."""
    value = picker.chosen(picked, typed)
    try:
        obj = resolve_picked(value, picker.kinds) if value else None
    except AmbiguousObject:
        return value
    return obj.slug if obj is not None and kind_of(obj).key in picker.kinds else value  # type: ignore[attr-defined]


def picked_labels(kind: str, slugs: Iterable[str]) -> dict[str, str]:
    """Pickers' labels for the objects of ``kind`` called ``slugs`` (one query), for
    :attr:`ObjectPicker.labels`: a page showing a row of pickers reads them at once."""
    rows = KINDS[kind].model._default_manager.filter(slug__in=[s for s in slugs if s])
    return {object_value(obj): object_label(obj) for obj in rows.only("slug", "name")}


class PickedObjectField(forms.Field):
    """An object of one kind, chosen with a bare :class:`ObjectPicker` (its slug, or a
    name typed without JavaScript): a select's replacement when the table may hold
    thousands of rows. Cleans to the object."""

    def __init__(self, kind: str, **kwargs: Any) -> None:
        kwargs.setdefault("widget", ObjectPicker((kind,), bare=True))
        super().__init__(**kwargs)
        self.kind = kind

    def prepare_value(self, value: Any) -> Any:
        return getattr(value, "slug", value)

    def to_python(self, value: Any) -> models.Model | None:
        if isinstance(value, models.Model) or value in self.empty_values:
            return value or None
        obj = resolve_picked(str(value), (self.kind,))  # AmbiguousObject: a field error
        if obj is None or kind_of(obj).key != self.kind:
            label = KINDS[self.kind].label
            raise ValidationError(f"No {label} is called '{value}'; choose from the list.")
        return obj


def picked_object(data: Any, name: str, kinds: tuple[str, ...]) -> models.Model | None:
    """The object of one of ``kinds`` an :class:`ObjectPicker` named ``name`` posted in
    ``data`` (for a view without a form); None when it names none, or several."""
    value = ObjectPicker(kinds).value_from_datadict(data, None, name)
    try:
        obj = resolve_picked(value, kinds)
    except AmbiguousObject:
        return None
    return obj if obj is not None and kind_of(obj).key in kinds else None
