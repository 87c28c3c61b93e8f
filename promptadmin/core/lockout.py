"""Sign-in lockout that never locks out the innocent (a django-axes handler).

Wrong passwords are counted per (username, address) pair and per address. The pair is
locked after ``LOGIN_FAILURE_LIMIT`` failures: someone guessing one person's password is
stopped, while that person, or anyone else, still signs in from elsewhere, and everyone
else behind the same address (an office, a proxy) signs in as usual. The address alone is
locked only after ``LOGIN_ADDRESS_FAILURE_LIMIT`` failures across usernames (default 50),
which stops guessing across many accounts without locking a shared address for one
mistyped password. A success clears its own pair's failures only, so that signing in to
one's own account never wipes the count of guesses at others'.

An admin unlocks at once by deleting the attempts (Django admin: Axes, Access attempts).
"""

from __future__ import annotations

from typing import Any

from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_failure_limit
from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError
from django.db.models import QuerySet, Sum
from django.http import HttpRequest


def _failures(attempts: QuerySet[Any]) -> int:
    return int(attempts.aggregate(total=Sum("failures_since_start"))["total"] or 0)


class PairThenAddressHandler(AxesDatabaseHandler):
    """axes' database handler, with the pair and the address held to different limits.

    ``AXES_LOCKOUT_PARAMETERS`` names the pair first, then the address.

    axes compares one count with one limit (``AXES_FAILURE_LIMIT``, the pair's): the count
    given is the pair's failures, or the limit itself once the address is over its own.
    """

    def failure_counts(
        self, request: HttpRequest, credentials: dict[str, Any] | None = None
    ) -> tuple[int, int]:
        """Failures within the cool-off of the (username, address) pair and of the address."""
        pair, address = self.get_user_attempts(request, credentials)
        return _failures(pair), _failures(address)

    def get_failures(self, request: HttpRequest, credentials: dict[str, Any] | None = None) -> int:
        pair, address = self.failure_counts(request, credentials)
        # For the sign-in page, which says how many tries remain before a lock.
        request.axes_address_failures = address  # type: ignore[attr-defined]
        if address >= settings.LOGIN_ADDRESS_FAILURE_LIMIT:
            return max(pair, get_failure_limit(request, credentials))
        return pair

    def reset_user_attempts(
        self, request: HttpRequest, credentials: dict[str, Any] | None = None
    ) -> int:
        pair = self.filter_user_attempts(request, credentials)[0]
        count, _ = pair.delete()
        return count


def tries_left(request: HttpRequest) -> tuple[int, int] | None:
    """After a failed sign-in: wrong passwords left before the pair locks and before the
    address locks; None when nothing was counted (lockout off, or a whitelisted client)."""
    failures = getattr(request, "axes_failures_since_start", None)
    address = getattr(request, "axes_address_failures", None)
    if failures is None or address is None:
        return None
    pair_left = max(0, settings.AXES_FAILURE_LIMIT - failures)
    address_left = max(0, settings.LOGIN_ADDRESS_FAILURE_LIMIT - address)
    return pair_left, address_left


class SignInForm(AuthenticationForm):
    """Django's sign-in form; a wrong password also says how many tries remain."""

    def get_invalid_login_error(self) -> ValidationError:
        error = super().get_invalid_login_error()
        left = tries_left(self.request) if self.request is not None else None
        if left is None:
            return error
        pair_left, address_left = left
        minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
        if address_left < pair_left:
            warning = (
                f"{_tries(address_left)} left from your address, for any username, before "
                f"signing in from it is paused for {minutes} minutes."
            )
        else:
            warning = (
                f"{_tries(pair_left)} left for this username from your address before "
                f"signing in as it from here is paused for {minutes} minutes."
            )
        return ValidationError([error, ValidationError(warning, code="tries_left")])


def _tries(count: int) -> str:
    return f"{count} {'try' if count == 1 else 'tries'}"
