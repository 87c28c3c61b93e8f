"""Pages of a list: both ends are one click and one page's reading away, and a page deep
in the middle reads the keys it skips, never their joined rows."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.http import QueryDict
from django.test.utils import CaptureQueriesContext

from promptadmin.content.models import Segment
from promptadmin.core.pagination import MAX_PAGE, pages_after, paginate, read_rows

ROWS = list(range(60))


def test_the_last_page_of_an_uncounted_list_is_its_last_rows_in_order() -> None:
    last = paginate(ROWS, "last", per_page=25, cap=10)
    assert (last.items, last.number, last.total) == (ROWS[35:], None, None)
    assert (last.has_next, last.has_previous, last.position) == (False, True, "last page")
    assert last.previous_url == "?page=last-1"
    before = paginate(ROWS, "last-1", per_page=25, cap=10)
    assert (before.items, before.position, before.next_url) == (
        ROWS[10:35],
        "page 2 from the end",
        "?page=last",
    )
    # The first rows, reached from the end: what is left, and nothing before them.
    start = paginate(ROWS, "last-2", per_page=25, cap=10)
    assert (start.items, start.has_previous, start.has_next) == (ROWS[:10], False, True)


def test_last_on_a_counted_list_is_its_numbered_last_page() -> None:
    assert paginate(ROWS, "last").number == 3
    assert paginate(ROWS, "last-1").items == ROWS[25:50]
    assert paginate(ROWS, "last-9").number == 1  # before the start: the first page


def test_past_either_end_of_an_uncounted_list_is_its_last_or_first_page() -> None:
    past = paginate(ROWS, str(MAX_PAGE), per_page=25, cap=10)
    assert (past.items, past.position) == (ROWS[35:], "last page")
    before = paginate(ROWS, f"last-{MAX_PAGE}", per_page=25, cap=10)
    assert (before.items, before.number) == (ROWS[:25], 1)


@pytest.mark.parametrize("asked", ["last-", "last-x", "last-\uff12", "LAST", "last--1", "-1"])
def test_anything_else_is_no_page_from_the_end(asked: str) -> None:
    assert pages_after(asked) is None
    assert paginate(ROWS, asked, per_page=25, cap=10).number == 1


def test_the_links_say_where_they_lead() -> None:
    query = QueryDict("scope=core&page=5")
    middle = paginate(ROWS, "5", per_page=5, cap=10, query=query)
    assert (middle.first_url, middle.previous_url, middle.next_url) == (
        "?scope=core",
        "?scope=core&page=4",
        "?scope=core&page=6",
    )
    assert (middle.shows_first, middle.shows_last, middle.last_url) == (
        True,
        True,
        "?scope=core&page=last",
    )
    counted = paginate(ROWS, "2", per_page=25, query=query)
    # Counted: "Last" is a number, and not shown beside a "next" that is the last page.
    assert (counted.last_url, counted.shows_last, counted.shows_first) == (
        "?scope=core&page=3",
        False,
        False,
    )
    assert paginate(ROWS, "1", per_page=10, query=query).shows_last


@pytest.mark.django_db
def test_a_queryset_page_reads_its_keys_first_then_joins_only_its_rows() -> None:
    Segment.objects.bulk_create(
        Segment(scope="core", content=f"Core {n}.", sort_order=n) for n in range(12)
    )
    rows = Segment.objects.select_related("updated_by").order_by("-sort_order", "-id")
    with CaptureQueriesContext(connection) as queries:
        page = read_rows(rows, 5, 4)
    assert [s.sort_order for s in page] == [6, 5, 4, 3]
    (sql,) = [q["sql"] for q in queries.captured_queries]
    outer, _, keys = sql.partition("IN (SELECT")
    assert "auth_user" in outer and "auth_user" not in keys  # joined: the page's rows only
    assert "LIMIT 4 OFFSET 5" in keys
    backwards = read_rows(rows, 0, 3, backwards=True)
    assert [s.sort_order for s in backwards] == [0, 1, 2]


@pytest.mark.django_db
def test_a_queryset_with_no_order_has_no_last_page_to_offer() -> None:
    Segment.objects.bulk_create(Segment(scope="core", content=f"Core {n}.") for n in range(12))
    unordered: Any = Segment.objects.all().order_by()
    page = paginate(unordered, "last", per_page=5, cap=10)
    assert page.number == 1 and not page.shows_last
