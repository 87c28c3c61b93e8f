"""Every change to registered prompts, interfaces and adapter instructions.

Each service checks the actor may write, validates, saves in one transaction, records
who, and invalidates the prompt cache once the transaction commits.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied

from promptadmin.core.actors import Actor, is_key
from promptadmin.core.cache import generation_changed
from promptadmin.core.roles import can_edit

#: The cache generation of registered prompts (see :mod:`promptadmin.core.cache`).
PROMPTS_GENERATION_KEY = "prompts:generation"


def prompts_changed() -> None:
    """Every cached prompt, interface and adapter lookup is stale once this commits."""
    generation_changed(PROMPTS_GENERATION_KEY)


def check_can_write(actor: Actor) -> None:
    """Scripts (no actor), write keys, authors and admins may change registered prompts."""
    if actor is None:
        return
    if is_key(actor):
        if not getattr(actor, "can_write", False):
            raise PermissionDenied(
                f"API key '{actor.name}' has read scope: changing prompts needs a write key."
            )
        return
    if not can_edit(actor):
        raise PermissionDenied("Changing prompts needs the author or admin role.")
