"""Cuts and expectations: what a prompt lost, and whether it meets what authors expect."""

from __future__ import annotations

import pytest

from assembler import (
    AssemblyRequest,
    LoreBook,
    LoreEntry,
    LoreOptions,
    Npc,
    Segment,
    assemble,
    get_tokenizer,
)
from assembler.impact import Expectation, ExpectationError, cuts, failure, parse_expectation

TOKENIZER = get_tokenizer()


def result(budget: int, *, world: str = "The sea is old.", npcs: tuple[Npc, ...] = ()):  # type: ignore[no-untyped-def]
    request = AssemblyRequest(
        core=[Segment(1, "core", "You narrate.")],
        rulesets=[],
        world=[Segment(2, "world", world, title="Sea"), Segment(3, "world", "Gulls cry.")],
        entry=[],
        entry_start=[],
        npcs=list(npcs),
        state={"input": "I look around. " * 20},
        first_turn=False,
        token_budget=budget,
    )
    return assemble(request, TOKENIZER)


def test_nothing_cut_means_no_cuts_and_every_expectation_met() -> None:
    roomy = result(2000)
    assert cuts(roomy) == {}
    for data in (
        {"kind": "fits"},
        {"kind": "keeps_segment", "segment": 2},
        {"kind": "contains", "text": "Gulls cry."},
        {"kind": "max_tokens", "tokens": 2000},
    ):
        assert failure(parse_expectation(data), roomy) is None


def test_a_dropped_segment_is_a_cut_in_plain_words() -> None:
    tight = result(60, world="The sea is old. " * 30)
    found = cuts(tight)
    assert "segment:2" in found
    assert found["segment:2"].startswith("World segment #2 'Sea'")
    assert "left out" in found["segment:2"]


def test_a_lore_entry_left_out_is_a_cut_and_one_grouped_out_is_not() -> None:
    book = LoreBook(
        [
            LoreEntry(7, "Bell", "The bell of the chapel. " * 30, keys=("bell",), group="g"),
            LoreEntry(8, "Small bell", "A small bell.", keys=("bell",), group="g", priority=-1),
            LoreEntry(9, "Draft", " ", keys=("bell",)),
        ]
    )
    request = AssemblyRequest(
        core=[Segment(1, "core", "You narrate.")],
        rulesets=[],
        world=[Segment(2, "world", "The sea is old.")],
        entry=[],
        entry_start=[],
        npcs=[],
        state={"input": "I ring the bell."},
        first_turn=False,
        token_budget=2000,
        lore=LoreOptions(budget=40),
        lore_book=book,
    )
    lost = cuts(assemble(request, TOKENIZER))
    assert lost == {
        "lore:7": "Lore entry #7 'Bell' (181 tokens) left out: it alone is larger than the "
        "40-token lore budget"
    }
    assert failure(parse_expectation({"kind": "fits"}), assemble(request, TOKENIZER)) == (
        "1 cut: " + lost["lore:7"]
    )


def test_a_cut_put_back_is_not_a_cut() -> None:
    # Segment 3 is dropped, then 2; once the prompt fits, 3 is put back: only 2 is missing.
    tight = result(60, world="The sea is old. " * 5)
    actions = [(step.action, step.segment_id) for step in tight.meta.truncated]
    assert ("dropped", 3) in actions and ("restored", 3) in actions
    found = cuts(tight)
    assert "segment:3" not in found
    assert "segment:2" in found and "put back" not in found["segment:2"]
    # The input was trimmed, then lengthened again: still shorter than asked, so a cut,
    # worded by its net result rather than by the put-back.
    input_cut = found.get("layer:input shortened") or found["layer:input"]
    assert "shortened" in input_cut or "left out" in input_cut
    assert "given back" not in input_cut


def test_failures_say_why_in_plain_words() -> None:
    tight = result(60, world="The sea is old. " * 30)
    assert failure(Expectation("fits"), tight).startswith(f"{len(cuts(tight))} cut")  # type: ignore[union-attr]
    kept = failure(Expectation("keeps_segment", segment=2), tight)
    assert kept is not None and kept.startswith("segment #2 is not in the prompt: World segment")
    absent = failure(Expectation("keeps_segment", segment=99), tight)
    assert absent == "segment #99 is not in the prompt (it is not part of this scenario's content)"
    assert failure(Expectation("contains", text="sea is old"), tight) == (
        "no 'sea is old' in the prompt"
    )
    over = failure(Expectation("max_tokens", tokens=10), tight)
    assert over == f"the prompt has {tight.meta.tokens} tokens, {tight.meta.tokens - 10} over 10"


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ("fits", "kind"),
        ({"kind": "guess"}, "kind"),
        ({"kind": {}}, "kind"),
        ({"kind": ["fits"]}, "kind"),
        ({"kind": "fits", "tokens": 3}, "tokens"),
        ({"kind": "keeps_segment"}, "segment"),
        ({"kind": "keeps_segment", "segment": True}, "segment"),
        ({"kind": "keeps_segment", "segment": 0}, "segment"),
        ({"kind": "contains", "text": "  "}, "text"),
        ({"kind": "contains", "text": "x" * 2001}, "text"),
        ({"kind": "max_tokens", "tokens": 1.5}, "tokens"),
        ({"kind": "max_tokens", "tokens": 10**9}, "tokens"),
    ],
)
def test_bad_expectations_name_the_bad_key(data: object, field: str) -> None:
    with pytest.raises(ExpectationError) as caught:
        parse_expectation(data)
    assert caught.value.field == field


def test_expectations_round_trip_and_describe_themselves() -> None:
    for data, words in (
        ({"kind": "fits"}, "fits without cuts"),
        ({"kind": "keeps_segment", "segment": 12}, "keeps segment #12"),
        ({"kind": "contains", "text": "bell"}, "contains 'bell'"),
        ({"kind": "max_tokens", "tokens": 500}, "at most 500 tokens"),
    ):
        expectation = parse_expectation(data)
        assert expectation.to_dict() == data
        assert expectation.description == words
