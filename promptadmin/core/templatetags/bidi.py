"""Names and titles people type, shown isolated from the text around them.

A name can hold right-to-left characters or direction overrides (U+202E): left alone,
they reorder the words around it ("Delete <name> now" could read as something else).
``bdi`` wraps a value in ``<bdi>`` for element content; ``isolate`` wraps it in the
Unicode isolates FSI ... PDI for places markup cannot go (attributes, ``<title>``). Both
escape the value like any variable. An ``<option>`` gets neither: it takes
``dir="auto"``, which isolates it (see ``studio.forms.common.AutoDirSelect``), since an
invisible first character would stop typing a letter to pick it. Nor does a text box
(a picker's): it takes ``dir="auto"``, and its text, from :func:`labelled`, holds no
invisible character a name did not bring.

>>> print(bdi("Marta\u202e"))
<bdi>Marta\u202e</bdi>
>>> isolate("Marta") == "\u2068Marta\u2069"
True
>>> labelled("Marta Vell", "marta-vell")
'Marta Vell (marta-vell)'
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


# Embeddings and overrides (LRE, RLE, LRO, RLO) end at PDF; isolates (LRI, RLI, FSI) at PDI.
_OPENS = {"\u202a": "\u202c", "\u202b": "\u202c", "\u202d": "\u202c", "\u202e": "\u202c"}
_OPENS |= {"\u2066": "\u2069", "\u2067": "\u2069", "\u2068": "\u2069"}


def labelled(name: str, slug: str) -> str:
    """``Name (slug)`` as a form control shows an object (a picker's text box, read and
    copied as typed): no isolate around the name (the control's ``dir="auto"`` sets its
    direction), but a direction override or isolate the name leaves open is closed before
    the slug, which it would reorder. A name without one gets no invisible character."""
    stack: list[str] = []
    for char in name:
        if char in _OPENS:
            stack.append(_OPENS[char])
        elif char == "\u202c" and stack and stack[-1] == char:
            stack.pop()  # a PDF ends an embedding, never an isolate around it
        elif char == "\u2069" and char in stack:
            while stack.pop() != char:  # a PDI ends its isolate and what it holds
                pass
    return f"{name}{''.join(reversed(stack))} ({slug})"
