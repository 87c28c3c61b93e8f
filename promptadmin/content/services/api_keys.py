"""API keys for services: created (the key is shown once), renamed, given a new expiry, and
revoked for good. The secret and the scope never change."""

from __future__ import annotations

import logging
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import transaction

from promptadmin.content.models import ApiKey, ApiKeyScope
from promptadmin.core.actors import Actor, user_or_none
from promptadmin.core.roles import Role, require

logger = logging.getLogger(__name__)
MANAGING_KEYS = "Managing API keys"


@transaction.atomic
def api_key_create(
    *, actor: Actor, name: str, scope: str, expires_at: datetime | None = None
) -> tuple[ApiKey, str]:
    """A new key and its secret; only its hash is stored, so the secret cannot be shown again."""
    require(actor, role=Role.ADMIN, action=MANAGING_KEYS)
    if scope not in ApiKeyScope.values:
        raise ValidationError(
            {"scope": f"Unknown scope '{scope}'; use one of: {', '.join(ApiKeyScope.values)}."}
        )
    api_key = ApiKey(name=name, scope=scope, expiry_date=expires_at)
    key = ApiKey.objects.assign_key(api_key)
    api_key.full_clean()
    api_key.save()
    who = user_or_none(actor)
    logger.info(
        "API key %r (%s, scope %s) created by %s", name, api_key.prefix, scope, who or "a script"
    )
    return api_key, key


@transaction.atomic
def api_key_update(
    *, actor: Actor, api_key: ApiKey, name: str, expires_at: datetime | None
) -> ApiKey:
    """Rename a key or change when it expires; saves and logs only what changed."""
    require(actor, role=Role.ADMIN, action=MANAGING_KEYS)
    current = ApiKey.objects.select_for_update().get(pk=api_key.pk)
    before = {"name": current.name, "expiry_date": current.expiry_date}
    current.name = name
    current.expiry_date = expires_at
    changed = [field for field, value in before.items() if getattr(current, field) != value]
    if not changed:
        return current
    current.full_clean()
    current.save(update_fields=changed)
    who = user_or_none(actor)
    for field in changed:
        logger.info(
            "API key %s: %s changed from %r to %r by %s",
            current.prefix,
            field,
            before[field],
            getattr(current, field),
            who or "a script",
        )
    return current


@transaction.atomic
def api_key_revoke(*, actor: Actor, api_key: ApiKey) -> ApiKey:
    """Revoke a key for good: it fails from the next request on."""
    require(actor, role=Role.ADMIN, action=MANAGING_KEYS)
    if not api_key.revoked:
        api_key.revoked = True
        api_key.save(update_fields=["revoked"])
        who = user_or_none(actor)
        logger.info(
            "API key %r (%s) revoked by %s", api_key.name, api_key.prefix, who or "a script"
        )
    return api_key
