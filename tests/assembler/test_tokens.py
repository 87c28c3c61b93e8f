from __future__ import annotations

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from assembler import Tokenizer, UnknownEncodingError, available_encodings, get_tokenizer


def test_cl100k_base_loads_offline_and_matches_the_official_token_ids(
    tokenizer: Tokenizer,
) -> None:
    assert tokenizer.name == "cl100k_base"
    # Known cl100k_base ids: the offline copy must be byte-identical.
    assert tokenizer.encode("hello world") == [15339, 1917]


def test_tokenizer_is_loaded_once_per_process() -> None:
    assert get_tokenizer() is get_tokenizer("cl100k_base")


def test_special_token_text_is_counted_as_ordinary_text(tokenizer: Tokenizer) -> None:
    assert tokenizer.count("<|endoftext|>") == 7


def test_unknown_encoding_names_itself_and_the_available_ones() -> None:
    with pytest.raises(UnknownEncodingError) as raised:
        get_tokenizer("no_such_base")
    assert "'no_such_base'" in str(raised.value)
    assert "cl100k_base" in str(raised.value)
    assert raised.value.available == tuple(available_encodings())


def test_official_encoding_without_a_cached_file_fails_without_trying_to_download(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))

    def no_download(name: str) -> object:
        raise AssertionError(f"tiktoken.get_encoding({name!r}) would fetch its file")

    monkeypatch.setattr(tiktoken, "get_encoding", no_download)
    with pytest.raises(UnknownEncodingError, match="TIKTOKEN_CACHE_DIR"):
        get_tokenizer("o200k_base")


def test_truncate_returns_short_text_unchanged(tokenizer: Tokenizer) -> None:
    assert tokenizer.truncate("A short line.", 50) == "A short line."


def test_truncate_to_zero_tokens_is_empty(tokenizer: Tokenizer) -> None:
    assert tokenizer.truncate("Anything at all.", 0) == ""


def test_truncate_keeps_the_start_at_exactly_the_allowed_tokens(tokenizer: Tokenizer) -> None:
    text = "one two three four five six seven eight nine ten"
    assert tokenizer.truncate(text, 4) == "one two three four"


def test_truncate_backs_up_to_a_sentence_end_that_keeps_70_percent(
    tokenizer: Tokenizer,
) -> None:
    text = "The gate is shut at dusk. Guards stand watch all night long."
    # "The gate is shut at dusk." is 7 tokens: 70% of 10 allowed.
    assert tokenizer.truncate(text, 10) == "The gate is shut at dusk."


def test_truncate_does_not_back_up_when_that_would_lose_over_30_percent(
    tokenizer: Tokenizer,
) -> None:
    text = "The gate is shut at dusk. Guards stand watch all night long."
    assert tokenizer.truncate(text, 11) == "The gate is shut at dusk. Guards stand watch all"


def test_truncate_backs_up_to_a_line_end(tokenizer: Tokenizer) -> None:
    text = "first line of notes here\nsecond line goes on and on and on"
    # The first line is 5 tokens: at least 70% of 7.
    assert tokenizer.truncate(text, 7) == "first line of notes here"
    assert tokenizer.truncate(text, 8) == "first line of notes here\nsecond line"


@pytest.mark.parametrize(
    "text",
    [
        "🐉🐲🐉🐲🐉🐲🐉",
        "龍の門は閉ざされた衛兵が夜通し見張る",
        "naïve café façade ønske Ω≈ç√",
        "👩‍👩‍👧‍👦 family",
    ],
)
def test_truncate_never_splits_a_multibyte_character(tokenizer: Tokenizer, text: str) -> None:
    for max_tokens in range(tokenizer.count(text) + 1):
        kept = tokenizer.truncate(text, max_tokens)
        assert text.startswith(kept)
        assert "\ufffd" not in kept
        assert tokenizer.count(kept) <= max_tokens


@settings(max_examples=300, deadline=None)
@given(
    text=st.lists(
        st.sampled_from([*"ab .!?\n\t,é🐉龍\"'。", "word", "<|endoftext|>"]), max_size=40
    ).map("".join),
    max_tokens=st.integers(min_value=0, max_value=40),
)
def test_truncate_result_is_a_prefix_within_the_allowed_tokens(
    tokenizer: Tokenizer, text: str, max_tokens: int
) -> None:
    kept = tokenizer.truncate(text, max_tokens)
    assert text.startswith(kept)
    assert tokenizer.count(kept) <= max_tokens


def test_join_cost_accounts_for_punctuation_merging_with_line_breaks(
    tokenizer: Tokenizer,
) -> None:
    # ".\n\n" is a single token, so the separator after a full stop costs nothing.
    assert tokenizer.join_cost("It ends.", "\n\n", "Next") == 0
    assert tokenizer.join_cost("It ends", "\n\n", "Next") == 1
    for left, right in [("It ends.", "Next"), ("It ends", "Next"), ("a  ", "  b")]:
        joined = tokenizer.count(left + "\n\n" + right)
        parts = tokenizer.count(left) + tokenizer.count(right)
        assert joined == parts + tokenizer.join_cost(left, "\n\n", right)


class _CountedEncodes:
    """An encoding that notes the texts it encodes."""

    def __init__(self, encoding: tiktoken.Encoding) -> None:
        self.encoding = encoding
        self.texts: list[str] = []

    def encode_ordinary(self, text: str) -> list[int]:
        self.texts.append(text)
        return self.encoding.encode_ordinary(text)


def test_a_join_counts_again_only_what_no_other_join_counted(tokenizer: Tokenizer) -> None:
    """What was seen (issue 22, item 4): comparing releases at 100,000 segments spent a
    third of its time counting the two sides of each join, each of which an earlier join
    had counted (a segment's end joins the next segment, then the closing line)."""
    encoding = _CountedEncodes(tokenizer._encoding)  # the offline copy
    fresh = Tokenizer("cl100k_base", encoding)  # type: ignore[arg-type]
    end, close = "They swore the lantern oath. (Note 12.)", "=== WORLD_END ==="
    assert fresh.join_cost(end, "\n\n", "Next") == tokenizer.join_cost(end, "\n\n", "Next")
    encoding.texts.clear()

    cost = fresh.join_cost(end, "\n", close)

    assert cost == tokenizer.count(end + "\n" + close) - tokenizer.count(end) - tokenizer.count(
        close
    )
    assert encoding.texts == [end[-24:] + "\n" + close, close]  # not the end again


def test_a_cut_at_the_end_of_a_line_or_sentence_stays_there(tokenizer: Tokenizer) -> None:
    first = "One two three four five six seven eight nine ten eleven twelve."
    for kept, rest in [("\nEnd", "\nMore text follows here."), (" End.", " More text follows.")]:
        text = first + kept + rest
        cut = tokenizer.count(first + kept)
        assert tokenizer.truncate(text, cut) == first + kept
        # One token short, it backs up to the end of the line or sentence before.
        assert tokenizer.truncate(text, cut - 1) == first


def test_a_cut_ending_in_a_full_stop_inside_a_word_does_not_back_up(
    tokenizer: Tokenizer,
) -> None:
    # "3." ends in a full stop but no sentence: it is not a boundary to stay at, and the
    # full stop is the last one in the cut, so there is none to back up to either.
    first = "One two three four five six seven eight nine ten eleven twelve. "
    text = first + "Pi is 3.14159 or so."
    kept = first + "Pi is 3."
    assert tokenizer.truncate(text, tokenizer.count(kept)) == kept


@settings(max_examples=200, deadline=None)
@given(
    text=st.lists(
        st.sampled_from([*"ab .!?\n\t,é🐉龍\"')。", "3.5", "word", "...", "<|endoftext|>"]),
        max_size=40,
    ).map("".join),
    allowances=st.lists(st.integers(min_value=0, max_value=45), max_size=12),
)
def test_cuts_of_one_text_in_any_order_are_fresh_truncations_with_exact_counts(
    tokenizer: Tokenizer, text: str, allowances: list[int]
) -> None:
    cuts = tokenizer.cuts(text, tokenizer.encode(text))
    for max_tokens in allowances:
        kept, count = cuts.cut(max_tokens)
        assert kept == tokenizer.truncate(text, max_tokens)
        assert count == tokenizer.count(kept) <= max_tokens


def first_longer(tokenizer: Tokenizer, text: str, kept: str, low: int, high: int) -> int | None:
    """The least allowance from ``low`` to ``high`` whose truncation keeps more than ``kept``,
    trying each in turn."""
    return next(
        (a for a in range(low, high + 1) if len(tokenizer.truncate(text, a)) > len(kept)), None
    )


@pytest.mark.parametrize(
    "text",
    [
        "One two three four five six seven eight nine ten. Alpha beta gamma delta  \nMore.",
        "One two three four five six seven eight nine ten. Alpha beta gamma delta\t\nMore.",
        "One two three four five six seven eight nine ten.\nAlpha beta gamma. Delta epsilon.",
        "One two three four five six seven eight nine ten. Alpha beta gamma delta epsilon.\n"
        "Zeta eta theta iota kappa lambda mu.",
    ],
)
def test_the_next_longer_cut_after_each_cut_is_the_first_allowance_that_keeps_more(
    tokenizer: Tokenizer, text: str
) -> None:
    # Cuts back up to "ten." until the kept text reaches a line end ("delta") or the 70%
    # rule no longer holds: allowances in between are passed over, those must not be.
    tokens = tokenizer.encode(text)
    for first in range(len(tokens)):
        cuts = tokenizer.cuts(text, tokens)
        kept, count = cuts.cut(first)
        expected = first_longer(tokenizer, text, kept, count + 1, len(tokens))
        assert cuts.next_longer(len(kept), count + 1, len(tokens)) == expected, first


@settings(max_examples=300, deadline=None)
@given(
    text=st.lists(
        st.sampled_from(
            [
                *"ab .!?\n\t,é🐉龍\"')]»\u201d\u2019。\uff01\uff1f…\r\u00a0",
                " The gate is shut at dusk.",
                " Guards watch",
                "3.5",
                "...",
                "  \n",
                "<|endoftext|>",
            ]
        ),
        max_size=60,
    ).map("".join),
    earlier=st.lists(st.integers(min_value=0, max_value=60), max_size=4),
    first=st.integers(min_value=0, max_value=60),
    span=st.integers(min_value=0, max_value=60),
)
def test_the_next_longer_cut_is_the_first_allowance_that_keeps_more(
    tokenizer: Tokenizer, text: str, earlier: list[int], first: int, span: int
) -> None:
    cuts = tokenizer.cuts(text, tokenizer.encode(text))
    for max_tokens in earlier:  # what the cuts remember depends on what was cut before
        cuts.cut(max_tokens)
    kept, count = cuts.cut(first)
    low, high = count + 1, count + 1 + span
    expected = first_longer(tokenizer, text, kept, low, high)
    assert cuts.next_longer(len(kept), low, high) == expected
