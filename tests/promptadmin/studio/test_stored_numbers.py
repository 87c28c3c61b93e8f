"""The studio's lists and pages serve a row holding a number beyond 64 bits (stored before
such numbers were refused): Django's templates write any integer."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client

from promptadmin.content.models import Segment
from promptadmin.content.services import segments

pytestmark = pytest.mark.usefixtures("content")


def test_lists_and_pages_with_a_poisoned_row_are_served(
    client_as: Callable[[str], Client],
) -> None:
    admin = client_as("admin")
    bad = segments.segment_create(actor=None, scope="core", content="Poisoned lantern.")
    legacy = segments.segment_import_legacy(actor=None, scope="rng", content="Old lantern.")
    Segment.objects.filter(pk__in=[bad.pk, legacy.pk]).update(metadata={"n": 10**20})
    Segment.history.filter(id=bad.pk).update(metadata={"n": 10**20})  # type: ignore[attr-defined]
    for url in (
        "/segments/",
        "/segments/?q=lantern",
        f"/segments/{bad.pk}/",
        f"/segments/{bad.pk}/history/",
        "/deprecated/",
        "/",
    ):
        response = admin.get(url)
        assert response.status_code == 200, url
    assert str(10**20) in admin.get(f"/segments/{bad.pk}/").content.decode()
