"""Keep cached segment token counts in the configured encoding."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Q

from promptadmin.content.models import Segment
from promptadmin.core.cache import content_changed
from promptadmin.core.tokens import tokenizer


def stale_token_counts() -> Q:
    """Segments whose cached count is missing or was made with another encoding."""
    return Q(token_count__isnull=True) | ~Q(token_encoding=tokenizer().name)


def segments_recount_tokens(*, batch_size: int = 500) -> int:
    """Recount the stale cached counts, in batches; returns how many were recounted.

    A count is a cache of the content, not content: recounting bumps no revision and
    writes no history. Until it has run, assembly ignores counts made with another
    encoding and counts those segments on the fly.
    """
    tok = tokenizer()
    recounted = 0
    while True:
        with transaction.atomic():
            rows = list(
                Segment.objects.select_for_update(skip_locked=True)
                .filter(stale_token_counts())
                .only("id", "content")[:batch_size]
            )
            if not rows:
                return recounted
            for row in rows:
                row.token_count = tok.count(row.content)
                row.token_encoding = tok.name
            Segment.objects.bulk_update(rows, ["token_count", "token_encoding"])
            content_changed()
        recounted += len(rows)
