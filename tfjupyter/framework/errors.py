"""TensorFlow's error classes, with its hierarchy: every runtime error is an OpError."""
from __future__ import annotations

from typing import Optional

__all__ = [
    "OpError", "CancelledError", "UnknownError", "InvalidArgumentError", "DeadlineExceededError",
    "NotFoundError", "AlreadyExistsError", "PermissionDeniedError", "UnauthenticatedError",
    "ResourceExhaustedError", "FailedPreconditionError", "AbortedError", "OutOfRangeError",
    "UnimplementedError", "InternalError", "UnavailableError", "DataLossError",
]

OK, CANCELLED, UNKNOWN, INVALID_ARGUMENT, DEADLINE_EXCEEDED, NOT_FOUND, ALREADY_EXISTS = range(7)
PERMISSION_DENIED, RESOURCE_EXHAUSTED, FAILED_PRECONDITION, ABORTED, OUT_OF_RANGE = range(7, 12)
UNIMPLEMENTED, INTERNAL, UNAVAILABLE, DATA_LOSS, UNAUTHENTICATED = range(12, 17)


class OpError(Exception):
    """A failure while running a graph; ``op`` is the operation that failed, if known."""

    error_code = UNKNOWN

    def __init__(self, node_def=None, op=None, message: str = "", error_code: Optional[int] = None):
        super().__init__(message)
        self.node_def = node_def
        self.op = op
        self.message = message
        if error_code is not None:
            self.error_code = error_code

    def __str__(self) -> str:
        return self.message


def _error_class(name: str, code: int) -> type:
    def __init__(self, node_def=None, op=None, message: str = "", *args):
        OpError.__init__(self, node_def, op, message, code)
    return type(name, (OpError,), {"__init__": __init__, "error_code": code})


CancelledError = _error_class("CancelledError", CANCELLED)
UnknownError = _error_class("UnknownError", UNKNOWN)
InvalidArgumentError = _error_class("InvalidArgumentError", INVALID_ARGUMENT)
DeadlineExceededError = _error_class("DeadlineExceededError", DEADLINE_EXCEEDED)
NotFoundError = _error_class("NotFoundError", NOT_FOUND)
AlreadyExistsError = _error_class("AlreadyExistsError", ALREADY_EXISTS)
PermissionDeniedError = _error_class("PermissionDeniedError", PERMISSION_DENIED)
UnauthenticatedError = _error_class("UnauthenticatedError", UNAUTHENTICATED)
ResourceExhaustedError = _error_class("ResourceExhaustedError", RESOURCE_EXHAUSTED)
FailedPreconditionError = _error_class("FailedPreconditionError", FAILED_PRECONDITION)
AbortedError = _error_class("AbortedError", ABORTED)
OutOfRangeError = _error_class("OutOfRangeError", OUT_OF_RANGE)
UnimplementedError = _error_class("UnimplementedError", UNIMPLEMENTED)
InternalError = _error_class("InternalError", INTERNAL)
UnavailableError = _error_class("UnavailableError", UNAVAILABLE)
DataLossError = _error_class("DataLossError", DATA_LOSS)

for _cls in (CancelledError, UnknownError, InvalidArgumentError, DeadlineExceededError,
             NotFoundError, AlreadyExistsError, PermissionDeniedError, UnauthenticatedError,
             ResourceExhaustedError, FailedPreconditionError, AbortedError, OutOfRangeError,
             UnimplementedError, InternalError, UnavailableError, DataLossError):
    _cls.__module__ = __name__
