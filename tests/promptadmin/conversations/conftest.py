"""The conversation tests use the API tests' keys and clients (their own fixtures are in
fixtures.py, registered for the whole suite)."""

from __future__ import annotations

from tests.promptadmin.api.conftest import (  # noqa: F401 - the API tests' fixtures
    empty_cache,
    read_key,
    reader,
    write_key,
    writer,
)
