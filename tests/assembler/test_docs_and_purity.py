"""The assembler's docstring examples hold, and it imports nothing from the web stack."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import assembler

ROOT = Path(assembler.__file__).resolve().parents[1]
MODULES = [
    "assembler",
    *sorted(name for _, name, _ in pkgutil.iter_modules(assembler.__path__, "assembler.")),
]


def test_docstring_examples_are_true() -> None:
    attempted = 0
    for name in MODULES:
        result = doctest.testmod(importlib.import_module(name))
        assert result.failed == 0, f"{name}: {result.failed} docstring examples fail"
        attempted += result.attempted
    assert attempted > 0


def test_assembler_imports_no_django_drf_celery_or_promptadmin() -> None:
    script = (
        "import importlib, sys\n"
        f"for name in {MODULES!r}: importlib.import_module(name)\n"
        "forbidden = ('django', 'rest_framework', 'celery', 'promptadmin')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in forbidden))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    assert loaded.strip() == "[]"
