"""Cached token counts follow the configured encoding (``manage.py recount_tokens``).

Only cl100k_base ships offline, so a change of encoding is simulated by marking rows as
counted with another one.
"""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from assembler.request import AssembleParams
from promptadmin.content.assembly import assemble_prompt
from promptadmin.content.models import Segment
from promptadmin.core.tokens import tokenizer
from tests.factories import EntryFactory, make_segment

pytestmark = pytest.mark.django_db


def test_recount_tokens_recounts_counts_made_with_another_encoding() -> None:
    stale = make_segment(content="The tide keeps its promises.")
    fresh = make_segment(content="Fresh.")
    Segment.objects.filter(pk=stale.pk).update(token_count=1, token_encoding="p50k_base")
    history_rows = Segment.history.count()
    out = StringIO()
    call_command("recount_tokens", stdout=out)
    assert "1 segments recounted with cl100k_base" in out.getvalue()
    stale.refresh_from_db()
    assert (stale.token_count, stale.token_encoding) == (
        tokenizer().count("The tide keeps its promises."),
        "cl100k_base",
    )
    # A count is a cache, not content: no new revision, no history row.
    assert stale.revision == 1 and Segment.history.count() == history_rows
    assert Segment.objects.get(pk=fresh.pk).token_encoding == "cl100k_base"


def test_assembly_ignores_counts_made_with_another_encoding() -> None:
    entry = EntryFactory()
    segment = make_segment(scope="world", ref=entry.world, content="Grey sea, grey sky.")
    Segment.objects.filter(pk=segment.pk).update(token_count=5000, token_encoding="p50k_base")
    result = assemble_prompt(AssembleParams(entry=entry.slug, token_budget=200))
    assert result.meta.layers["world"].segment_ids == [segment.pk]
    assert result.meta.tokens < 200
