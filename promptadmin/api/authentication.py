"""Who is calling: a service with an API key, or a person signed in with a browser session.

API keys travel only in ``Authorization: Api-Key <key>``. A key in the URL is refused
outright (400) rather than ignored, so the caller learns at once that it ended up in
access logs and should be rotated.

Keys are 8-character prefix + 32 random characters (about 190 bits), stored as a SHA-512
hash by djangorestframework-api-key (3.x). A slow password hasher (PBKDF2, what 1.x/2.x
used) defends low-entropy secrets against brute force; a key this random gains nothing
from it, and it would cost milliseconds of CPU on every call. A verified key therefore
costs a microsecond hash and reading its row, which each process keeps while no key
changes (``promptadmin.content.keys``): checking that costs one cache read, and
revocation and expiry still take effect with the very next request.
"""

from __future__ import annotations

import re
from typing import Any

from django.contrib.auth.models import AnonymousUser
from rest_framework import authentication, exceptions, status
from rest_framework.request import Request

from promptadmin.content.keys import find_key
from promptadmin.content.models import ApiKey
from promptadmin.core.actors import Actor

KEYWORD = "Api-Key"
# Query parameters under which clients commonly send credentials.
CREDENTIAL_PARAMETERS = frozenset(
    {"api_key", "apikey", "api-key", "key", "token", "access_token", "authorization"}
)
# What a key generated here looks like (prefix.secret).
KEY_SHAPE = re.compile(r"[A-Za-z0-9]{8}\.[A-Za-z0-9]{32}")


class CredentialsInUrl(exceptions.APIException):
    status_code = status.HTTP_400_BAD_REQUEST
    default_code = "credentials_in_url"
    default_detail = (
        "API keys are accepted only in the Authorization header (Authorization: Api-Key "
        "<key>), never in the URL, where they end up in logs and browser history. "
        "Consider this key exposed and have it replaced."
    )


def refuse_credentials_in_url(request: Request) -> None:
    for name, values in request.query_params.lists():
        if name.lower() in CREDENTIAL_PARAMETERS or any(KEY_SHAPE.search(v) for v in values):
            raise CredentialsInUrl()


def verified_key(key: str) -> ApiKey:
    """The valid, unrevoked, unexpired key ``key`` is, else AuthenticationFailed (401)."""
    prefix, dot, _secret = key.partition(".")
    api_key = find_key(prefix) if dot else None
    if api_key is None or not api_key.is_valid(key):
        raise exceptions.AuthenticationFailed("Invalid API key.")
    if api_key.revoked:
        raise exceptions.AuthenticationFailed(f"API key '{api_key.name}' has been revoked.")
    if api_key.has_expired:
        raise exceptions.AuthenticationFailed(
            f"API key '{api_key.name}' expired at {api_key.expiry_date:%Y-%m-%d %H:%M} UTC."
        )
    return api_key


def actor_of(request: Request) -> Actor:
    """Who the services see acting: the API key the request came with, or the signed-in
    person (None for nobody: permissions refuse that before any service is called)."""
    if isinstance(request.auth, ApiKey):
        return request.auth
    return request.user if request.user.is_authenticated else None


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """``Authorization: Api-Key <key>``; the key becomes ``request.auth`` (an ApiKey)."""

    def authenticate(self, request: Request) -> tuple[Any, ApiKey] | None:
        # Runs first on every API request, so this guards session requests as well.
        refuse_credentials_in_url(request)
        keyword, _, key = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
        if keyword.lower() != KEYWORD.lower():
            return None
        return AnonymousUser(), verified_key(key.strip())

    def authenticate_header(self, request: Request) -> str:
        # Makes DRF answer 401 (not 403) to an unauthenticated request.
        return KEYWORD
