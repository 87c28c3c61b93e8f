"""Segment search: every word a prefix, the best matches first, through the index on
PostgreSQL, and a scan of the same meaning elsewhere."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

from promptadmin.content import search
from promptadmin.content.models import Segment
from tests.factories import NPCFactory, UserFactory, make_segment

pytestmark = pytest.mark.django_db


@pytest.fixture
def texts() -> dict[str, Segment]:
    marta = NPCFactory(slug="marta-vell", name="Marta Vell")
    return {
        "oath": make_segment(content="The keeper swore an oath by the lantern light."),
        "title": make_segment(content="Nothing else here.", title="Lantern oath"),
        "lantern": make_segment(content="A lantern swings in the fog."),
        "marta": make_segment(scope="npc", ref=marta, content="Harbourmaster; counts ropes."),
    }


def found(text: str) -> list[Segment]:
    return list(search.segment_search(Segment.objects.all(), text).order_by("-rank", "id"))


def test_a_search_finds_words_by_their_beginning_and_needs_every_word(texts: dict) -> None:
    assert set(found("lant")) == {texts["oath"], texts["title"], texts["lantern"]}
    assert set(found("lant oat")) == {texts["oath"], texts["title"]}
    assert found("lantern pier") == []
    assert found("MARTA harbour") == [texts["marta"]]  # the owner's name counts as a word


@pytest.mark.postgres
def test_matches_in_the_title_rank_first(texts: dict) -> None:
    assert found("lantern oath") == [texts["title"], texts["oath"]]


@pytest.mark.postgres
def test_the_search_reads_the_index_never_the_whole_table(texts: dict) -> None:
    queryset = search.segment_search(Segment.objects.all(), "lantern oath").order_by("-rank")
    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        # A table this small is cheaper to scan: forbid it, so only an index can answer.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "segment_search" in plan, plan
    assert "Seq Scan on promptadmin_segment" not in plan, plan


@pytest.mark.postgres
def test_the_stored_search_column_follows_every_edit(texts: dict) -> None:
    from promptadmin.content.services import segments

    segments.segment_update(actor=None, segment=texts["lantern"], content="A candle, now.")
    assert texts["lantern"] not in found("lantern")
    assert found("candle") == [texts["lantern"]]


def test_the_fallback_without_the_index_finds_the_same_rows(texts: dict) -> None:
    # What SQLite runs (make run): each word anywhere in the title, text or owner's name.
    every = Segment.objects.all()
    assert set(search.fallback_search(every, ["lant", "oat"])) == {texts["oath"], texts["title"]}
    assert set(search.fallback_search(every, ["marta"])) == {texts["marta"]}
    assert list(search.fallback_search(every, ["lantern", "pier"])) == []


def test_without_postgresql_the_search_takes_the_fallback(
    texts: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search, "uses_index", lambda queryset: False)
    queryset = search.segment_search(Segment.objects.all(), "lant oat")
    assert "search" not in str(queryset.query).split("WHERE")[1]  # no stored column read
    assert set(queryset) == {texts["oath"], texts["title"]}


@pytest.mark.parametrize(
    "typed", ["", "  ", "!!!", "'&|:*()", "\x00", "\ud800", "a" * 10_000, "lantern:* | !oath"]
)
def test_anything_typed_is_words_or_nothing(texts: dict, typed: str) -> None:
    words = search.search_words(typed)
    assert all(word.isalnum() for word in words)
    assert len(words) <= search.MAX_WORDS
    found(typed)  # never a query error


def test_search_words_keep_letters_and_digits_only() -> None:
    assert search.search_words("Lantern, OATH! d20 l'orée #12") == [
        "lantern",
        "oath",
        "d20",
        "l",
        "orée",
        "12",
    ]
    assert search.prefix_query(["a", "b"]) == "a:* & b:*"


def list_ids(client: Client, **query: str) -> list[int]:
    page = client.get(reverse("studio:segment_list"), query).context["page"]
    return [segment.pk for segment in page.items]


@pytest.fixture
def reader(db: None) -> Client:
    client = Client()
    client.force_login(UserFactory())
    return client


@pytest.mark.postgres
def test_the_best_matches_come_first_across_the_pages_of_a_search(reader: Client) -> None:
    # Two titles and the text of 28 more: ranked, the titles lead page 1, and the pages
    # (each read by its keys, then joined) hold every match once.
    titled = [make_segment(content="Quiet.", title=f"Lantern oath {n}") for n in range(2)]
    texts = [make_segment(content=f"An oath, a lantern, {n}.") for n in range(28)]
    first = list_ids(reader, q="lant oat")
    second = list_ids(reader, q="lant oat", page="2")
    assert set(first[:2]) == {segment.pk for segment in titled}
    assert sorted(first + second) == sorted(s.pk for s in titled + texts)
    assert list_ids(reader, q="lant oat", page="last") == second


@pytest.mark.postgres
def test_the_search_index_holds_every_row_as_it_is_written() -> None:
    # No pending list that every search reads until a vacuum merges it (issue 22).
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = 'segment_search'")
        (options,) = cursor.fetchone()
    assert "fastupdate=off" in options


def test_without_postgresql_the_segment_list_searches_by_scanning(
    texts: dict, reader: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search, "uses_index", lambda queryset: False)
    assert set(list_ids(reader, q="lant oat")) == {texts["oath"].pk, texts["title"].pk}
    assert list_ids(reader, q="marta harb", page="last") == [texts["marta"].pk]
