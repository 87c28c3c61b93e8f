"""Every studio list is a page: its queries do not grow with the rows behind it, and its
count stops at a cap."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from promptadmin.content.models import Entry, Segment, World
from promptadmin.content.services import catalog, health, segments
from promptadmin.conversations import services as conversations
from promptadmin.conversations.models import Conversation, Summary, SummaryStatus
from promptadmin.core.pagination import MAX_PAGE, PAGE_SIZE, Page, paginate
from promptadmin.prompts.models import Prompt
from promptadmin.prompts.services import prompts
from promptadmin.releases import services as releases
from promptadmin.studio import selectors
from promptadmin.studio.forms.segments import SegmentFilterForm
from tests.factories import EntryFactory, NPCFactory, RulesetFactory, WorldFactory, make_segment

pytestmark = pytest.mark.usefixtures("content")


def grow_segments(n: int) -> None:
    for i in range(n):
        make_segment(scope="core", content=f"More core text {i}.", title=f"Core {i}")


def grow_entries(n: int) -> None:
    world, ruleset = World.objects.get(slug="iron-coast"), RulesetFactory()
    for _i in range(n):
        entry = EntryFactory(world=world)
        catalog.entry_update(actor=None, entry=entry, rulesets=[ruleset])
        make_segment(scope="entry", ref=entry, content="A scene.")


def grow_catalog(factory: Callable[[], Any], scope: str) -> Callable[[int], None]:
    def grow(n: int) -> None:
        for _i in range(n):
            make_segment(scope=scope, ref=factory(), content="Some text.")

    return grow


def grow_prompts(n: int) -> None:
    start = Prompt.objects.count()
    for i in range(start, start + n):
        prompt = prompts.prompt_create(actor=None, component=f"comp{i}", agent="narrator")
        prompts.prompt_version_create(
            actor=None,
            prompt=prompt,
            system="Hello {{ name }}.",
            user_templates={"default": "Go."},
            labels=["staging"],
        )


def talk(n: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"Message {i}."} for i in range(n)]


@pytest.fixture(autouse=True)
def no_summaries() -> Any:
    with mock.patch("promptadmin.conversations.tasks.enqueue_summary"):
        yield


def grow_conversations(n: int) -> None:
    for i in range(n):
        conversations.conversation_append(actor=None, key=f"run:{i}", messages=talk(1))


def grow_messages(n: int) -> None:
    conversations.conversation_append(actor=None, key="long", messages=talk(n))
    conversation = Conversation.objects.get(key="long")
    for _i in range(n):
        Summary.objects.create(
            conversation=conversation,
            requested_through=1,
            status=SummaryStatus.FAILED,
            created_at=timezone.now(),
        )


def grow_releases(n: int) -> None:
    for _i in range(n):
        releases.release_create(actor=None, labels=["production"])


def grow_versions(n: int) -> None:
    prompt = Prompt.objects.get_or_create(component="narration", agent="narrator")[0]
    for _i in range(n):
        prompts.prompt_version_create(
            actor=None,
            prompt=prompt,
            system="Hi.",
            user_templates={"default": "Go."},
            labels=["staging"],
            commit_message="again",
        )


def grow_deprecated(n: int) -> None:
    for i in range(n):
        segments.segment_import_legacy(
            actor=None, scope="player", content=f"Old text {i}.", metadata={"original_ref": "x"}
        )


def grow_world_page(n: int) -> None:
    world = World.objects.get(slug="iron-coast")
    for i in range(n):
        make_segment(scope="world", ref=world, content=f"Lore {i}.")
        EntryFactory(world=world)


def grow_entry_page(n: int) -> None:
    entry = Entry.objects.get(slug="drowned-bell")
    for i in range(n):
        make_segment(scope="entry", ref=entry, content=f"Scene {i}.")


def grow_findings(n: int) -> None:
    EntryFactory.create_batch(n, world=World.objects.get(slug="iron-coast"))
    health.entry_health_check()


LISTS: dict[str, tuple[str, Callable[[int], None]]] = {
    "segments": ("/segments/", grow_segments),
    "segment search": ("/segments/?q=core+text", grow_segments),
    "entries": ("/entries/", grow_entries),
    "worlds": ("/worlds/", grow_catalog(WorldFactory, "world")),
    "rulesets": ("/rulesets/", grow_catalog(RulesetFactory, "ruleset")),
    "npcs": ("/npcs/", grow_catalog(NPCFactory, "npc")),
    "prompts": ("/prompts/", grow_prompts),
    "conversations": ("/conversations/", grow_conversations),
    "messages and summaries": ("/conversations/long/", grow_messages),
    "releases and label history": ("/releases/", grow_releases),
    "prompt versions and label history": ("/prompts/{prompt}/", grow_versions),
    "deprecated rows": ("/deprecated/", grow_deprecated),
    "a world's segments and entries": ("/worlds/iron-coast/", grow_world_page),
    "an entry's segments": ("/entries/drowned-bell/", grow_entry_page),
    "entries with findings": ("/health/", grow_findings),
}


@pytest.mark.parametrize("name", list(LISTS))
def test_each_list_costs_the_same_queries_with_3_rows_or_30(
    name: str, client_as: Callable[[str], Client], django_assert_num_queries: Any
) -> None:
    url, grow = LISTS[name]
    admin = client_as("admin")
    grow(3)
    if "{prompt}" in url:
        url = url.format(prompt=Prompt.objects.get(component="narration").pk)
    admin.get(url)  # the session, the tokenizer, the release labels in the cache
    with CaptureQueriesContext(connection) as three:
        first = admin.get(url)
    assert first.status_code == 200
    grow(27)
    with django_assert_num_queries(len(three)):
        response = admin.get(url)
    assert response.status_code == 200
    # What it shows is a page, whose next page holds the rest.
    # (A ContextList iterates over its contexts: its keys are what every template saw.)
    pages = [response.context[key] for key in response.context.keys()]  # noqa: SIM118
    pages = [value for value in pages if isinstance(value, Page)]
    assert pages and all(len(page.items) <= PAGE_SIZE for page in pages)
    assert any(page.has_next for page in pages)


def test_a_list_shows_a_page_of_rows_and_links_to_the_next(viewer: Client) -> None:
    grow_segments(30)
    first = viewer.get("/segments/", {"scope": "core", "sort": "id"})
    page = first.context["page"]
    assert (len(page.items), page.total, page.num_pages, page.has_next) == (PAGE_SIZE, 31, 2, True)
    assert '<a href="?scope=core&amp;sort=id&amp;page=2"' in first.content.decode()
    second = viewer.get("/segments/", {"scope": "core", "sort": "id", "page": "2"})
    assert len(second.context["page"].items) == 6
    assert '<a href="?scope=core&amp;sort=id"' in second.content.decode()  # page 1: no param


@pytest.mark.parametrize("asked", ["0", "-3", "x", "9" * 30, "\uff12", "1.5"])
def test_any_page_number_is_a_page(viewer: Client, asked: str) -> None:
    response = viewer.get("/segments/", {"page": asked})
    assert response.status_code == 200
    assert response.context["page"].number == 1


def test_past_the_cap_a_list_says_more_than_and_offers_the_next_page() -> None:
    rows = list(range(12))
    page = paginate(rows, "2", per_page=5, cap=10)
    assert (page.total, page.num_pages, page.number, page.has_next) == (None, None, 2, True)
    # A page past the end is the last page, counted or not (read from its end).
    past = paginate(rows, "9", per_page=5, cap=10)
    assert (past.items, past.number, past.after) == ([7, 8, 9, 10, 11], None, 0)
    assert paginate(rows, "9", per_page=5, cap=20).number == 3  # counted: the last page


def test_a_count_stops_at_the_cap(viewer: Client, django_assert_max_num_queries: Any) -> None:
    Segment.objects.bulk_create(
        Segment(scope="core", content=f"Bulk {n}.", token_count=2) for n in range(1001)
    )
    with CaptureQueriesContext(connection) as queries:
        html = viewer.get("/segments/").content.decode()
    assert "More than 1000 segments, page 1" in html
    (count,) = [q["sql"] for q in queries.captured_queries if "COUNT(*)" in q["sql"]]
    assert "LIMIT 1001" in count


def bulk_segments(n: int) -> None:
    """``n`` more core segments, each a second newer than the one before (ids in step)."""
    start = timezone.now() - timedelta(days=1)
    made = Segment.objects.bulk_create(
        Segment(scope="core", content=f"Bulk {i}.", token_count=2) for i in range(n)
    )
    for i, segment in enumerate(made):
        segment.updated_at = start + timedelta(seconds=i)
    Segment.objects.bulk_update(made, ["updated_at"])


def segment_ids(html: str) -> list[int]:
    return [int(pk) for pk in re.findall(r'<td class="num"><a href="/segments/(\d+)/">', html)]


def test_an_uncounted_list_links_to_its_last_page_read_from_its_end(viewer: Client) -> None:
    bulk_segments(1030)
    first = viewer.get("/segments/", {"scope": "core"}).content.decode()
    assert "More than 1000 segments, page 1" in first
    assert "narrow the search" not in first  # nothing searched: nothing reordered
    assert 'href="?scope=core&amp;page=last" hx-get="?scope=core&amp;page=last" rel="last"' in first
    oldest = list(
        Segment.objects.filter(scope="core")
        .order_by("updated_at", "id")
        .values_list("pk", flat=True)[:PAGE_SIZE]
    )
    last = viewer.get("/segments/", {"scope": "core", "page": "last"})
    html = last.content.decode()
    # The oldest changes, shown in the list's order (newest first), and nothing after them.
    assert segment_ids(html) == oldest[::-1]
    assert "More than 1000 segments, last page" in html
    assert 'href="?scope=core&amp;page=last-1"' in html and 'rel="next"' not in html
    before = viewer.get("/segments/", {"scope": "core", "page": "last-1"}).content.decode()
    shown = segment_ids(before)
    assert len(shown) == PAGE_SIZE and min(shown) > max(oldest)
    assert 'href="?scope=core&amp;page=last"' in before


def test_a_deep_page_shows_the_rows_at_its_offset(viewer: Client) -> None:
    bulk_segments(1030)
    newest_first = list(Segment.objects.order_by("-updated_at", "-id").values_list("pk", flat=True))
    html = viewer.get("/segments/", {"page": "30"}).content.decode()
    assert segment_ids(html) == newest_first[29 * PAGE_SIZE : 30 * PAGE_SIZE]
    by_tokens = list(Segment.objects.order_by("token_count", "id").values_list("pk", flat=True))
    html = viewer.get("/segments/", {"sort": "tokens", "page": "last-2"}).content.decode()
    assert segment_ids(html) == by_tokens[-3 * PAGE_SIZE : -2 * PAGE_SIZE]


@pytest.mark.parametrize("page", ["1", "30", "last", "last-1", str(MAX_PAGE - 1)])
def test_any_page_of_an_uncounted_list_costs_the_same_queries_whatever_its_size(
    client_as: Callable[[str], Client], django_assert_num_queries: Any, page: str
) -> None:
    admin = client_as("admin")
    bulk_segments(1030)
    admin.get("/segments/")  # the session, the tokenizer, the release labels in the cache
    with CaptureQueriesContext(connection) as first:
        admin.get("/segments/")
    with CaptureQueriesContext(connection) as asked:
        assert admin.get("/segments/", {"page": page}).status_code == 200
    # Past the end: the last page instead, read from the end (one query more).
    assert len(asked) == len(first) + (page == str(MAX_PAGE - 1))
    bulk_segments(1030)
    with django_assert_num_queries(len(asked)):
        assert admin.get("/segments/", {"page": page}).status_code == 200


def _plan(queryset: Any) -> str:
    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        # Sorting is priced out: a plan that still sorts has no index to read the order from.
        cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute(f"EXPLAIN {sql}", params)
        return "\n".join(row[0] for row in cursor.fetchall())


# Every sort the list offers, and the filters that narrow it most, in the default order.
ORDERS = [
    *((sort, {}) for sort in SegmentFilterForm.SORTS),
    ("-updated", {"scope": "npc"}),
    ("-updated", {"active": False}),
]


@pytest.mark.postgres
@pytest.mark.parametrize(("sort", "filters"), ORDERS, ids=[f"{s} {f}" for s, f in ORDERS])
def test_every_order_of_the_segment_list_is_read_from_an_index_from_either_end(
    sort: str, filters: dict[str, Any]
) -> None:
    rows = selectors.segment_list(order_by=SegmentFilterForm.SORTS[sort][1], **filters)
    for keys in (rows.values("pk")[:26], rows.reverse().values("pk")[:26]):
        plan = _plan(keys)
        assert "Sort" not in plan, plan
        assert "Index" in plan, plan
        # Nor walked through another order's index, dropping the rows the filter refuses.
        assert "Filter:" not in plan, plan
