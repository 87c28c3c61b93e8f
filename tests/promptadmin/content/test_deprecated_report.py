"""``manage.py deprecated_report``: deprecated rows per old scope and review status."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from promptadmin.content.services import deprecated, segments

pytestmark = pytest.mark.django_db


def report(*args: str) -> str:
    out = StringIO()
    call_command("deprecated_report", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def reviewed() -> None:
    """Two pending player rows, a copied rng row, a dismissed input row (and live content)."""
    rows = [
        segments.segment_import_legacy(actor=None, scope=scope, content=f"Old {scope} {n}.")
        for n, scope in enumerate(["player", "player", "rng", "input"])
    ]
    deprecated.deprecated_copy(actor=None, segment=rows[2], scope="core", ref=None)
    deprecated.deprecated_dismiss(actor=None, segment=rows[3], reason="The caller sends it.")


@pytest.mark.usefixtures("reviewed")
def test_the_text_report_has_a_row_per_old_scope_and_the_totals() -> None:
    lines = report().splitlines()
    assert lines[0].split() == ["scope", "pending", "copied", "dismissed"]
    assert [line.split() for line in lines[1:6]] == [
        ["game_state", "0", "0", "0"],
        ["player", "2", "0", "0"],
        ["rng", "0", "1", "0"],
        ["input", "0", "0", "1"],
        ["total", "2", "1", "1"],
    ]
    assert lines[6] == (
        "2 pending: review them on the studio's Deprecated page (/deprecated/) or with the "
        "API (/api/v1/deprecated-segments/)."
    )
    assert len(lines) == 7


@pytest.mark.usefixtures("reviewed")
def test_the_json_report_gives_the_same_counts() -> None:
    assert json.loads(report("--json")) == {
        "scopes": {
            "game_state": {"pending": 0, "copied": 0, "dismissed": 0},
            "player": {"pending": 2, "copied": 0, "dismissed": 0},
            "rng": {"pending": 0, "copied": 1, "dismissed": 0},
            "input": {"pending": 0, "copied": 0, "dismissed": 1},
        },
        "total": {"pending": 2, "copied": 1, "dismissed": 1},
    }


def test_with_nothing_pending_the_report_points_nowhere() -> None:
    segments.segment_create(actor=None, scope="core", content="Live content is not counted.")
    text = report()
    assert text.splitlines()[-1].split() == ["total", "0", "0", "0"]
    assert "review them" not in text
    assert json.loads(report("--json"))["total"] == {"pending": 0, "copied": 0, "dismissed": 0}
