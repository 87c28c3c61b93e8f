"""Reads of lore: lists for the API and the studio, and the lore book assembly uses.

A :class:`assembler.LoreBook` builds its matcher once (about a quarter of a second for
10,000 entries), so a process keeps the books it built: by the world and the lore
generation (a token every lore change replaces, see :mod:`promptadmin.core.cache`), and
by their content, so that a change to one world's lore, which changes the generation,
costs the other worlds one query and no rebuild. A large book's matcher is also shared
through the cache, by its content: a new process (a gunicorn worker after a restart) reads
it instead of building it again.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

from django.core.cache import cache
from django.db.models import Q, QuerySet, Sum

import assembler
from assembler.lore import LoreActivation, matcher_key
from assembler.lore import LoreEntry as AssemblerLoreEntry
from promptadmin.content.models import World
from promptadmin.content.search import word_search
from promptadmin.core.cache import generation
from promptadmin.core.tokens import count_if_current, tokenizer
from promptadmin.lore.models import ASSEMBLED_FIELDS, LoreEntry, assembled_entry

LORE_GENERATION_KEY = "lore:generation"

logger = logging.getLogger(__name__)

# Books a process keeps: one per world served, and a few more while lore is being edited.
KEPT_BOOKS = 16
# A book of this many entries or more shares its matcher with the other processes through
# the cache: at 10,000 entries (30,000 keys) building it takes about 0.2 s, reading it 20
# ms; below, building costs less than the round trip. The matcher's name is its content's
# (``assembler.lore.matcher_key``), so a kept one is never stale, only unused a while.
SHARED_MATCHER_FROM = 500
MATCHER_TTL_SECONDS = 24 * 3600

# What a release's lore bundle keeps of each active entry: what assembly uses.
BUNDLE_FIELDS = ("id", *ASSEMBLED_FIELDS, "token_count", "token_encoding")

_COLUMNS = BUNDLE_FIELDS


class _Books:
    """Lore books by key, least recently used out first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._books: OrderedDict[Any, assembler.LoreBook | None] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> tuple[bool, assembler.LoreBook | None]:
        with self._lock:
            if key not in self._books:
                return False, None
            self._books.move_to_end(key)
            return True, self._books[key]

    def put(self, key: Any, book: assembler.LoreBook | None) -> None:
        with self._lock:
            self._books[key] = book
            while len(self._books) > self.size:
                self._books.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._books.clear()


_by_generation = _Books(KEPT_BOOKS)
_by_content = _Books(KEPT_BOOKS)
# Releases' books, by the hashes of the lore bundles they are made of.
_by_bundles = _Books(KEPT_BOOKS)


def active_lore(world_slug: str | None) -> QuerySet[LoreEntry, dict[str, Any]]:
    """The active entries of the world ``world_slug`` and those of every world (only the
    latter for None), as rows of :data:`BUNDLE_FIELDS`."""
    belongs = Q(world__isnull=True)
    if world_slug is not None:
        belongs |= Q(world__slug=world_slug)
    return LoreEntry.objects.filter(belongs, active=True).order_by("id").values(*_COLUMNS)


def assembler_entries(rows: Iterable[Mapping[str, Any]]) -> tuple[AssemblerLoreEntry, ...]:
    """The assembler's entries for ``rows`` of :data:`BUNDLE_FIELDS` (their cached counts,
    where still valid)."""
    return tuple(
        assembled_entry(
            row, count_if_current(row.get("token_count"), row.get("token_encoding", ""))
        )
        for row in rows
    )


def book_of(entries: tuple[AssemblerLoreEntry, ...]) -> assembler.LoreBook | None:
    """The book of ``entries`` (None when there are none), built once per content."""
    if not entries:
        return None
    found, book = _by_content.get(entries)
    if not found:
        book = _built(entries)
        _by_content.put(entries, book)
    return book


def _built(entries: tuple[AssemblerLoreEntry, ...]) -> assembler.LoreBook:
    """A new book of ``entries``; a large one's matcher is read from the shared cache
    when another process built it already, and kept there when this one builds it."""
    if len(entries) < SHARED_MATCHER_FROM:
        return assembler.LoreBook(entries)
    key = f"lore:matcher:{matcher_key(entries)}"
    matcher = cache.get(key)
    if matcher is not None:
        try:
            return assembler.LoreBook(entries, prebuilt=matcher)
        except (TypeError, ValueError):  # not a matcher: build it as if it was not there
            logger.warning("lore: the shared matcher %s was unreadable; building it", key)
    book = assembler.LoreBook(entries)
    cache.set(key, book.matcher, MATCHER_TTL_SECONDS)
    return book


def lore_book(world_slug: str | None) -> assembler.LoreBook | None:
    """The working copy's lore for an assembly in world ``world_slug``: its active entries
    and those of every world (None when there are none). No query while the lore is
    unchanged since this process last built it."""
    key = (generation(LORE_GENERATION_KEY), world_slug)
    found, book = _by_generation.get(key)
    if found:
        return book
    book = book_of(assembler_entries(active_lore(world_slug)))
    _by_generation.put(key, book)
    return book


def lore_rows(worlds: Collection[int | None] | None = None) -> dict[str, list[dict[str, Any]]]:
    """The working copy's active lore entries as release bundles hold them (each a row of
    :data:`BUNDLE_FIELDS`, its token count made afresh when made with another encoding), by
    world slug, "" for every world's; one query. ``worlds``: only those of these worlds
    (ids; None: every world's lore)."""
    found: dict[str, list[dict[str, Any]]] = {}
    tok = tokenizer()
    entries = LoreEntry.objects.filter(active=True)
    if worlds is not None:
        ids = [pk for pk in worlds if pk is not None]
        entries = entries.filter(
            Q(world_id__in=ids) | Q(world__isnull=True) if None in worlds else Q(world_id__in=ids)
        )
    rows = entries.order_by("id").values(*BUNDLE_FIELDS, "world__slug")
    for row in rows:
        world = row.pop("world__slug") or ""
        if row["token_count"] is None or row["token_encoding"] != tok.name:
            row["token_count"], row["token_encoding"] = tok.count(row["content"]), tok.name
        found.setdefault(world, []).append(row)
    return found


def bundle_book(
    key: tuple[str, ...], rows: Callable[[], Sequence[Mapping[str, Any]]]
) -> assembler.LoreBook | None:
    """The book of a release's lore bundles named ``key`` (their hashes), from the
    bundles' ``rows()`` (of :func:`lore_rows`) when this process has not built it yet."""
    found, book = _by_bundles.get(key)
    if not found:
        book = book_of(assembler_entries(sorted(rows(), key=lambda row: int(row["id"]))))
        _by_bundles.put(key, book)
    return book


def lore_test(world_slug: str | None, text: str) -> list[LoreActivation]:
    """Which of the working copy's entries ``text`` triggers in a world, and why
    (:func:`assembler.test_lore`; constant entries, which no text triggers, left out).
    Raises :class:`assembler.lore.LoreError` for a text over the limit."""
    book = lore_book(world_slug)
    if book is None:
        return []
    return assembler.test_lore(book, text)


def lore_list(
    *,
    world: str | None = None,
    every_world: bool = False,
    group: str | None = None,
    active: bool | None = None,
    search: str | None = None,
) -> QuerySet[LoreEntry]:
    """Lore entries, most important first, filtered: ``world`` (a slug: that world's own
    entries; ``every_world``: those of every world), ``group``, ``active``, ``search``
    (every word starts a word of the title, the keys or the content, any case: on
    PostgreSQL from the ``lore_search`` GIN index, see :mod:`promptadmin.content.search`)."""
    entries = LoreEntry.objects.select_related("world").order_by("-priority", "id")
    if every_world:
        entries = entries.filter(world__isnull=True)
    elif world is not None:
        entries = entries.filter(world__slug=world)
    if group is not None:
        entries = entries.filter(group=group)
    if active is not None:
        entries = entries.filter(active=active)
    if search:
        # Without the index, the keys are looked for in their JSON text.
        entries = word_search(entries, search, fields=("title", "content", "keys"))
    return entries


def lore_groups(world: str | None = None) -> list[str]:
    """The group names in use (in a world's own entries, when ``world`` is given)."""
    entries = LoreEntry.objects.exclude(group="")
    if world is not None:
        entries = entries.filter(world__slug=world)
    return list(entries.order_by("group").values_list("group", flat=True).distinct())


def lore_total_tokens(entries: QuerySet[LoreEntry]) -> int:
    """The tokens of ``entries``' content, all together (from the cached counts)."""
    return int(entries.order_by().aggregate(total=Sum("token_count"))["total"] or 0)


def world_by_id(pk: int) -> World | None:
    """The world with id ``pk``, None once deleted (a revision may name one)."""
    return World.objects.filter(pk=pk).first()


def lore_revisions(entry: LoreEntry) -> list[Any]:
    """Every recorded state of ``entry``, newest first."""
    return list(
        entry.history.select_related("history_user", "world").order_by("-history_id")  # type: ignore[attr-defined]
    )
