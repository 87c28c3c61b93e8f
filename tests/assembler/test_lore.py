"""Living lore: matching, activation, the lore budget, truncation and meta.lore."""

from __future__ import annotations

import gc
import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assembler import (
    MAX_LORE_KEY_LENGTH,
    MAX_LORE_KEYS,
    AssemblyRequest,
    AssemblyResult,
    History,
    HistoryMessage,
    LoreBook,
    LoreEntry,
    LoreError,
    LoreOptions,
    Policy,
    RequestError,
    Tokenizer,
    assemble,
)
from assembler import lore as lore_module
from assembler.explain import layer_status_words
from assembler.render import block_open
from tests.assembler.builders import PROSE, conversation, npc, request, seg


def entry(id: int, *keys: str, content: str | None = None, **options: Any) -> LoreEntry:
    """A lore entry whose default content names it, so tests can find it in the prompt."""
    return LoreEntry(id, f"Entry {id}", content or f"Lore text {id}.", keys=keys, **options)


def matched(book: LoreBook, text: str) -> list[tuple[int, str]]:
    """(entry id, matched text) for every match, by entry id, then where it starts."""
    return [
        (book.entries[index].id, text[match.start : match.end])
        for index, matches in sorted(book.scan(text).items())
        for match in matches
    ]


def ids_triggered(book: LoreBook, text: str, **options: Any) -> list[int]:
    return [activation.entry.id for activation in lore_module.test_lore(book, text, **options)]


def lore_of(result: AssemblyResult) -> dict[int, dict[str, Any]]:
    return {report["id"]: report for report in result.meta.to_dict()["lore"]}


def lore_body(result: AssemblyResult) -> str:
    [text] = [block.text for block in result.blocks if block.scope == "lore"] or [""]
    return text


# Matching: whole words, case, punctuation, scripts, overlaps


def test_whole_words_match_a_key_only_between_word_boundaries() -> None:
    book = LoreBook([entry(1, "bell")])
    text = "The bell. bell's bell-tower bells doorbell Bell_ xbell"
    assert matched(book, text) == [(1, "bell"), (1, "bell"), (1, "bell")]
    assert [m.start for m in book.scan(text)[0]] == [4, 10, 17]


def test_without_whole_words_a_key_matches_inside_words() -> None:
    book = LoreBook([entry(1, "bell", whole_words=False)])
    assert len(matched(book, "bells doorbell")) == 2


def test_keys_match_in_any_case_unless_the_entry_is_case_sensitive() -> None:
    book = LoreBook([entry(1, "Bell"), entry(2, "Bell", case_sensitive=True)])
    assert matched(book, "BELL bell") == [(1, "BELL"), (1, "bell")]
    assert matched(book, "a Bell") == [(1, "Bell"), (2, "Bell")]


def test_case_folding_matches_what_lower_case_would_miss_and_keeps_offsets() -> None:
    # casefold, not lower: "STRASSE" and "straße" are the same word; "ΟΔΟΣ" is "οδος".
    book = LoreBook([entry(1, "straße"), entry(2, "οδος"), entry(3, "tor")])
    text = "Die Straße, die STRASSE, ΟΔΟΣ, Maß und Tor."
    assert matched(book, text) == [
        (1, "Straße"),
        (1, "STRASSE"),
        (2, "ΟΔΟΣ"),
        (3, "Tor"),
    ]


def test_a_key_never_matches_half_of_a_character_that_folds_to_two() -> None:
    # "ß" folds to "ss": the key "s" is not found inside it, nor "as" across its start.
    book = LoreBook([entry(1, "s", whole_words=False), entry(2, "as", whole_words=False)])
    assert matched(book, "aß") == []
    assert matched(book, "ßs") == [(1, "s")]


def test_keys_with_punctuation_are_bounded_only_on_their_word_side() -> None:
    book = LoreBook([entry(1, "#relic"), entry(2, "Dr."), entry(3, "...")])
    text = "the #relic glows; #relics; Dr.Vell and Dr. Ann; xDr. wait..."
    assert matched(book, text) == [(1, "#relic"), (2, "Dr."), (2, "Dr."), (3, "...")]


def test_letters_and_marks_of_any_script_count_as_word_characters() -> None:
    book = LoreBook([entry(1, "café"), entry(2, "Ærø"), entry(3, "cafe")])
    # A combining accent continues the word "cafe" (it is "café", decomposed).
    text = "cafés, café! Ærøskøbing, Ærø; cafe\u0301"
    assert matched(book, text) == [(1, "café"), (2, "Ærø")]


def test_scripts_without_spaces_match_with_whole_words_off() -> None:
    book = LoreBook([entry(1, "龍"), entry(2, "龍", whole_words=False)])
    assert matched(book, "龍の門") == [(2, "龍")]


def test_overlapping_keys_and_shared_keys_all_match() -> None:
    book = LoreBook(
        [entry(1, "bell", "bell tower"), entry(2, "tower"), entry(3, "BELL", case_sensitive=True)]
    )
    assert matched(book, "the bell tower") == [(1, "bell tower"), (1, "bell"), (2, "tower")]
    # Two keys of one entry on the same text are one match.
    assert matched(LoreBook([entry(4, "Bell", "bell")]), "bell") == [(4, "bell")]


def test_many_entries_sharing_a_key_all_match_and_matches_listed_are_capped() -> None:
    book = LoreBook([entry(id, "the", f"k{id}") for id in range(1, 501)])
    text = "the end. " * (lore_module.MAX_LORE_MATCHES + 10)
    activations = lore_module.test_lore(book, text)
    assert [a.entry.id for a in activations] == list(range(1, 501))
    assert all(len(a.matches) == lore_module.MAX_LORE_MATCHES for a in activations)
    assert activations[-1].matches[-1] == lore_module.LoreMatch("the", 441, 444)
    # Assembly keeps only each entry's trigger.
    [first] = lore_module.activate(book, [lore_module.ScannedText("input", text)])[0].matches
    assert first == lore_module.LoreMatch("the", 0, 3)


# Entries and books


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"keys": ()}, "keys", "needs at least one key"),
        ({"keys": ("  ",)}, "keys", "key 1 is blank"),
        ({"keys": ("a" * (MAX_LORE_KEY_LENGTH + 1),)}, "keys", "longer than 100"),
        ({"keys": tuple(f"k{i}" for i in range(MAX_LORE_KEYS + 1))}, "keys", "at most 64"),
        ({"keys": ("bell", "a\x00b")}, "keys", "key 2 holds a control character"),
        ({"keys": ("\ud800",)}, "keys", "lone surrogate"),
        ({"keys": ("bell",), "priority": 2**31}, "priority", "priority must be between"),
        ({"keys": ("bell",), "group": " "}, "group", "group name"),
        ({"keys": ("bell",), "token_count": -1}, "token_count", ">= 0"),
        ({"keys": ("bell",), "title": "t" * 201}, "title", "longer than 200"),
    ],
)
def test_an_entry_that_cannot_be_matched_is_refused_naming_the_field(
    fields: dict[str, Any], field: str, words: str
) -> None:
    with pytest.raises(LoreError) as raised:
        LoreEntry(**{"id": 9, "title": "Bell", "content": "A bell.", **fields})
    assert raised.value.field == field
    assert words in str(raised.value)
    assert "#9" in str(raised.value)


def test_a_constant_entry_needs_no_key_and_an_empty_group_is_none() -> None:
    constant = LoreEntry(1, "Sea", "The sea.", constant=True, group="")
    assert constant.keys == () and constant.group is None


def test_books_are_equal_and_hashed_by_their_entries_whatever_the_order() -> None:
    first = LoreBook([entry(2, "gate"), entry(1, "bell")])
    second = LoreBook((entry(1, "bell"), entry(2, "gate")))
    assert first == second and hash(first) == hash(second)
    assert {first: "cached"}[second] == "cached"
    assert first != LoreBook([entry(1, "bell"), entry(2, "gate", priority=1)])
    with pytest.raises(LoreError, match="duplicate ids #2") as raised:
        LoreBook([entry(2, "a"), entry(2, "b"), entry(3, "c")])
    assert raised.value.field == "entries"


def test_a_book_pickles_as_its_entries_and_matches_after() -> None:
    book = LoreBook([entry(1, "bell"), entry(2, "gate")])
    copy = pickle.loads(pickle.dumps(book))
    assert copy == book
    assert matched(copy, "the gate bell") == [(1, "bell"), (2, "gate")]


def test_a_books_matcher_given_to_a_book_of_the_same_entries_matches_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    entries = [entry(1, "bell", "Bell Tower", case_sensitive=True), entry(2, "gate")]
    built = LoreBook(entries)
    kept = pickle.loads(pickle.dumps(built.matcher))  # as the shared cache keeps it

    def no_build(_entries: Any) -> Any:
        raise AssertionError("the matcher was built again")

    monkeypatch.setattr(lore_module, "_build_automaton", no_build)
    again = LoreBook(list(reversed(entries)), prebuilt=kept)
    text = "The gate by the Bell Tower, the bell."
    assert again == built
    assert (
        matched(again, text)
        == matched(built, text)
        == [
            (1, "Bell Tower"),
            (1, "bell"),
            (2, "gate"),
        ]
    )


def test_a_matchers_key_names_what_it_is_built_from() -> None:
    key = lore_module.matcher_key
    book = [entry(1, "bell"), entry(2, "gate")]
    assert key(book) == key(list(reversed(book)))
    # Title, content, priority and groups are not in the matcher.
    assert key(book) == key([entry(1, "bell", content="Other.", priority=3), entry(2, "gate")])
    for changed in (
        [entry(1, "Bell"), entry(2, "gate")],
        [entry(1, "bell", whole_words=False), entry(2, "gate")],
        [entry(1, "bell", case_sensitive=True), entry(2, "gate")],
        [entry(1, "bell"), entry(3, "gate")],
        [entry(1, "bell")],
    ):
        assert key(changed) != key(book)


# Activation: sources


def bell_book(**options: Any) -> LoreBook:
    return LoreBook([entry(1, "bell", **options)])


@pytest.mark.parametrize(
    ("state", "source", "where"),
    [
        ({"input": "I ring the bell."}, "input", "the input"),
        ({"game_state": {"noise": "a bell", "hp": 3}}, "game_state", "the game state"),
        ({"player": "Carries a bell."}, "player", "the player details"),
    ],
)
def test_entries_are_activated_by_the_input_game_state_and_player(
    tokenizer: Tokenizer, state: dict[str, Any], source: str, where: str
) -> None:
    result = assemble(request(state=state, lore_book=bell_book()), tokenizer)
    [report] = result.meta.to_dict()["lore"]
    assert report["status"] == "included"
    assert report["trigger"]["source"] == source
    assert report["reason"] == f"included: key 'bell' in {where}"
    assert "Lore text 1." in lore_body(result)


def test_trigger_offsets_point_into_the_text_as_rendered(tokenizer: Tokenizer) -> None:
    # A JSON object is scanned as the prompt renders it: "key: value" lines, sorted.
    state = {"game_state": {"noise": "a bell", "hp": 3}}
    result = assemble(request(state=state, lore_book=bell_book()), tokenizer)
    trigger = lore_of(result)[1]["trigger"]
    rendered = "hp: 3\nnoise: a bell"
    assert rendered in result.prompt
    assert rendered[trigger["start"] : trigger["end"]] == "bell"
    assert trigger == {
        "key": "bell",
        "source": "game_state",
        "message": None,
        "start": 15,
        "end": 19,
    }


def test_the_rng_layer_is_not_scanned(tokenizer: Tokenizer) -> None:
    result = assemble(request(state={"rng": "bell: 4"}, lore_book=bell_book()), tokenizer)
    assert result.meta.lore == []
    assert result.meta.layers["lore"].status == "empty"


def history_of(*contents: str) -> History:
    roles = ("user", "assistant")
    messages = [
        HistoryMessage(position, roles[position % 2], content)  # type: ignore[arg-type]
        for position, content in enumerate(contents, start=1)
    ]
    return History(messages=messages, summary=None, budget=10_000)


def test_only_the_newest_scan_depth_history_messages_are_scanned(tokenizer: Tokenizer) -> None:
    book = LoreBook([entry(1, "bell"), entry(2, "gate"), entry(3, "fog")])
    history = history_of("The bell rang.", "At the gate.", "Fog.", "Hm.", "Go on.", "Wait.")
    result = assemble(request(history=history, lore_book=book), tokenizer)
    # Default depth 4: messages 3 to 6; the gate (message 2) and the bell are older.
    assert list(lore_of(result)) == [3]
    assert lore_of(result)[3]["trigger"] == {
        "key": "fog",
        "source": "history",
        "message": 3,
        "start": 0,
        "end": 3,
    }
    deeper = assemble(request(history=history, lore_book=book, lore=LoreOptions(5)), tokenizer)
    assert sorted(lore_of(deeper)) == [2, 3]
    assert lore_of(deeper)[2]["reason"] == "included: key 'gate' in history message 2"
    none = assemble(request(history=history, lore_book=book, lore=LoreOptions(0)), tokenizer)
    assert none.meta.lore == []


def test_a_trigger_comes_from_the_first_text_that_holds_a_key(tokenizer: Tokenizer) -> None:
    book = LoreBook([entry(1, "bell", "gate")])
    result = assemble(
        request(
            state={"input": "To the gate, then the bell.", "player": "bell"},
            history=history_of("bell"),
            lore_book=book,
        ),
        tokenizer,
    )
    assert lore_of(result)[1]["trigger"] == {
        "key": "gate",
        "source": "input",
        "message": None,
        "start": 7,
        "end": 11,
    }


# Activation: recursion, groups, constants


def chain(**options: Any) -> LoreBook:
    """1 names the flood, 2 (the flood) names the chapel, 3 (the chapel) names the crypt."""
    return LoreBook(
        [
            entry(1, "bell", content="The bell rang before the flood.", **options),
            entry(2, "flood", content="The flood rose to the chapel.", **options),
            entry(3, "chapel", content="Under the chapel lies the crypt.", **options),
            entry(4, "crypt", content="The crypt is sealed.", **options),
        ]
    )


def test_recursion_scans_activated_content_for_as_many_rounds_as_asked() -> None:
    assert ids_triggered(chain(), "a bell", recursion=0) == [1]
    assert ids_triggered(chain(), "a bell", recursion=1) == [1, 2]
    assert ids_triggered(chain(), "a bell") == [1, 2, 3]  # two rounds by default
    assert ids_triggered(chain(), "a bell", recursion=3) == [1, 2, 3, 4]


def test_recursion_reports_the_entry_that_triggered_and_where(tokenizer: Tokenizer) -> None:
    result = assemble(request(state={"input": "a bell"}, lore_book=chain()), tokenizer)
    second = lore_of(result)[2]
    assert second["by"] == 1
    assert second["trigger"] == {
        "key": "flood",
        "source": "lore",
        "message": None,
        "start": 25,
        "end": 30,
    }
    assert second["reason"] == "included: key 'flood' in lore entry #1 'Entry 1'"
    assert lore_of(result)[1]["by"] is None


def test_an_entry_that_is_not_recursive_triggers_nothing() -> None:
    book = LoreBook(
        [
            entry(1, "bell", content="The bell rang before the flood.", recursive=False),
            entry(2, "flood", content="The flood rose."),
        ]
    )
    assert ids_triggered(book, "a bell") == [1]
    # It can still be triggered by another entry's content.
    assert ids_triggered(book, "a flood of bells") == [2]
    assert ids_triggered(LoreBook([*book.entries, entry(3, "x", content="a bell")]), "x") == [
        3,
        1,
    ]


def test_of_a_group_only_the_highest_priority_enters_ties_to_the_lowest_id(
    tokenizer: Tokenizer,
) -> None:
    book = LoreBook(
        [
            entry(1, "bell", group="bells", priority=1),
            entry(2, "bell", group="bells", priority=5),
            entry(3, "bell", group="bells", priority=5),
            entry(4, "bell", group="other"),
        ]
    )
    result = assemble(request(state={"input": "bell"}, lore_book=book), tokenizer)
    statuses = {id: report["status"] for id, report in lore_of(result).items()}
    assert statuses == {1: "grouped_out", 2: "included", 3: "grouped_out", 4: "included"}
    assert lore_of(result)[1]["reason"] == (
        "grouped out: group 'bells' keeps lore entry #2 'Entry 2' (priority 5, this one 1)"
    )
    assert lore_of(result)[3]["reason"] == (
        "grouped out: group 'bells' keeps lore entry #2 'Entry 2' "
        "(the same priority, 5, and a lower id)"
    )
    assert "Lore text 1." not in result.prompt and "Lore text 3." not in result.prompt


def test_a_group_counts_entries_triggered_in_every_round_and_constants() -> None:
    book = LoreBook(
        [
            entry(1, "bell", content="The bell rang before the flood.", group="g"),
            entry(2, "flood", group="g", priority=3),
            LoreEntry(3, "Sea", "The sea.", constant=True, group="h", priority=9),
            entry(4, "bell", group="h"),
        ]
    )
    activations = lore_module.test_lore(book, "bell", constants=True)
    assert [(a.entry.id, a.status) for a in activations] == [
        (3, "triggered"),
        (1, "grouped_out"),
        (4, "grouped_out"),
        (2, "triggered"),
    ]


def test_the_content_of_an_entry_its_group_leaves_out_is_not_scanned() -> None:
    book = LoreBook(
        [
            entry(1, "bell", content="the flood", group="g"),
            entry(2, "bell", content="quiet", group="g", priority=1),
            entry(3, "flood"),
        ]
    )
    assert ids_triggered(book, "bell") == [2, 1]


def test_constant_entries_are_always_in_with_a_constant_trigger(tokenizer: Tokenizer) -> None:
    book = LoreBook([LoreEntry(5, "Sea", "The sea is cold.", constant=True), entry(6, "bell")])
    result = assemble(request(core=[seg(1, "core")], lore_book=book), tokenizer)
    assert lore_of(result) == {
        5: {
            "id": 5,
            "title": "Sea",
            "status": "included",
            "trigger": {
                "key": None,
                "source": "constant",
                "message": None,
                "start": None,
                "end": None,
            },
            "by": None,
            "tokens": tokenizer.count("The sea is cold."),
            "reason": "included: always in (constant)",
        }
    }
    assert "=== LORE_BEGIN ===\nThe sea is cold.\n=== LORE_END ===" in result.prompt


# The lore budget


def sized(id: int, tokens: int, *keys: str, **options: Any) -> LoreEntry:
    """An entry of about ``tokens`` tokens of prose, naming itself first."""
    words = f"Lore {id}. " + " ".join(["stone"] * tokens)
    return LoreEntry(id, f"Entry {id}", words, keys=keys or ("bell",), **options)


def test_the_lore_budget_takes_constants_then_direct_then_recursive_each_by_priority(
    tokenizer: Tokenizer,
) -> None:
    book = LoreBook(
        [
            sized(1, 20, "flood", priority=9),  # recursive: named by entry 3
            sized(2, 20, priority=1),
            LoreEntry(3, "C", "Lore 3. The flood. " + "stone " * 18, constant=True),
            sized(4, 20, priority=5),
            sized(5, 20, priority=5),
        ]
    )
    entries = {e.id: e for e in book.entries}
    frame = tokenizer.count("=== LORE_BEGIN ===\n\n=== LORE_END ===")
    one = max(tokenizer.count(e.content) for e in entries.values())
    result = assemble(
        request(
            state={"input": "bell"}, lore_book=book, lore=LoreOptions(budget=frame + 3 * one + 6)
        ),
        tokenizer,
    )
    reports = result.meta.to_dict()["lore"]
    assert [(r["id"], r["status"]) for r in reports] == [
        (3, "included"),
        (4, "included"),
        (5, "included"),
        (2, "left_out"),
        (1, "left_out"),
    ]
    assert reports[3]["reason"].startswith(
        f"left out: the lore budget ({frame + 3 * one + 6} tokens) was full ("
    )
    # In the block, entries go by priority, then id, whatever let them in.
    body = lore_body(result)
    assert body.index("Lore 4.") < body.index("Lore 5.") < body.index("Lore 3.")
    assert tokenizer.count(body) <= frame + 3 * one + 6


def test_an_entry_that_does_not_fit_lets_smaller_ones_after_it_in(tokenizer: Tokenizer) -> None:
    book = LoreBook([sized(1, 10, priority=3), sized(2, 200, priority=2), sized(3, 10)])
    result = assemble(
        request(state={"input": "bell"}, lore_book=book, lore=LoreOptions(budget=60)),
        tokenizer,
    )
    assert {id: r["status"] for id, r in lore_of(result).items()} == {
        1: "included",
        2: "left_out",
        3: "included",
    }
    alone = assemble(
        request(
            state={"input": "bell"},
            lore_book=LoreBook([sized(2, 200)]),
            lore=LoreOptions(budget=60),
        ),
        tokenizer,
    )
    assert lore_of(alone)[2]["reason"] == (
        "left out: even alone it takes more than the lore budget (60 tokens)"
    )
    assert alone.meta.layers["lore"].status == "dropped"
    assert layer_status_words("lore", "dropped") == "every entry left out to fit the budgets"


def test_the_lore_budget_defaults_to_a_tenth_of_the_token_budget(tokenizer: Tokenizer) -> None:
    book = LoreBook([sized(1, 30)])
    block = tokenizer.count(f"=== LORE_BEGIN ===\n{book.entries[0].content}\n=== LORE_END ===")
    fits = assemble(
        request(state={"input": "bell"}, lore_book=book, token_budget=block * 10), tokenizer
    )
    assert lore_of(fits)[1]["status"] == "included"
    tight = assemble(
        request(state={"input": "bell"}, lore_book=book, token_budget=block * 10 - 10), tokenizer
    )
    assert lore_of(tight)[1]["reason"] == (
        f"left out: even alone it takes more than the lore budget ({block - 1} tokens)"
    )


def test_an_entry_without_text_is_reported_left_out(tokenizer: Tokenizer) -> None:
    book = LoreBook([LoreEntry(1, "Draft", "  ", keys=("bell",))])
    result = assemble(request(state={"input": "bell"}, lore_book=book), tokenizer)
    assert lore_of(result)[1]["status"] == "left_out"
    assert lore_of(result)[1]["reason"] == "left out: it has no text"
    assert result.meta.layers["lore"].status == "empty"
    assert "LORE" not in result.prompt


# The token budget: where lore gives way, and put-back


def squeezed(token_budget: int, book: LoreBook, **fields: Any) -> AssemblyRequest:
    return request(
        core=[seg(1, "core", "You narrate.")],
        world=[seg(2, "world", PROSE)],
        npcs=[npc("ida", tiers=(0, 1), requested_tier=1, first_id=10)],
        history=conversation(6),
        state={scope: f"{scope} " + "word " * 80 for scope in ("game_state", "player", "input")}
        | {"input": "bell " + "word " * 80},
        lore_book=book,
        lore=LoreOptions(budget=100_000),
        policy=Policy(floors={"history": 0.0}),
        token_budget=token_budget,
        **fields,
    )


def test_over_budget_lore_gives_way_after_game_state_and_before_history(
    tokenizer: Tokenizer,
) -> None:
    book = LoreBook([sized(1, 30, priority=2), sized(2, 30, priority=1), sized(3, 30, priority=2)])
    full = assemble(squeezed(100_000, book), tokenizer).meta.tokens
    result = assemble(squeezed(full - 260, book), tokenizer)
    steps = [(s.scope, s.action) for s in result.meta.truncated if s.action != "restored"]
    assert steps[:7] == [
        ("input", "trimmed"),
        ("player", "trimmed"),
        ("game_state", "trimmed"),
        ("lore", "dropped"),
        ("lore", "dropped"),
        ("lore", "dropped"),
        ("history", "trimmed"),
    ]
    # Lowest priority first, then the highest id.
    lore_steps = [s for s in result.meta.truncated if s.scope == "lore"]
    assert [s.reason.split(" '")[0] for s in lore_steps] == [
        "lore entry #2",
        "lore entry #3",
        "lore entry #1",
    ]
    assert lore_steps[0].explanation.startswith(
        f"Lore entry #2 'Entry 2' ({tokenizer.count(book.entries[1].content)} tokens) left out: "
        "the prompt was still"
    )
    assert lore_steps[0].segment_id is None and lore_steps[0].npc is None
    assert lore_of(result)[2]["reason"].startswith("left out: the prompt was still")
    assert result.meta.layers["lore"].status == "dropped"
    assert result.meta.tokens <= full - 260


def test_lore_dropped_to_fit_is_put_back_where_it_fits(tokenizer: Tokenizer) -> None:
    # The block gives way from its end: the small low-priority entry first, then the large
    # one; once the prompt fits, the large one cannot come back but the small one can.
    book = LoreBook([sized(1, 300, priority=2), sized(2, 15, priority=1)])
    full = assemble(squeezed(100_000, book), tokenizer).meta.tokens
    result = assemble(squeezed(full - 150, book), tokenizer)
    actions = [(s.scope, s.action, s.reason.split(" '")[0]) for s in result.meta.truncated]
    assert ("lore", "dropped", "lore entry #2") in actions
    assert ("lore", "dropped", "lore entry #1") in actions
    assert actions[-1][:2] != ("lore", "dropped")
    assert ("lore", "restored", "lore entry #2") in actions
    assert {id: r["status"] for id, r in lore_of(result).items()} == {1: "left_out", 2: "included"}
    assert result.meta.layers["lore"].status == "trimmed"
    restored = next(
        s for s in result.meta.truncated if s.action == "restored" and s.scope == "lore"
    )
    assert restored.explanation.startswith("Lore entry #2 'Entry 2' (")
    assert "put back" in restored.explanation
    assert result.meta.tokens <= full - 150


def test_an_assembly_leaves_nothing_for_the_cyclic_garbage_collector(
    tokenizer: Tokenizer,
) -> None:
    # A turn with lore, NPCs, history, truncation and put-back: once its result is made,
    # none of the assembly's objects refers back to it, so reference counting frees them
    # all as soon as the answer is sent.
    book = LoreBook([sized(1, 300, priority=2), sized(2, 15, priority=1)])
    full = assemble(squeezed(100_000, book), tokenizer).meta.tokens
    turn = squeezed(full - 150, book)
    gc.collect()
    gc.disable()
    try:
        result = assemble(turn, tokenizer)
        restored = any(step.action == "restored" for step in result.meta.truncated)
        del result
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        left = sorted(
            {type(o).__qualname__ for o in gc.garbage if type(o).__module__.startswith("assembler")}
        )
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert restored
    assert left == []


def test_markdown_and_xml_frame_the_lore_block_like_the_others() -> None:
    assert block_open("lore", "markdown") == "## Lore"
    assert block_open("lore", "xml") == "<lore>"


# test_lore, for the editor and POST /api/v1/lore/test


def test_test_lore_says_what_a_text_triggers_and_where_without_assembling() -> None:
    book = LoreBook(
        [
            entry(1, "bell", content="The bell rang before the flood.", token_count=9),
            entry(2, "flood"),
            LoreEntry(3, "Sea", "The sea.", constant=True),
        ]
    )
    activations = lore_module.test_lore(book, "Bell, bell!")
    assert [a.to_dict() for a in activations] == [
        {
            "id": 1,
            "title": "Entry 1",
            "status": "triggered",
            "trigger": {"key": "bell", "source": "text", "message": None, "start": 0, "end": 4},
            "by": None,
            "tokens": 9,
            "reason": "triggered: key 'bell' in the text",
            "matches": [
                {"key": "bell", "start": 0, "end": 4},
                {"key": "bell", "start": 6, "end": 10},
            ],
        },
        {
            "id": 2,
            "title": "Entry 2",
            "status": "triggered",
            "trigger": {"key": "flood", "source": "lore", "message": None, "start": 25, "end": 30},
            "by": 1,
            "tokens": None,
            "reason": "triggered: key 'flood' in lore entry #1 'Entry 1'",
            "matches": [{"key": "flood", "start": 25, "end": 30}],
        },
    ]
    assert ids_triggered(book, "Bell", constants=True) == [3, 1, 2]
    assert ids_triggered(book, "") == []


def test_test_lore_refuses_a_text_longer_than_its_limit() -> None:
    with pytest.raises(LoreError) as raised:
        lore_module.test_lore(bell_book(), "x" * (lore_module.MAX_LORE_TEST_TEXT + 1))
    assert raised.value.field == "text"


# Options


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"scan_depth": -1}, "lore.scan_depth"),
        ({"scan_depth": 101}, "lore.scan_depth"),
        ({"recursion": 11}, "lore.recursion"),
        ({"budget": -1}, "lore.budget"),
        ({"budget": 1_000_001}, "lore.budget"),
    ],
)
def test_lore_options_out_of_range_are_refused_naming_the_field(
    options: dict[str, Any], field: str
) -> None:
    with pytest.raises(RequestError) as raised:
        LoreOptions(**options)
    assert raised.value.field == field
    assert field in str(raised.value)


def test_lore_has_no_floor_it_gives_way_whole_entries() -> None:
    with pytest.raises(RequestError) as raised:
        Policy(floors={"lore": 0.1})
    assert raised.value.field == "policy.floors"


def test_disabled_lore_activates_nothing(tokenizer: Tokenizer) -> None:
    result = assemble(
        request(state={"input": "bell"}, lore_book=bell_book(), lore=LoreOptions(enabled=False)),
        tokenizer,
    )
    assert result.meta.lore == [] and "Lore text" not in result.prompt


# Activation lists one match per entry the same way whether or not it lists every match

_WORDS = ["bell", "Bell", "bell tower", "tower", "flood", "ß", "ss", "crypt", "#relic"]


@st.composite
def books_and_texts(draw: st.DrawFn) -> tuple[LoreBook, str]:
    entries = []
    for id in range(1, draw(st.integers(1, 8)) + 1):
        keys = draw(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=3))
        words = draw(st.lists(st.sampled_from(_WORDS), max_size=4))
        entries.append(
            LoreEntry(
                id,
                f"Entry {id}",
                " ".join(["Lore", *words, "."]),
                keys=keys,
                whole_words=draw(st.booleans()),
                case_sensitive=draw(st.booleans()),
                priority=draw(st.integers(0, 2)),
                group=draw(st.sampled_from([None, "a", "b"])),
                constant=draw(st.booleans()) and id % 3 == 0,
                recursive=draw(st.booleans()),
            )
        )
    text = " ".join(draw(st.lists(st.sampled_from([*_WORDS, "the", "STRASSE"]), max_size=10)))
    return LoreBook(entries), text


@settings(max_examples=200, deadline=None)
@given(books_and_texts(), st.integers(0, 3))
def test_activation_finds_the_same_first_match_with_or_without_every_match(
    book_and_text: tuple[LoreBook, str], recursion: int
) -> None:
    book, text = book_and_text
    texts = [lore_module.ScannedText("input", text), lore_module.ScannedText("history", text, 2)]
    one = lore_module.activate(book, texts, recursion=recursion)
    every = lore_module.activate(book, texts, recursion=recursion, every=True)
    assert [(a.entry, a.trigger, a.by, a.grouped_out_by) for a in one] == [
        (a.entry, a.trigger, a.by, a.grouped_out_by) for a in every
    ]
    assert [a.matches for a in one] == [a.matches[:1] for a in every]
    # What assembly works from is the same activation, by index.
    assert [
        (book.entries[index], trigger, kept == index)
        for index, trigger, _by, _matches, kept in lore_module.activated(
            book, texts, recursion, constants=True, every=False
        )
    ] == [(a.entry, a.trigger, a.grouped_out_by is None) for a in one]


@settings(max_examples=200, deadline=None)
@given(books_and_texts(), st.lists(st.sampled_from([*_WORDS, "the"]), max_size=10), st.booleans())
def test_activation_after_other_texts_equals_activation_with_a_new_book(
    book_and_text: tuple[LoreBook, str], words: list[str], every: bool
) -> None:
    """A book remembers what each set of entries found goes on to activate; a text that
    finds the same set elsewhere (other offsets, another source) keeps its own triggers."""
    book, text = book_and_text
    earlier = [lore_module.ScannedText("input", " ".join(words))]
    later = [
        lore_module.ScannedText("history", text, 3),
        lore_module.ScannedText("input", " ".join(reversed(words))),
    ]
    lore_module.activated(book, earlier, 2, constants=True, every=every)
    lore_module.activated(book, later[1:], 2, constants=True, every=every)
    assert lore_module.activated(book, later, 2, constants=True, every=every) == (
        lore_module.activated(LoreBook(book.entries), later, 2, constants=True, every=every)
    )
