"""Errors: every libsession failure is an ``Error`` carrying the library's message.

``Error.status`` is the :class:`Status` code (``ses_status_t``); each code has its own subclass,
so that ``except ses.NotFoundError`` catches only that. Errors that are plainly about a bad
argument also derive from :class:`ValueError`, missing things from :class:`LookupError`.
"""

import enum

from . import _core

__all__ = [
    "Status", "Error", "InvalidArgumentError", "NotFoundError", "FailedPreconditionError",
    "OutOfMemoryError", "UnimplementedError", "IncompatibleError", "UnavailableError",
    "InternalError", "CancelledError", "AlreadyExistsError",
]


class Status(enum.IntEnum):
    """libsession's status codes (``ses_status_t``); the values equal the C enum's."""

    OK = 0
    INVALID_ARGUMENT = 1
    NOT_FOUND = 2
    FAILED_PRECONDITION = 3
    OUT_OF_MEMORY = 4
    UNIMPLEMENTED = 5
    INCOMPATIBLE = 6
    UNAVAILABLE = 7
    INTERNAL = 8
    CANCELLED = 9
    ALREADY_EXISTS = 10


class Error(Exception):
    """A libsession call failed: ``str(e)`` is ``ses_last_error()``'s message (what failed,
    where, and both sides of a mismatch); ``e.status`` is its :class:`Status`."""

    status = Status.INTERNAL

    def __init__(self, message="", status=None):
        super().__init__(message)
        if status is not None:
            self.status = Status(status)

    @property
    def message(self):
        """The library's message."""
        return str(self)


class InvalidArgumentError(Error, ValueError):
    """A bad argument: out of range, malformed name or file, an Edge of another graph."""

    status = Status.INVALID_ARGUMENT


class NotFoundError(Error, LookupError):
    """A named thing does not exist: file, driver, device, node, edge."""

    status = Status.NOT_FOUND


class FailedPreconditionError(Error):
    """The call is valid but the object is in the wrong state for it (a closed session)."""

    status = Status.FAILED_PRECONDITION


class OutOfMemoryError(Error, MemoryError):
    """Host or device memory ran out."""

    status = Status.OUT_OF_MEMORY


class UnimplementedError(Error, NotImplementedError):
    """Not implemented: an op with no kernel on any device, an optional driver entry."""

    status = Status.UNIMPLEMENTED


class IncompatibleError(Error):
    """Versions do not match: driver ABI, manifest format, op set."""

    status = Status.INCOMPATIBLE


class UnavailableError(Error):
    """A resource is missing for now (a vendor runtime, a device, a full disk)."""

    status = Status.UNAVAILABLE


class InternalError(Error):
    """A bug in libsession or a driver."""

    status = Status.INTERNAL


class CancelledError(Error):
    """The work was cancelled."""

    status = Status.CANCELLED


class AlreadyExistsError(Error):
    """The thing being created exists already."""

    status = Status.ALREADY_EXISTS


_BY_STATUS = {
    cls.status: cls
    for cls in (InvalidArgumentError, NotFoundError, FailedPreconditionError, OutOfMemoryError,
                UnimplementedError, IncompatibleError, UnavailableError, InternalError,
                CancelledError, AlreadyExistsError)
}
_core._set_error_types(Error, {int(k): v for k, v in _BY_STATUS.items()})
