"""Errors of the prompts domain that the entry points turn into HTTP answers."""

from __future__ import annotations


class PromptLookupError(LookupError):
    """No prompt, version, label, interface or template by the name the caller gave
    (the API answers 404, naming what was missing)."""

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


class RenderInputError(ValueError):
    """Rendering input that names something unknown or leaves variables missing; ``errors``
    maps each request field to what was wrong (the API answers 400)."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items()))
