"""Every change to registered prompts, interfaces and adapter instructions.

Each service checks the actor's role (:func:`promptadmin.core.roles.require`), validates,
saves in one transaction, records who, and invalidates the prompt cache once the
transaction commits.
"""

from __future__ import annotations

from promptadmin.core.cache import generation_changed

#: The cache generation of registered prompts (see :mod:`promptadmin.core.cache`).
PROMPTS_GENERATION_KEY = "prompts:generation"
#: What the services' permission errors say an author's change is.
CHANGING_PROMPTS = "Changing prompts"


def prompts_changed() -> None:
    """Every cached prompt, interface and adapter lookup is stale once this commits."""
    generation_changed(PROMPTS_GENERATION_KEY)
