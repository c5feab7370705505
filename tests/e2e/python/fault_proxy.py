"""A gRPC proxy in front of the real adaptd that loses calls on demand, for the retry tests.

FaultProxy listens on a free loopback port and forwards every call (any method, bytes
unchanged, the caller's authorization metadata with it) to the upstream adaptd. fail(method,
when, times) makes the next `times` attempts of that method end in UNAVAILABLE instead:
when="before" answers without forwarding (the server never sees the call), when="after"
forwards the whole call and drops the server's answer (the server applied it; the client cannot
know). attempts[method] counts the attempts that reached the proxy and retried[method] those
that gRPC marked as retries (grpc-previous-rpc-attempts).

Needs the PyPI grpcio (grpc.server) that the installed client brings.
"""

import collections
import threading
from concurrent import futures

import grpc

_CLIENT_STREAMING = {"Adapt", "Forget", "ImportStore"}
_SERVER_STREAMING = {"ExportStore"}
_BIDI_STREAMING = {"PredictStream"}
LOST_ANSWER = "injected by the test proxy: the answer was lost"
NOT_FORWARDED = "injected by the test proxy: the call was not forwarded"


class FaultProxy:
    def __init__(self, upstream):
        self.upstream = upstream
        self._channel = grpc.insecure_channel(upstream)
        self._lock = threading.Lock()
        self._faults = collections.defaultdict(list)
        self.attempts = collections.Counter()
        self.retried = collections.Counter()
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        self._server.add_generic_rpc_handlers([_Handler(self)])
        port = self._server.add_insecure_port("127.0.0.1:0")
        self.address = "127.0.0.1:%d" % port
        self._server.start()

    def fail(self, method, when, times=1):
        if when not in ("before", "after"):
            raise ValueError("when: 'before' or 'after', got %r" % (when,))
        with self._lock:
            self._faults[method].extend([when] * times)

    def reset(self):
        with self._lock:
            self._faults.clear()
            self.attempts.clear()
            self.retried.clear()

    def stop(self):
        self._server.stop(grace=None)
        self._channel.close()

    # -- used by the handler -----------------------------------------------------------------

    def _next_fault(self, method, metadata):
        with self._lock:
            self.attempts[method] += 1
            if any(key == "grpc-previous-rpc-attempts" for key, _ in metadata):
                self.retried[method] += 1
            faults = self._faults.get(method)
            return faults.pop(0) if faults else None


def _forwarded_metadata(context):
    return tuple((key, value) for key, value in context.invocation_metadata()
                 if key == "authorization")


class _Handler(grpc.GenericRpcHandler):
    def __init__(self, proxy):
        self.proxy = proxy

    def service(self, handler_call_details):
        full = handler_call_details.method
        method = full.rsplit("/", 1)[-1]
        proxy = self.proxy
        channel = proxy._channel

        def begin(context):
            fault = proxy._next_fault(method, context.invocation_metadata())
            if fault == "before":
                context.abort(grpc.StatusCode.UNAVAILABLE, NOT_FORWARDED)
            return fault, dict(timeout=context.time_remaining(),
                               metadata=_forwarded_metadata(context))

        def finish(fault, context):
            if fault == "after":
                context.abort(grpc.StatusCode.UNAVAILABLE, LOST_ANSWER)

        def relay_error(error, context):
            context.abort(error.code(), error.details())

        if method in _CLIENT_STREAMING:
            def stream_unary(requests, context):
                fault, kwargs = begin(context)
                try:
                    answer = channel.stream_unary(full)(requests, **kwargs)
                except grpc.RpcError as error:
                    relay_error(error, context)
                finish(fault, context)
                return answer
            return grpc.stream_unary_rpc_method_handler(stream_unary)
        if method in _SERVER_STREAMING:
            def unary_stream(request, context):
                fault, kwargs = begin(context)
                try:
                    answers = list(channel.unary_stream(full)(request, **kwargs))
                except grpc.RpcError as error:
                    relay_error(error, context)
                finish(fault, context)
                yield from answers
            return grpc.unary_stream_rpc_method_handler(unary_stream)
        if method in _BIDI_STREAMING:
            def stream_stream(requests, context):
                fault, kwargs = begin(context)
                try:
                    answers = list(channel.stream_stream(full)(requests, **kwargs))
                except grpc.RpcError as error:
                    relay_error(error, context)
                finish(fault, context)
                yield from answers
            return grpc.stream_stream_rpc_method_handler(stream_stream)

        def unary_unary(request, context):
            fault, kwargs = begin(context)
            try:
                answer = channel.unary_unary(full)(request, **kwargs)
            except grpc.RpcError as error:
                relay_error(error, context)
            finish(fault, context)
            return answer
        return grpc.unary_unary_rpc_method_handler(unary_unary)
