"""ETags and preconditions for every endpoint: strong ETags on reads, ``If-Match`` on
writes, ``If-None-Match`` on reads (:func:`none_match`).

What an ETag names, by kind of object:

- objects with a revision (segments, worlds, rulesets, NPCs, entries, scenarios): the
  kind, the id and the revision (:func:`etag`);
- interfaces and adapter instructions: the kind, the id and the time of the last change
  (:func:`updated_at_etag`);
- a release label: the release it points at (:func:`label_etag`).

The views only read what a client sent (:func:`expected_revision`,
:func:`expected_updated_at`, :func:`expected_label`) and hand it to the services, which
compare it with the row they lock inside the writing transaction: of two writers holding
the same ETag only the first succeeds. There is no merge on the API: a stale If-Match is
always 412.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from django.db import models
from django.utils.cache import parse_etags
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from promptadmin.api.errors import (
    ClientErrorResponseSerializer,
    PreconditionFailed,
    PreconditionRequired,
)
from promptadmin.releases.services import ANY_RELEASE

# How the schema documents them, for every operation alike.
IF_MATCH = OpenApiParameter(
    "If-Match",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    required=True,
    description="The ETag from your last read of the object.",
)
IF_MATCH_OPTIONAL = OpenApiParameter(
    "If-Match",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    description="Optional: the ETag from your last read; 412 if the segment changed since.",
)
ETAG = OpenApiParameter(
    "ETag",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    response=True,
    description="Strong entity tag of the object, for If-Match.",
)
PRECONDITION_ERRORS = {
    412: OpenApiResponse(
        ClientErrorResponseSerializer,
        description="If-Match does not name the current version: someone changed the object.",
    ),
    428: OpenApiResponse(
        ClientErrorResponseSerializer,
        description="If-Match is missing, or `*` (which would overwrite any version).",
    ),
}


def etag(obj: models.Model) -> str:
    """``"segment-12-r3"``, ``"world-4-r2"``: the kind, the id and the revision."""
    revision = obj.revision  # type: ignore[attr-defined]
    return f'"{obj._meta.model_name}-{obj.pk}-r{revision}"'


# An updated_at ETag's time: to the microsecond, so two changes never share a tag.
_UPDATED_AT = "%Y%m%dT%H%M%S%f"


def updated_at_etag(obj: models.Model) -> str:
    """For objects without a revision (interfaces, adapter instructions): the kind, the id
    and the time of the last change, to the microsecond (UTC)."""
    updated_at = obj.updated_at.astimezone(UTC)  # type: ignore[attr-defined]
    return f'"{obj._meta.model_name}-{obj.pk}-{updated_at:{_UPDATED_AT}}"'


def label_etag(label: str, release: str | None) -> str:
    """A release label's state: the release it points at (``none`` while it does not exist)."""
    return f'"label-{label}-{release or "none"}"'


def with_etag(data: Any, tag: str, status_code: int = status.HTTP_200_OK) -> Response:
    """An answer carrying the ETag of the object it shows."""
    return Response(data, status=status_code, headers={"ETag": tag})


def _strong(tags: list[str]) -> list[str]:
    # If-Match uses the strong comparison: weak tags never match.
    return [tag for tag in tags if not tag.startswith("W/")]


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
    return _strong(tags)


def _not_named(obj: models.Model, current: str) -> PreconditionFailed:
    what = str(obj._meta.verbose_name)
    return PreconditionFailed(
        f"If-Match names no version of this {what}; its ETag looks like {current}. "
        f"Read the {what} and send its ETag."
    )


def expected_revision(request: Request, obj: models.Model) -> int:
    """The revision of ``obj`` the client last read, from its If-Match header.

    Revisions only grow and a client holds only tags it has read, so of several tags the
    highest is the only one that can still be current.
    """
    pattern = re.compile(rf'"{obj._meta.model_name}-{obj.pk}-r([0-9]{{1,9}})"')
    revisions = [int(m[1]) for tag in if_match(request) if (m := pattern.fullmatch(tag))]
    if not revisions:
        raise _not_named(obj, etag(obj))
    return max(revisions)


def expected_updated_at(request: Request, obj: models.Model) -> datetime:
    """The time of the last change to ``obj`` the client saw, from its If-Match header
    (of several tags, the newest: the only one that can still be current)."""
    pattern = re.compile(rf'"{obj._meta.model_name}-{obj.pk}-([0-9]{{8}}T[0-9]{{12}})"')
    times = [
        datetime.strptime(m[1], _UPDATED_AT).replace(tzinfo=UTC)
        for tag in if_match(request)
        if (m := pattern.fullmatch(tag))
    ]
    if not times:
        raise _not_named(obj, updated_at_etag(obj))
    return max(times)


def expected_label(request: Request, label: str) -> list[str | None] | None:
    """Where the client last saw release label ``label``, from an optional If-Match: the
    release names it may point at (None: that it does not exist; ``ANY_RELEASE`` for
    ``*``: that it exists), or None when no If-Match was sent.

    A tag of another label, or a weak one, names no state the label can be in.
    """
    header = request.headers.get("If-Match", "").strip()
    if not header:
        return None
    tags = parse_etags(header)
    if tags == ["*"]:
        return [ANY_RELEASE]
    prefix = f'"label-{label}-'
    states: list[str | None] = []
    for tag in _strong(tags):
        if tag.startswith(prefix) and tag.endswith('"') and len(tag) > len(prefix) + 1:
            name = tag[len(prefix) : -1]
            # "none" is also a possible release name: the tag has always meant either.
            states.extend([None, name] if name == "none" else [name])
    return states


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
