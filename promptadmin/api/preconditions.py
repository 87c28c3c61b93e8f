"""Optimistic concurrency: strong ETags on reads, ``If-Match`` required on writes.

A segment's ETag names its revision, and the revision a client sends is handed to the
segment services as ``expected_revision``: they compare it with the row locked inside the
writing transaction, so of two writers holding the same ETag only the first succeeds.
Worlds, rulesets, NPCs and entries have no revision; their ETag is derived from
``updated_at`` (bumped by every saved change) and compared here, with the row locked, in
the same transaction as the service call.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

from django.db import models, transaction
from django.http import Http404
from django.utils.cache import parse_etags
from rest_framework.request import Request

from promptadmin.api.errors import PreconditionFailed, PreconditionRequired
from promptadmin.models import Segment

M = TypeVar("M", bound=models.Model)


def segment_etag(segment: Segment) -> str:
    return f'"segment-{segment.pk}-r{segment.revision}"'


def catalog_etag(obj: models.Model) -> str:
    updated_at = obj.updated_at  # type: ignore[attr-defined]
    return f'"{obj._meta.model_name}-{obj.pk}-{updated_at:%Y%m%dT%H%M%S%f}"'


def if_match(request: Request) -> list[str]:
    """The strong entity tags of the request's If-Match header (428 when there is none)."""
    header = request.headers.get("If-Match", "").strip()
    if not header:
        raise PreconditionRequired()
    tags = parse_etags(header)
    if tags == ["*"]:
        raise PreconditionRequired(
            "If-Match: * would overwrite whatever is there now; send the ETag from your last "
            "read of the object instead."
        )
    # If-Match uses the strong comparison: weak tags never match.
    return [tag for tag in tags if not tag.startswith("W/")]


def expected_revision(request: Request, segment: Segment) -> int:
    """The revision the client last read, from its If-Match header.

    Revisions only grow and a client holds only tags it has read, so of several tags the
    highest is the only one that can still be current.
    """
    pattern = re.compile(rf'"segment-{segment.pk}-r([0-9]{{1,9}})"')
    revisions = [int(m[1]) for tag in if_match(request) if (m := pattern.fullmatch(tag))]
    if not revisions:
        raise PreconditionFailed(
            f"If-Match names no revision of segment #{segment.pk}; its ETag looks like "
            f"{segment_etag(segment)}. Read the segment and send its ETag."
        )
    return max(revisions)


@contextmanager
def locked_for_change(request: Request, model: type[M], slug: str) -> Iterator[M]:
    """Lock the object, check the client's If-Match against it, and keep the lock while the
    caller applies the change (404 when missing, 428 without If-Match, 412 when stale)."""
    with transaction.atomic():
        obj = model._default_manager.select_for_update().filter(slug=slug).first()
        if obj is None:
            raise Http404
        tags = if_match(request)
        if catalog_etag(obj) not in tags:
            raise PreconditionFailed(
                f"{obj._meta.verbose_name.capitalize()} '{slug}' changed since you read it "
                f"(its ETag is now {catalog_etag(obj)}): read it again and reapply your change."
            )
        yield obj
