"""Who is calling: the client's address, as far as it can be trusted."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def client_address(request: HttpRequest) -> str | None:
    """The client's IP address (for sign-in lockout per address).

    ``X-Forwarded-For`` is anyone's to write, so it counts only when ``TRUST_X_FORWARDED``
    says a proxy sits in front; then its last entry, the one that proxy appended, is the
    client (entries before it come from the client and may be forged).

    >>> from django.test import RequestFactory
    >>> request = RequestFactory().get("/", HTTP_X_FORWARDED_FOR="6.6.6.6, 203.0.113.9")
    >>> client_address(request)  # not behind a trusted proxy: the connection's address
    '127.0.0.1'
    """
    if settings.TRUST_X_FORWARDED:
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
        last = forwarded.rsplit(",", 1)[-1].strip()
        if last:
            return last
    return request.META.get("REMOTE_ADDR")
