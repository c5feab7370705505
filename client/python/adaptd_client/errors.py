"""The exceptions the client raises for a failed call: AdaptdError and one subclass per code.

Catch AdaptdError for any failure, or the subclass for one code (NotFoundError, ...); every one
carries the gRPC status code, its name, the server's message and the method that failed.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Type

import grpc


class AdaptdError(Exception):
    """A call to adaptd failed.

    Attributes:
      code: the grpc.StatusCode of the failure (grpc.StatusCode.UNAVAILABLE when the server
        could not be reached, DEADLINE_EXCEEDED when the client's deadline passed).
      code_name: the code's name as the gRPC documentation spells it, e.g. "NOT_FOUND".
      message: the server's message (names the field and the reason for INVALID_ARGUMENT).
      method: the RPC that failed, e.g. "Predict".
    """

    code: Any
    code_name: str
    message: str
    method: str

    def __init__(self, code: Any, message: Optional[str], method: str = "") -> None:
        self.code = code
        self.code_name = code.name if isinstance(code, grpc.StatusCode) else str(code)
        self.message = message or ""
        self.method = method
        prefix = "%s: " % method if method else ""
        super().__init__("%s%s: %s" % (prefix, self.code_name, self.message))

    def __reduce__(self):
        return (error_for, (self.code, self.message, self.method))

    @classmethod
    def from_rpc_error(cls, error: Any, method: str = "") -> "AdaptdError":
        """The typed exception for a grpc.RpcError (or grpc.aio.AioRpcError)."""
        code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
        details = error.details() if hasattr(error, "details") else str(error)
        return error_for(code or grpc.StatusCode.UNKNOWN, details, method)


class InvalidArgumentError(AdaptdError):
    """INVALID_ARGUMENT: a malformed request (names, dimensions, non-finite values, ...)."""


class NotFoundError(AdaptdError):
    """NOT_FOUND: the store does not exist (or was deleted during the call)."""


class AlreadyExistsError(AdaptdError):
    """ALREADY_EXISTS: CreateStore or ImportStore on an existing name."""


class FailedPreconditionError(AdaptdError):
    """FAILED_PRECONDITION: valid, but the store's state refuses it (e.g. predict before a
    compile)."""


class ResourceExhaustedError(AdaptdError):
    """RESOURCE_EXHAUSTED: a quota or limit (queue full, max_labels, message size)."""


class AbortedError(AdaptdError):
    """ABORTED: an example id was applied by a concurrent call meanwhile; resend the call."""


class DeadlineExceededError(AdaptdError, TimeoutError):
    """DEADLINE_EXCEEDED: the call's deadline passed."""


class CancelledError(AdaptdError):
    """CANCELLED: the call was cancelled."""


class UnauthenticatedError(AdaptdError):
    """UNAUTHENTICATED: a missing or unknown token."""


class PermissionDeniedError(AdaptdError):
    """PERMISSION_DENIED: the token is not allowed to use this tenant or store."""


class UnavailableError(AdaptdError):
    """UNAVAILABLE: the server could not be reached, is draining, or could not make a write
    durable (nothing was acknowledged). Calls the retry policy covers were already retried."""


class UnimplementedError(AdaptdError):
    """UNIMPLEMENTED: the server does not have the method."""


class InternalError(AdaptdError):
    """INTERNAL: a server fault (never a caller's mistake)."""


_BY_CODE: Dict[Any, Type[AdaptdError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgumentError,
    grpc.StatusCode.NOT_FOUND: NotFoundError,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExistsError,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPreconditionError,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhaustedError,
    grpc.StatusCode.ABORTED: AbortedError,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceededError,
    grpc.StatusCode.CANCELLED: CancelledError,
    grpc.StatusCode.UNAUTHENTICATED: UnauthenticatedError,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDeniedError,
    grpc.StatusCode.UNAVAILABLE: UnavailableError,
    grpc.StatusCode.UNIMPLEMENTED: UnimplementedError,
    grpc.StatusCode.INTERNAL: InternalError,
}


def error_for(code: Any, message: Optional[str], method: str = "") -> AdaptdError:
    """The AdaptdError subclass for `code` (AdaptdError itself for the codes without one:
    UNKNOWN, OUT_OF_RANGE, DATA_LOSS)."""
    return _BY_CODE.get(code, AdaptdError)(code, message, method)
