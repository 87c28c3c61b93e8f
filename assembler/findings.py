"""A lint finding: what lint rules (:mod:`assembler.lint`) produce and an assembly's
report (:class:`assembler.result.Meta`) carries.

Apart from the rules because the rules name segments in plain words
(:mod:`assembler.explain`), which in turn describe the result: the record both ends share
depends on neither.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

LintLevel: TypeAlias = Literal["error", "warning"]


@dataclass(slots=True)
class Lint:
    """One finding.

    >>> Lint("missing_world_segment", "error", "The world has no segments.").to_dict()
    ... # doctest: +NORMALIZE_WHITESPACE
    {'code': 'missing_world_segment', 'level': 'error', 'message': 'The world has no
    segments.'}
    """

    code: str
    level: LintLevel
    message: str

    def to_dict(self) -> dict[str, str]:
        """JSON-safe form: ``{"code": ..., "level": ..., "message": ...}``."""
        return {"code": self.code, "level": self.level, "message": self.message}
