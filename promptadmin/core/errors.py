from __future__ import annotations


class ConflictError(Exception):
    """The change cannot be made in the current state of the data."""


class StaleRevisionError(ConflictError):
    """Someone saved the object since the caller read it."""

    def __init__(self, *, expected: int, current: int, what: str = "The segment") -> None:
        self.expected = expected
        self.current = current
        self.what = what
        super().__init__(
            f"{what} was changed by someone else: you edited revision {expected}, "
            f"the current revision is {current}."
        )


class StaleStateError(ConflictError):
    """The object is no longer in the state the caller last saw and said it expected (an
    object without a revision: a label, an interface); the message says what it is now."""


class InUseError(ConflictError):
    """The object cannot be deleted while other content points at it."""
