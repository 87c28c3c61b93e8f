"""The API tests' fixtures: demo content, and clients holding read and write keys."""

from __future__ import annotations

from tests.promptadmin.api.conftest import (  # noqa: F401  (fixtures)
    demo,
    empty_cache,
    read_key,
    reader,
    write_key,
    writer,
)
