"""The generated adapt.v1 messages and gRPC stub, for calls the Client does not wrap.

    from adaptd_client.proto import adapt_pb2, adapt_pb2_grpc
    request = adapt_pb2.PingRequest()
"""

from ._stubs import pb as adapt_pb2
from ._stubs import pb_grpc as adapt_pb2_grpc

__all__ = ["adapt_pb2", "adapt_pb2_grpc"]
