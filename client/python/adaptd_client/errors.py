"""The one exception the client raises for a failed call."""

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

    def __init__(self, code, message, method=""):
        self.code = code
        self.code_name = code.name if isinstance(code, grpc.StatusCode) else str(code)
        self.message = message or ""
        self.method = method
        prefix = "%s: " % method if method else ""
        super().__init__("%s%s: %s" % (prefix, self.code_name, self.message))

    @classmethod
    def from_rpc_error(cls, error, method=""):
        code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
        details = error.details() if hasattr(error, "details") else str(error)
        return cls(code or grpc.StatusCode.UNKNOWN, details, method)
