"""Pages of a list whose cost does not grow with the table: the studio's and the admin's.

A page is read with ``LIMIT``/``OFFSET`` and counted with a *capped* count
(``SELECT COUNT(*) FROM (SELECT 1 ... LIMIT cap + 1)``): past ``COUNT_CAP`` matching rows
the page says "more than 1,000" and offers the next page instead of a total, so showing
page 1 of 100,000 segments reads 26 rows and counts at most 1,001.

>>> page = paginate(range(60), "2")
>>> page.items[0], page.number, page.total, page.has_next, page.has_previous
(25, 2, 60, True, True)
>>> paginate(range(60), "nonsense").number, paginate(range(60), "99").number
(1, 3)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import QueryDict
from django.utils.functional import cached_property

T = TypeVar("T")

# Rows per page on every studio list.
PAGE_SIZE = 25
# Rows per page on the admin's change lists.
ADMIN_PAGE_SIZE = 100
# Lists are counted exactly up to here; beyond, "more than COUNT_CAP".
COUNT_CAP = 1000
# The admin's counts stop here (its page links need a total; beyond, the pages past the
# cap are reached by narrowing the list).
ADMIN_COUNT_CAP = 10_000
# The deepest page a list serves: an OFFSET costs the rows it skips.
MAX_PAGE = 10_000


def capped_count(rows: QuerySet[Any] | Sequence[Any], cap: int) -> int:
    """How many rows ``rows`` holds, counting at most ``cap + 1`` of them."""
    if isinstance(rows, QuerySet):
        return rows.order_by().values("pk")[: cap + 1].count()
    return min(len(rows), cap + 1)


def page_number(raw: object) -> int:
    """The page asked for: a whole number from 1 to ``MAX_PAGE`` (else 1)."""
    text = str(raw or "").strip()
    if not text.isascii() or not text.isdigit() or len(text) > 6:
        return 1
    return min(max(int(text), 1), MAX_PAGE)


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a list, and what its navigation shows."""

    items: list[T]
    number: int
    per_page: int
    total: int | None  # None: more than ``cap`` rows match
    has_next: bool
    cap: int = COUNT_CAP
    query: QueryDict | None = None  # the request's, for the links to other pages
    param: str = "page"
    reordered: bool = False  # read in ``capped_order``: more rows matched than the cap

    def url(self, number: int) -> str:
        """The link to page ``number``, keeping every other parameter (page 1: none)."""
        query = self.query.copy() if self.query is not None else QueryDict(mutable=True)
        query.pop(self.param, None)
        if number > 1:
            query[self.param] = str(number)
        return f"?{query.urlencode()}"

    @property
    def previous_url(self) -> str:
        return self.url(self.number - 1)

    @property
    def next_url(self) -> str:
        return self.url(self.number + 1)

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def previous_page_number(self) -> int:
        return self.number - 1

    @property
    def next_page_number(self) -> int:
        return self.number + 1

    @property
    def num_pages(self) -> int | None:
        """How many pages there are, when the total is known."""
        if self.total is None:
            return None
        return max(1, -(-self.total // self.per_page))

    @property
    def is_paginated(self) -> bool:
        return self.has_previous or self.has_next

    @property
    def start_index(self) -> int:
        return (self.number - 1) * self.per_page + 1 if self.items else 0

    @property
    def end_index(self) -> int:
        return (self.number - 1) * self.per_page + len(self.items)

    def __iter__(self) -> Any:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


def paginate(
    rows: QuerySet[Any] | Sequence[Any],
    number: object = None,
    *,
    per_page: int = PAGE_SIZE,
    cap: int = COUNT_CAP,
    query: QueryDict | None = None,
    param: str = "page",
    capped_order: tuple[str, ...] | None = None,
) -> Page[Any]:
    """Page ``number`` (as given in a URL: anything that is not a page number is page 1,
    a page past the end is the last one when the total is known) of ``rows``, in two
    queries whatever their number: the capped count and the page itself (read one row
    further, to know whether a next page exists).

    ``capped_order``: how to order ``rows`` (a queryset) instead when more than ``cap``
    match, for an order that must look at every row (a search's rank) where an indexed
    one reads only the page."""
    wanted = page_number(number)
    counted = capped_count(rows, cap)
    total = counted if counted <= cap else None
    reordered = False
    if total is not None:
        wanted = min(wanted, max(1, -(-total // per_page)))
    elif capped_order is not None and isinstance(rows, QuerySet):
        rows, reordered = rows.order_by(*capped_order), True
    start = (wanted - 1) * per_page
    items = list(rows[start : start + per_page + 1])
    return Page(
        items=items[:per_page],
        number=wanted,
        per_page=per_page,
        total=total,
        has_next=len(items) > per_page,
        cap=cap,
        query=query,
        param=param,
        reordered=reordered,
    )


class CappedPaginator(Paginator):
    """Django's paginator (for the admin) with a count that stops at ``ADMIN_COUNT_CAP``:
    a change list of 100,000 rows counts 10,001 of them, not all."""

    def __init__(self, object_list: Any, per_page: int, *args: Any, **kwargs: Any) -> None:
        self.cap = kwargs.pop("cap", ADMIN_COUNT_CAP)
        super().__init__(object_list, per_page, *args, **kwargs)

    @cached_property
    def count(self) -> int:
        return min(capped_count(self.object_list, self.cap), self.cap)
