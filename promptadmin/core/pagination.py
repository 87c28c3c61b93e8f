"""Pages of a list whose cost does not grow with the table: the studio's and the admin's.

A page is read with ``LIMIT``/``OFFSET`` and counted with a *capped* count
(``SELECT COUNT(*) FROM (SELECT 1 ... LIMIT cap + 1)``): past ``COUNT_CAP`` matching rows
the page says "more than 1,000" and offers the next page instead of a total, so showing
page 1 of 100,000 segments reads 26 rows and counts at most 1,001.

Both ends of a list are cheap. The last page (``?page=last``, and ``last-1`` for the one
before it...) is read from the end, in the list's order reversed, as the first page is
from the start (like a mail client's "Oldest"): an uncounted list still has a last page,
one click away. A page deep in the middle pays for the rows it skips, but only as keys:
the page's primary keys are read first (from the index of the list's order), then those
rows with their joins (a "deferred join"), so an offset walks an index, never joined rows.

>>> page = paginate(range(60), "2")
>>> page.items[0], page.number, page.total, page.has_next, page.has_previous
(25, 2, 60, True, True)
>>> paginate(range(60), "nonsense").number, paginate(range(60), "99").number
(1, 3)
>>> paginate(range(60), "last").items[0], paginate(range(60), "last-1").number
(50, 2)
>>> uncounted = paginate(range(60), "last", cap=10)
>>> uncounted.items[0], uncounted.number, uncounted.position, uncounted.has_previous
(35, None, 'last page', True)
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
# The deepest page a list serves, from either end: an offset costs the keys it skips.
MAX_PAGE = 10_000
# How a page counted from the end is asked for: ``last``, ``last-1`` (the one before)...
LAST = "last"


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


def pages_after(raw: object) -> int | None:
    """For a page counted from the end (``last``, ``last-2``), how many pages follow it
    (0: the last page); None for any other value.

    >>> pages_after("last"), pages_after("last-2"), pages_after("3"), pages_after("last-x")
    (0, 2, None, None)
    """
    text = str(raw or "").strip()
    if text == LAST:
        return 0
    before = text.removeprefix(f"{LAST}-")
    if before == text or not before.isascii() or not before.isdigit() or len(before) > 6:
        return None
    return min(int(before), MAX_PAGE - 1)


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a list, and what its navigation shows."""

    items: list[T]
    number: int | None  # None: counted from the end of an uncounted list (see ``after``)
    per_page: int
    total: int | None  # None: more than ``cap`` rows match
    has_next: bool
    cap: int = COUNT_CAP
    query: QueryDict | None = None  # the request's, for the links to other pages
    param: str = "page"
    reordered: bool = False  # read in ``capped_order``: more rows matched than the cap
    # Counted from the end (the total unknown): how many pages follow this one, and
    # whether rows come before it.
    after: int | None = None
    rows_before: bool = False
    # The list's order can be read backwards: an uncounted list offers its last page.
    reversible: bool = True

    def url(self, number: int | str) -> str:
        """The link to page ``number`` (or ``last``, ``last-1``...), keeping every other
        parameter (page 1: none)."""
        query = self.query.copy() if self.query is not None else QueryDict(mutable=True)
        query.pop(self.param, None)
        if number != 1:
            query[self.param] = str(number)
        return f"?{query.urlencode()}"

    def url_after(self, after: int) -> str:
        """The link to the page followed by ``after`` pages (0: the last one)."""
        return self.url(f"{LAST}-{after}" if after else LAST)

    @property
    def previous_url(self) -> str:
        if self.number is None:
            return self.url_after((self.after or 0) + 1)
        return self.url(self.number - 1)

    @property
    def next_url(self) -> str:
        if self.number is None:
            return self.url_after((self.after or 0) - 1)
        return self.url(self.number + 1)

    @property
    def first_url(self) -> str:
        return self.url(1)

    @property
    def last_url(self) -> str:
        pages = self.num_pages
        return self.url(pages) if pages is not None else self.url_after(0)

    @property
    def has_previous(self) -> bool:
        return self.rows_before if self.number is None else self.number > 1

    @property
    def shows_first(self) -> bool:
        """A link to page 1 besides "previous" (which leads elsewhere)."""
        return self.has_previous and (self.number is None or self.number > 2)

    @property
    def shows_last(self) -> bool:
        """A link to the last page besides "next": the total is known and "next" is not
        the last page, or unknown and the list can be read from its end."""
        if not self.has_next:
            return False
        pages = self.num_pages
        if pages is not None:
            return self.number is not None and self.number < pages - 1
        return self.reversible and self.after != 1

    @property
    def position(self) -> str:
        """Where this page is, in words: "page 3 of 7", "page 3", "last page", "page 2
        from the end"."""
        if self.number is None:
            return "last page" if not self.after else f"page {self.after + 1} from the end"
        pages = self.num_pages
        return f"page {self.number} of {pages}" if pages else f"page {self.number}"

    @property
    def previous_page_number(self) -> int | None:
        return None if self.number is None else self.number - 1

    @property
    def next_page_number(self) -> int | None:
        return None if self.number is None else self.number + 1

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
    def start_index(self) -> int | None:
        """The first row's position in the list (None: counted from an unknown end)."""
        if self.number is None:
            return None
        return (self.number - 1) * self.per_page + 1 if self.items else 0

    @property
    def end_index(self) -> int | None:
        if self.number is None:
            return None
        return (self.number - 1) * self.per_page + len(self.items)

    def __iter__(self) -> Any:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


def reversible(rows: QuerySet[Any] | Sequence[Any]) -> bool:
    """Whether ``rows`` can be read from its end: a sequence, or an ordered queryset."""
    return not isinstance(rows, QuerySet) or rows.ordered


def read_rows(
    rows: QuerySet[Any] | Sequence[Any], start: int, count: int, *, backwards: bool = False
) -> list[Any]:
    """``count`` rows of ``rows`` from ``start`` (from the end, ``backwards``: then in the
    list's order reversed), in one query.

    A queryset is read with a deferred join: ``WHERE pk IN (SELECT pk ... ORDER BY ...
    LIMIT count OFFSET start)``, so the rows skipped are read as keys (from the index
    that backs the order, when there is one), and only the page's rows are joined."""
    if not isinstance(rows, QuerySet):
        if backwards:
            end = max(len(rows) - start, 0)
            return list(rows[max(end - count, 0) : end])[::-1]
        return list(rows[start : start + count])
    if backwards:
        rows = rows.reverse()
    if rows.query.distinct or rows.query.combinator or not rows.ordered:
        return list(rows[start : start + count])
    keys = rows.values("pk")[start : start + count]
    return list(rows.filter(pk__in=keys))


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
    """Page ``number`` (as given in a URL: anything that is not a page number is page 1;
    ``last``, ``last-1``... count from the end; a page past the end is the last one, one
    before the start the first) of ``rows``, in two queries whatever their number: the
    capped count and the page itself (read one row further, to know whether another page
    lies beyond). Only a page past either end of an uncounted list takes a third.

    ``capped_order``: how to order ``rows`` (a queryset) instead when more than ``cap``
    match, for an order that must look at every row (a search's rank) where an indexed
    one reads only the page."""
    wanted = page_number(number)
    after = pages_after(number)
    counted = capped_count(rows, cap)
    total = counted if counted <= cap else None
    reordered = False
    if total is not None:
        pages = max(1, -(-total // per_page))
        wanted = min(max(pages - after, 1) if after is not None else wanted, pages)
        after = None
    elif capped_order is not None and isinstance(rows, QuerySet):
        rows, reordered = rows.order_by(*capped_order), True
    can_reverse = reversible(rows)
    if after is not None and can_reverse:
        page = _from_end(rows, after, per_page, total, cap, query, param, reordered)
        if page.items or not after:
            return page
        wanted = 1  # before the start of an uncounted list: its first page
    items = read_rows(rows, (wanted - 1) * per_page, per_page + 1)
    if not items and wanted > 1 and can_reverse:
        # Past the end of an uncounted list: its last page, as a counted list shows.
        return _from_end(rows, 0, per_page, total, cap, query, param, reordered)
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
        reversible=can_reverse,
    )


def _from_end(
    rows: QuerySet[Any] | Sequence[Any],
    after: int,
    per_page: int,
    total: int | None,
    cap: int,
    query: QueryDict | None,
    param: str,
    reordered: bool,
) -> Page[Any]:
    """The page of an uncounted list followed by ``after`` pages: read backwards."""
    items = read_rows(rows, after * per_page, per_page + 1, backwards=True)
    return Page(
        items=items[:per_page][::-1],
        number=None,
        per_page=per_page,
        total=total,
        has_next=after > 0,
        cap=cap,
        query=query,
        param=param,
        reordered=reordered,
        after=after,
        rows_before=len(items) > per_page,
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
