"""Every count on the preview comes from the same source as the list beside it.

What was seen (issue 21, item 4): the summary said "16 cuts" while "What was cut" said
"10 cuts, 6 put back". Random requests are assembled, shaped by the presenter and rendered
with the page's own template; the counts the page shows are checked against the lists it
shows (no database: the page is rendered from the assembler's result alone).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from types import SimpleNamespace
from typing import Any

from django.template.loader import render_to_string
from hypothesis import given
from hypothesis import strategies as st

from assembler import AssemblyRequest, assemble
from assembler.explain import CHANGE_KIND_WORDS
from assembler.request import DYNAMIC_SCOPES, HISTORY_SCOPE
from promptadmin.content.assembly import Preview
from promptadmin.studio.presenters import present
from tests.assembler.builders import cinder_gate
from tests.assembler.test_properties import PROPERTY, TOKENIZER, requests


class Page(HTMLParser):
    """What a reader sees of the preview's result: the counts and the lists beside them."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.texts: dict[str, str] = {}  # by data-testid, of the elements that count
        self.lost: list[dict[str, str]] = []  # the outcome's items, in order
        self.steps: list[str] = []  # the trace's steps, by action
        self.npcs: dict[str, str] = {}  # the NPC table: status by slug
        self.layers: dict[str, str] = {}  # the layers table: status by scope
        self._open: list[tuple[str, str | None]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        testid = found.get("data-testid")
        if tag == "li" and "data-kind" in found:
            self.lost.append({"kind": found["data-kind"] or "", "key": found["data-key"] or ""})
        if tag == "li" and "step" in (found.get("class") or "").split():
            self.steps.append((found.get("class") or "").split("step-")[-1])
        if tag == "tr" and "data-npc" in found:
            self.npcs[found["data-npc"] or ""] = found["data-status"] or ""
        if tag == "tr" and "data-scope" in found:
            self.layers[found["data-scope"] or ""] = found["data-status"] or ""
        if tag == "summary" and self._inside("trace"):
            testid = "trace-summary"
        self._open.append((tag, testid))
        if testid:
            self.texts[testid] = ""

    def handle_endtag(self, tag: str) -> None:
        while self._open:
            if self._open.pop()[0] == tag:
                break

    def handle_data(self, data: str) -> None:
        for _tag, testid in self._open:
            if testid:
                self.texts[testid] += data

    def _inside(self, testid: str) -> bool:
        return any(open_id == testid for _tag, open_id in self._open)

    def text(self, testid: str) -> str:
        return " ".join(self.texts[testid].split())


def rendered(request: AssemblyRequest) -> tuple[Any, Page]:
    result = assemble(request, TOKENIZER)
    preview = Preview(result=result, segments=[fate.to_dict() for fate in result.segments])
    page = present(preview, {npc.slug: npc.name for npc in request.npcs})
    # The result needs of the form only whether it was bound with errors.
    form = SimpleNamespace(is_bound=False, errors={})
    context = {"preview": page, "form": form}
    html = render_to_string("studio/preview.html#result", context)
    # The trace's steps are sent when it is opened: what the reader then sees below it.
    opened = render_to_string("studio/preview.html#steps", context)
    return result, Page(html + opened)


def said_counts(lost: list[dict[str, str]]) -> str:
    """The counts a reader would make of the list: "2 left out, 1 lowered"."""
    kinds = [item["kind"] for item in lost]
    counts = [f"{kinds.count(kind)} {words}" for kind, words in CHANGE_KIND_WORDS.items()]
    return ", ".join(count for count in counts if not count.startswith("0 ")) or "nothing cut"


def check_page_agrees_with_itself(result: Any, page: Page) -> None:
    counts = said_counts(page.lost)
    # The summary's counts and the "What was cut" line both count the list below them.
    assert page.text("outcome-counts") == counts
    summary = page.text("outcome-summary")
    if not result.meta.over_budget:
        assert summary.endswith(f" tokens, {counts}.")
    # The folded trace counts its own steps.
    if page.steps:
        taken = sum(action != "restored" for action in page.steps)
        restored = len(page.steps) - taken
        step_word = "step" if len(page.steps) == 1 else "steps"
        assert page.text("trace-summary") == (
            f"Step by step: {len(page.steps)} {step_word} ({taken} taken, {restored} put back)"
        )
    else:
        assert "trace-summary" not in page.texts
    # The NPC table and the layers table say what the list says.
    keys = {item["key"]: item["kind"] for item in page.lost}
    for slug, status in page.npcs.items():
        expected = {"dropped": "left_out", "lowered": "lowered"}.get(status)
        assert keys.get(f"npc:{slug}") == expected, (slug, status)
    for scope in (HISTORY_SCOPE, *DYNAMIC_SCOPES):
        status = page.layers.get(scope, "empty")
        expected = {"dropped": "left_out", "trimmed": "shortened"}.get(status)
        assert keys.get(f"layer:{scope}") == expected, (scope, status)
    # Nothing in the list is the trace's "put back": the list is the net result.
    assert all(item["kind"] in CHANGE_KIND_WORDS for item in page.lost)


def test_the_cinder_gate_preview_leads_with_three_facts_and_folds_the_trace() -> None:
    result, page = rendered(cinder_gate())
    assert page.text("outcome-counts") == "2 left out, 1 lowered"
    assert [item["key"] for item in page.lost] == [
        "segment:44",
        "npc:lysa-quill",
        "npc:oren-flint",
    ]
    assert page.steps.count("restored") == 5 and len(page.steps) == 14
    check_page_agrees_with_itself(result, page)
    outcome = page.text("outcome")
    assert "World segment #44 'The long war' (1201 tokens) left out: it alone is larger" in outcome
    assert "NPC 'Oren Flint' lowered from tier 2 to 1" in outcome
    assert not re.search(r"Oren Flint'? \(\d+ tokens\) left out", outcome)


@PROPERTY
@given(requests(npc_budget=st.one_of(st.integers(0, 200), st.just(100_000))))
def test_the_previews_counts_agree_with_its_lists(request: AssemblyRequest) -> None:
    check_page_agrees_with_itself(*rendered(request))
