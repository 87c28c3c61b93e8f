"""Uploads that stop at a size limit: refused before reading when their size is announced,
and cut off while streaming when it was not (or was understated)."""

from __future__ import annotations

from typing import Any

from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from django.http import HttpRequest

# What a form may hold besides the file itself: its other fields and the boundaries.
FORM_SLACK_BYTES = 1024 * 1024


def announced_too_large(request: HttpRequest, limit: int) -> bool:
    """Whether the request's ``Content-Length`` is over what a ``limit``-byte file takes."""
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return False
    return length > limit + FORM_SLACK_BYTES


class LimitedUploadHandler(FileUploadHandler):
    """Counts the bytes of one file field and stops the upload once they pass ``limit``
    (``exceeded`` is then True). Installed before the request's body is read."""

    def __init__(self, field: str, limit: int, request: HttpRequest | None = None) -> None:
        super().__init__(request)
        self.field = field
        self.limit = limit
        self.exceeded = False
        self._counting = False
        self._received = 0

    def new_file(self, field_name: str, *args: Any, **kwargs: Any) -> None:
        self._counting = field_name == self.field
        self._received = 0

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes | None:
        if self._counting:
            self._received += len(raw_data)
            if self._received > self.limit:
                self.exceeded = True
                raise StopUpload(connection_reset=True)
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None


def upload_too_large(request: HttpRequest, field: str, limit: int) -> bool:
    """Read the request's form with ``field``'s file limited to ``limit`` bytes: whether
    the file is over it (announced so, or found so while streaming, then cut off).

    Call it before anything reads the form, the CSRF check included (so a view doing
    so is ``csrf_exempt`` and checks CSRF after: the pattern Django documents for upload
    handlers), never skipping the check."""
    if announced_too_large(request, limit):
        return True
    handler = limit_upload(request, field, limit)
    request.POST  # noqa: B018 - parsed here, through the limit, before anything reads it
    return handler.exceeded


def limit_upload(request: HttpRequest, field: str, limit: int) -> LimitedUploadHandler:
    """Install (first) a handler that stops ``field``'s upload past ``limit`` bytes."""
    handler = LimitedUploadHandler(field, limit, request)
    request.upload_handlers.insert(0, handler)
    return handler
