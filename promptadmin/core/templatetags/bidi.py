"""Names and titles people type, shown isolated from the text around them.

A name can hold right-to-left characters or direction overrides (U+202E): left alone,
they reorder the words around it ("Delete <name> now" could read as something else).
``bdi`` wraps a value in ``<bdi>`` for element content; ``isolate`` wraps it in the
Unicode isolates FSI ... PDI for places markup cannot go (attributes, ``<title>``). Both
escape the value like any variable. An ``<option>`` gets neither: it takes
``dir="auto"``, which isolates it (see ``studio.forms.common.AutoDirSelect``), since an
invisible first character would stop typing a letter to pick it.

>>> print(bdi("Marta\u202e"))
<bdi>Marta\u202e</bdi>
>>> isolate("Marta") == "\u2068Marta\u2069"
True
"""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

register = template.Library()

FIRST_STRONG_ISOLATE = "\u2068"
POP_DIRECTIONAL_ISOLATE = "\u2069"


@register.filter
def bdi(value: Any) -> SafeString:
    return format_html("<bdi>{}</bdi>", value)


@register.filter
def isolate(value: Any) -> str:
    return f"{FIRST_STRONG_ISOLATE}{value}{POP_DIRECTIONAL_ISOLATE}"
