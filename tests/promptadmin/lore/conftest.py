from __future__ import annotations

import pytest
from django.core.cache import cache


@pytest.fixture(autouse=True)
def empty_cache() -> None:
    # Redis outlives the rolled-back test transaction: each test starts from a new lore
    # generation, so no book a process kept from another test's rows is served.
    cache.clear()
