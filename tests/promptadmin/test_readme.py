"""The README's Quick start runs as written: its commands name real make targets, the
virtualenv's Python, real management commands and the port ``make run`` serves on; the
benchmark figures live in their own section."""

from __future__ import annotations

import itertools
import re
import shlex
from pathlib import Path

from django.core.management import get_commands

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
MAKEFILE = (ROOT / "Makefile").read_text()


def section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else None]


QUICK_START = section("Quick start")
# Shell lines of its code blocks, continuations joined, comments dropped.
COMMANDS = [
    line
    for block in re.findall(r"```sh\n([\s\S]*?)```", QUICK_START)
    for line in (
        re.sub(r"\s+#.*$", "", raw).strip() for raw in block.replace("\\\n", " ").splitlines()
    )
    if line
]
TARGETS = set(re.findall(r"^([a-z][a-z-]*):", MAKEFILE, re.MULTILINE))


def makefile_variable(name: str) -> str:
    match = re.search(rf"^{name}\s*[?:]?=\s*(\S+)", MAKEFILE, re.MULTILINE)
    assert match, name
    return match[1]


def test_the_quick_start_has_commands_to_run() -> None:
    assert any(command.startswith("make run") for command in COMMANDS)
    assert any("curl" in command for command in COMMANDS)


def test_every_make_command_is_a_target_of_the_makefile() -> None:
    named = re.findall(r"\bmake ([a-z][a-z-]*)", QUICK_START)
    assert named
    assert set(named) <= TARGETS, set(named) - TARGETS


def test_python_is_the_virtualenv_s_that_make_run_installs_and_commands_exist() -> None:
    venv = makefile_variable("VENV")
    words = [word for command in COMMANDS for word in shlex.split(command.replace("$(", "( "))]
    pythons = [w for w, nxt in itertools.pairwise(words) if nxt == "manage.py"]
    assert pythons and set(pythons) == {f"{venv}/bin/python"}, pythons
    assert (ROOT / "manage.py").is_file()
    commands = [nxt for w, nxt in itertools.pairwise(words) if w == "manage.py"]
    assert commands and set(commands) <= set(get_commands()), commands


def test_the_api_is_called_on_the_port_make_run_serves() -> None:
    default = makefile_variable("PORT")
    # ``make run`` reads PORT from the environment; the calls use the same variable.
    exported = [m for c in COMMANDS for m in re.findall(r"^export PORT=(\d+)$", c)]
    assert exported and set(exported) == {default}
    urls = re.findall(r"https?://[^\s\"']+", " ".join(COMMANDS))
    assert urls and all(url.startswith("http://127.0.0.1:$PORT/") for url in urls), urls
    for port in re.findall(r"127\.0\.0\.1:(\d+)", QUICK_START):
        assert port == default
    assert makefile_variable("HOST") == "127.0.0.1"


def test_benchmark_figures_are_in_their_own_section() -> None:
    figures = r"\d[\d,.]* ?(?:ms|s|req/s|rows/s)\b"
    assert re.findall(figures, QUICK_START) == []
    benchmarks = section("Benchmarks")
    assert re.findall(figures, benchmarks)
    for target in sorted(t for t in TARGETS if t.startswith("bench")):
        assert f"make {target}`" in benchmarks, target
