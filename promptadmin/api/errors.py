"""One error shape for every endpoint, and the mapping from domain errors to HTTP.

Every error response is ``{"type": ..., "errors": [{"code", "detail", "attr"}]}``
(drf-standardized-errors). Services and the assembly selector raise domain errors; they
are turned into HTTP errors here, so views only parse, call and render.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied, SuspiciousOperation
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError
from drf_standardized_errors.handler import ExceptionHandler
from rest_framework import exceptions, serializers, status
from rest_framework.exceptions import ErrorDetail
from rest_framework.fields import get_error_detail
from rest_framework.settings import api_settings

import assembler
from promptadmin.content.assembly import AssemblyInputError
from promptadmin.content.models import REF_FIELDS
from promptadmin.core.errors import InUseError, StaleRevisionError, StaleStateError
from promptadmin.prompts.errors import PromptLookupError, RenderInputError
from promptadmin.releases.services import ExpectationsFailing


class PreconditionRequired(exceptions.APIException):
    status_code = status.HTTP_428_PRECONDITION_REQUIRED
    default_code = "precondition_required"
    default_detail = (
        "This change needs an If-Match header with the ETag from your last read of the object."
    )


class PreconditionFailed(exceptions.APIException):
    status_code = status.HTTP_412_PRECONDITION_FAILED
    default_code = "precondition_failed"
    default_detail = "The object changed since you read it: read it again and reapply your change."


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "conflict"
    default_detail = "The change conflicts with the current state of the content."


class OverBudget(exceptions.APIException):
    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    default_code = "over_budget"
    default_detail = "The protected layers alone exceed the token budget."


def _field_errors(exc: DjangoValidationError) -> Any:
    """A Django ValidationError as DRF error details, with model fields named as in the API."""
    detail = get_error_detail(exc)
    if not isinstance(detail, dict):
        return detail
    renamed: dict[str, Any] = {}
    for name, errors in detail.items():
        # A segment's owner is one of four foreign keys in the model and ``ref`` in the API.
        key = "ref" if name in REF_FIELDS else name
        key = api_settings.NON_FIELD_ERRORS_KEY if key == "__all__" else key
        renamed.setdefault(key, []).extend(errors)
    return renamed


def request_errors(error: assembler.RequestError) -> dict[str, Any]:
    """A request's problems as DRF error details, nested by path as DRF's own fields nest
    them (``{"npcs": {3: {"tier": [...]}}}``): the 400 body names ``npcs.3.tier``."""
    detail: dict[Any, Any] = {}
    for problem in error.problems:
        path = problem.path or (api_settings.NON_FIELD_ERRORS_KEY,)
        node = detail
        for step in path[:-1]:
            node = node.setdefault(step, {})
        node.setdefault(path[-1], []).append(ErrorDetail(problem.message, code=problem.code))
    return detail


def api_error(exc: Exception) -> Exception:
    """The HTTP error for a domain error, or ``exc`` itself when it is not one."""
    if isinstance(exc, DjangoValidationError):
        return exceptions.ValidationError(_field_errors(exc))
    if isinstance(exc, PermissionDenied):
        # A service's refusal says what was refused and what it needs: kept, not DRF's
        # generic sentence.
        return exceptions.PermissionDenied(str(exc) or None)
    if isinstance(exc, assembler.RequestError):
        return exceptions.ValidationError(request_errors(exc))
    if isinstance(exc, AssemblyInputError):
        return exceptions.ValidationError({name: [msg] for name, msg in exc.errors.items()})
    if isinstance(exc, RenderInputError):
        return exceptions.ValidationError(exc.errors)
    if isinstance(exc, PromptLookupError):
        return exceptions.NotFound(exc.message)
    if isinstance(exc, assembler.OverBudgetError):
        return OverBudget({"token_budget": [str(exc)]})
    if isinstance(exc, StaleRevisionError):
        return PreconditionFailed(
            f"{exc} Read it again (its ETag names the current revision) and reapply your change."
        )
    if isinstance(exc, StaleStateError):
        return PreconditionFailed(str(exc))
    if isinstance(exc, ExpectationsFailing):
        return Conflict(str(exc), code="expectations_failing")
    if isinstance(exc, InUseError):
        return Conflict(str(exc))
    if isinstance(exc, IntegrityError):
        # Validation runs first; this is a concurrent writer winning a uniqueness race.
        return Conflict("The change conflicts with one made at the same time; try again.")
    if isinstance(exc, SuspiciousOperation):
        # Django answers these with a 400 outside DRF; so do we (e.g. a body too large).
        return exceptions.ParseError(str(exc) or "Bad request.")
    return exc


class PromptadminExceptionHandler(ExceptionHandler):
    def convert_known_exceptions(self, exc: Exception) -> Exception:
        return super().convert_known_exceptions(api_error(exc))


# The documented shape (for the OpenAPI schema).


class ErrorSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="Stable, machine-readable error code.")
    detail = serializers.CharField(help_text="What went wrong, for people.")
    attr = serializers.CharField(
        allow_null=True,
        help_text="The offending input field (dotted path for nested fields), or null.",
    )


class ValidationErrorResponseSerializer(serializers.Serializer):
    """400: invalid input (``validation_error``) or an unreadable request (``client_error``)."""

    type = serializers.ChoiceField(choices=["validation_error", "client_error"])
    errors = ErrorSerializer(many=True)


class ClientErrorResponseSerializer(serializers.Serializer):
    type = serializers.ChoiceField(choices=["client_error"])
    errors = ErrorSerializer(many=True)
