"""Optimistic concurrency: strong ETags on reads, ``If-Match`` required on writes; and
``If-None-Match`` on reads (:func:`none_match`).

An object's ETag names its revision (segments, worlds, rulesets, NPCs and entries all have
one), and the revision a client sends is handed to the services as ``expected_revision``:
they compare it with the row locked inside the writing transaction, so of two writers
holding the same ETag only the first succeeds. There is no merge on the API: a stale
If-Match is always 412.
"""

from __future__ import annotations

import re

from django.db import models
from django.utils.cache import parse_etags
from rest_framework.request import Request

from promptadmin.api.errors import PreconditionFailed, PreconditionRequired


def etag(obj: models.Model) -> str:
    """``"segment-12-r3"``, ``"world-4-r2"``: the kind, the id and the revision."""
    revision = obj.revision  # type: ignore[attr-defined]
    return f'"{obj._meta.model_name}-{obj.pk}-r{revision}"'


def updated_at_etag(obj: models.Model) -> str:
    """For objects without a revision (interfaces, adapter instructions): the kind, the id
    and the time of the last change, to the microsecond."""
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


def expected_revision(request: Request, obj: models.Model) -> int:
    """The revision of ``obj`` the client last read, from its If-Match header.

    Revisions only grow and a client holds only tags it has read, so of several tags the
    highest is the only one that can still be current.
    """
    pattern = re.compile(rf'"{obj._meta.model_name}-{obj.pk}-r([0-9]{{1,9}})"')
    revisions = [int(m[1]) for tag in if_match(request) if (m := pattern.fullmatch(tag))]
    if not revisions:
        what = str(obj._meta.verbose_name)
        raise PreconditionFailed(
            f"If-Match names no revision of this {what}; its ETag looks like {etag(obj)}. "
            f"Read the {what} and send its ETag."
        )
    return max(revisions)


def none_match(header: str, current: str) -> bool:
    """Whether an ``If-None-Match`` header names ``current``: the client holds it (304).

    RFC 9110 13.1.2: If-None-Match uses the weak comparison, so ``W/"x"`` matches ``"x"``
    (a proxy that compresses a response weakens its tag, and the client still holds the
    same representation). The header may list several tags; ``*`` matches whatever exists.

    >>> none_match('"a", W/"pv-1"', '"pv-1"'), none_match("*", '"pv-1"'), none_match('"b"', '"a"')
    (True, True, False)
    """
    tags = parse_etags(header)
    if tags == ["*"]:
        return True
    opaque = current.removeprefix("W/")
    return any(tag.removeprefix("W/") == opaque for tag in tags)
