"""The lore list's search: every word starts a word of the title, the keys or the
content; on PostgreSQL through the ``lore_search`` GIN index (content.search's helper),
which the planner picks at 10,000 entries; a scan of the same meaning elsewhere."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from promptadmin.content import search
from promptadmin.lore import services
from promptadmin.lore.models import LoreEntry
from promptadmin.lore.selectors import lore_list
from tests.promptadmin.api.conftest import errors

pytestmark = pytest.mark.django_db


@pytest.fixture
def book() -> dict[str, LoreEntry]:
    def make(**fields: Any) -> LoreEntry:
        return services.lore_entry_create(actor=None, world=None, **fields)

    return {
        "oath": make(content="The keeper swore an oath by the lantern light.", keys=["keeper"]),
        "title": make(title="Lantern oath", content="Nothing else here.", keys=["vow"]),
        "key": make(content="Grey water.", keys=["Drowned Chapel", "bell"]),
    }


def found(text: str) -> set[int]:
    return set(lore_list(search=text).values_list("id", flat=True))


def test_every_word_starts_a_word_of_the_title_keys_or_content(book: dict) -> None:
    assert found("lant") == {book["oath"].pk, book["title"].pk}
    assert found("lant OATH") == {book["oath"].pk, book["title"].pk}
    assert found("chapel") == {book["key"].pk}  # a word of a key
    assert found("drown chap") == {book["key"].pk}
    assert found("lantern pier") == set()
    assert found("  ,, ") == {entry.pk for entry in book.values()}  # no words: no filter


def test_the_scan_without_the_index_finds_the_same_entries(book: dict) -> None:
    every = LoreEntry.objects.all()
    fields = ("title", "content", "keys")
    for text in (["lant"], ["lant", "oath"], ["chapel"], ["lantern", "pier"]):
        scanned = set(search.fallback_search(every, text, fields).values_list("id", flat=True))
        assert scanned == found(" ".join(text)), text


@pytest.mark.postgres
def test_the_stored_search_column_follows_every_edit(book: dict) -> None:
    services.lore_entry_update(actor=None, entry=book["key"], keys=["gong"])
    assert found("chapel") == set()
    assert found("gong") == {book["key"].pk}


@pytest.mark.postgres
def test_at_ten_thousand_entries_the_search_reads_the_index(book: dict) -> None:
    LoreEntry.objects.bulk_create(
        LoreEntry(content=f"Entry {n}: the tide, the rocks, the fog.", keys=[f"key{n}"])
        for n in range(10_000)
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE lore_loreentry")
    queryset = lore_list(search="lantern oath")
    assert {row.pk for row in queryset} == {book["oath"].pk, book["title"].pk}
    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "lore_search" in plan, plan
    assert "Seq Scan on lore_loreentry" not in plan, plan


def test_the_api_search_filter_and_hostile_text(book: dict) -> None:
    from promptadmin.content.services.api_keys import api_key_create
    from tests.promptadmin.api.conftest import key_client

    reader = key_client(api_key_create(actor=None, name="game-server", scope="read")[1])
    answer = reader.get("/api/v1/lore/", {"search": "drown chap"}).json()
    assert [row["id"] for row in answer["results"]] == [book["key"].pk]
    # Query syntax is only words: nothing a person types reaches to_tsquery as syntax.
    for typed in ("a & !b", "x:* | y", "'", "(((", "é:*"):
        assert reader.get("/api/v1/lore/", {"search": typed}).status_code == 200
    bad = reader.get("/api/v1/lore/", {"search": "a\x00b"})
    assert bad.status_code == 400 and "search" in errors(bad)
