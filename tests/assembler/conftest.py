from __future__ import annotations

import pytest

from assembler import Tokenizer, get_tokenizer


@pytest.fixture(scope="session")
def tokenizer() -> Tokenizer:
    return get_tokenizer()
