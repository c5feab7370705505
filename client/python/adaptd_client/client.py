"""Client: one gRPC channel to adaptd and a method per RPC of adapt.v1.Adaptation.

Thread safety: a Client may be shared between threads (the channels are thread-safe and the
route table has its own lock). Every call carries a deadline of `timeout` seconds, and
the calls that are safe to resend are retried on UNAVAILABLE with backoff (`retry`, see
RetryPolicy). In a cluster on etcd the calls for a store go to the member holding its shard
(`route_to_holders`, see _routes). adaptd_client.aio.Client has the same methods for asyncio.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import grpc
import numpy as np

from . import _calls, _channel, _convert, _health, _routes
from ._calls import Predictions
from ._channel import DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_RETRY, RetryPolicy
from ._stubs import pb, pb_grpc
from .errors import AdaptdError, error_for

IMPORT_CHUNK_BYTES = _calls.IMPORT_CHUNK_BYTES

__all__ = ["Client", "DEFAULT_MAX_MESSAGE_BYTES", "IMPORT_CHUNK_BYTES"]


def open_channel(settings: _channel.Settings) -> grpc.Channel:
    credentials = settings.credentials()
    if credentials is not None:
        return grpc.secure_channel(settings.address, credentials, options=settings.options)
    return grpc.insecure_channel(settings.address, options=settings.options)


class Client:
    """A connection to one adaptd server.

    Args:
      address: "host:port" of the gRPC listener.
      token: the tenant's bearer token, sent as `authorization: Bearer <token>` metadata
        (default: the environment variable ADAPTD_TOKEN, when set).
      timeout: deadline of every call, in seconds (a streaming call as a whole).
      root_certificates: PEM bytes of the CA to trust; when given the channel uses TLS.
      private_key, certificate_chain: PEM bytes of a client key and certificate, for a server
        that requires client certificates (mutual TLS; with root_certificates).
      max_message_bytes: largest message sent or received (the server's default too).
      channel_options: further (name, value) gRPC channel arguments.
      retry: the RetryPolicy for the calls safe to resend (default: 5 attempts, backoff 0.1 s
        doubling up to 2 s); None turns retries off.
      auto_example_ids: give every adapted example an id when the caller gives none, so a
        resent Adapt call (by the retry policy or by the caller) applies each example once.
      route_to_holders: in a cluster on etcd, send the calls for a store to the member holding
        its shard, by the route table `address` answers (docs/CLIENTS.md, "Routing to
        holders"); calls fall back to `address`, which forwards. A single server turns it off
        by itself; False sends every call to `address`.
    """

    def __init__(self, address: str, token: Optional[str] = None, timeout: float = 30.0,
                 root_certificates: Optional[bytes] = None,
                 max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
                 channel_options: Sequence[Tuple[str, Any]] = (),
                 private_key: Optional[bytes] = None, certificate_chain: Optional[bytes] = None,
                 retry: Optional[RetryPolicy] = DEFAULT_RETRY,
                 auto_example_ids: bool = True, route_to_holders: bool = True) -> None:
        self._settings = _channel.settings(address, token, timeout, root_certificates,
                                           max_message_bytes, channel_options, private_key,
                                           certificate_chain, retry)
        self.address = address
        self.timeout = self._settings.timeout
        self.retry = retry
        self.auto_example_ids = bool(auto_example_ids)
        self._channel = open_channel(self._settings)
        self._stub = pb_grpc.AdaptationStub(self._channel)
        self._metadata = self._settings.metadata
        self._routes = _routes.RouteState(address) if route_to_holders else None
        self._members: Dict[str, Any] = {}  # address -> _Member
        self._members_lock = threading.Lock()
        self._health_check = self._channel.unary_unary(
            _health.CHECK_METHOD,
            request_serializer=_health.HealthCheckRequest.SerializeToString,
            response_deserializer=_health.HealthCheckResponse.FromString)

    # -- plumbing --------------------------------------------------------------------------

    def close(self) -> None:
        with self._members_lock:
            members, self._members = list(self._members.values()), {}
        for member in members:
            member.channel.close()
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _call(self, method: str, request: Any, store: Optional[Tuple[str, str]] = None) -> Any:
        """One call of `method`; `store` (tenant, store) routes it to the store's holder. A
        stream's request is a list (sent again when the call is resent) or an iterator."""
        if store is None or self._routes is None or not self._routes.enabled:
            if isinstance(request, list):
                request = iter(request)
            try:
                response = getattr(self._stub, method)(request, timeout=self.timeout,
                                                       metadata=self._metadata)
                # The one server stream here: read whole within the try.
                return list(response) if method == "ExportStore" else response
            except grpc.RpcError as error:
                raise AdaptdError.from_rpc_error(error, method) from None
        deadline = time.monotonic() + self.timeout
        holder = self._holder(method, store)
        if holder is not None:
            try:
                return self._attempt(method, request, holder, deadline, routed=True)
            except grpc.RpcError as error:
                if not _routes.resend_to_given(error.code(), method, request,
                                               self.retry is not None):
                    raise AdaptdError.from_rpc_error(error, method) from None
        try:
            return self._attempt(method, request, self._stub, deadline, routed=False)
        except grpc.RpcError as error:
            raise AdaptdError.from_rpc_error(error, method) from None

    # -- routing to holders (a cluster on etcd) --------------------------------------------

    def routing(self) -> bool:
        """Whether calls for stores go to their holders now: routing is on and a route table
        is held (after the first call for a store)."""
        return self._routes is not None and self._routes.revision is not None

    def cluster_routes(self) -> Any:
        """The route table the given member answers (adapt.v1.ClusterRoutesResponse): the
        members and the index of each shard's holder (-1: none). A single server raises
        UnimplementedError."""
        return self._call("ClusterRoutes", pb.ClusterRoutesRequest())

    def _attempt(self, method: str, request: Any, stub: Any, deadline: float,
                 routed: bool) -> Any:
        """One attempt within `deadline`, its answer's holder hint given to the route table."""
        multicallable = getattr(stub, method)
        messages = iter(request) if isinstance(request, list) else request
        timeout = max(0.001, deadline - time.monotonic())
        try:
            if method == "ExportStore":  # the one server stream routed
                call = multicallable(messages, timeout=timeout, metadata=self._metadata)
                response: Any = list(call)
            else:
                response, call = multicallable.with_call(messages, timeout=timeout,
                                                         metadata=self._metadata)
        except grpc.RpcError as error:
            self._observe(error, error.code(), routed)
            raise
        self._observe(call, grpc.StatusCode.OK, routed)
        return response

    def _observe(self, call: Any, code: Any, routed: bool) -> None:
        hint = _routes.hint_of(call.initial_metadata(), call.trailing_metadata())
        if self._routes.observe(hint, code, routed):
            self._refresh_routes()

    def _refresh_routes(self) -> None:
        """Refetches the route table when one is due and allowed (at most once a second)."""
        if not self._routes.begin_fetch():
            return
        try:
            response = self._stub.ClusterRoutes(pb.ClusterRoutesRequest(),
                                                timeout=min(self.timeout, 5.0),
                                                metadata=self._metadata)
        except grpc.RpcError as error:
            self._routes.end_fetch(code=error.code())
            return
        self._routes.end_fetch(response)

    def _holder(self, method: str, store: Tuple[str, str]) -> Any:
        """The stub of the store's holder, None for the given member: a call routing leaves
        there, no table, no holder, or a holder whose channel failed to connect."""
        if method not in _routes.ROUTED_METHODS:
            return None
        if self._routes.first_fetch_due():
            self._refresh_routes()
        address = self._routes.holder(*store)
        if address is None:
            return None
        member = self._members.get(address)
        if member is None:
            with self._members_lock:
                member = self._members.get(address)
                if member is None:
                    member = self._members[address] = _Member(
                        self._settings.for_member(address))
        return member.stub if member.usable() else None

    # -- health ----------------------------------------------------------------------------

    def health(self, service: str = "") -> str:
        """The standard health service's status for `service` ("" = the server), e.g. "SERVING"."""
        try:
            response = self._health_check(_health.HealthCheckRequest(service=service),
                                          timeout=self.timeout, metadata=self._metadata)
        except grpc.RpcError as error:
            raise AdaptdError.from_rpc_error(error, "Health.Check") from None
        return _health.status_name(response)

    def ping(self) -> None:
        """One Ping call (the server answers at once)."""
        self._call("Ping", pb.PingRequest())

    def wait_ready(self, timeout: float = 20.0, interval: float = 0.1) -> None:
        """Polls the health service until the server answers SERVING; raises AdaptdError
        (the last failure) when `timeout` seconds pass first.

        Each attempt uses a fresh channel: a channel that found no server backs off for
        seconds before it tries again, which would make a server that just started look slow.
        """
        deadline = time.monotonic() + timeout
        while True:
            probe_settings = self._settings.with_timeout(
                max(0.05, min(1.0, deadline - time.monotonic())))
            channel = open_channel(probe_settings)
            check = channel.unary_unary(
                _health.CHECK_METHOD,
                request_serializer=_health.HealthCheckRequest.SerializeToString,
                response_deserializer=_health.HealthCheckResponse.FromString)
            try:
                status = _health.status_name(check(_health.HealthCheckRequest(),
                                                   timeout=probe_settings.timeout,
                                                   metadata=self._metadata))
                if status == "SERVING":
                    return
                last = error_for(grpc.StatusCode.UNAVAILABLE, "health status " + status,
                                 "Health.Check")
            except grpc.RpcError as error:
                last = AdaptdError.from_rpc_error(error, "Health.Check")
            finally:
                channel.close()
            if time.monotonic() + interval > deadline:
                raise last
            time.sleep(interval)

    # -- stores ----------------------------------------------------------------------------

    def create_store(self, tenant: str, store: str, kind: str = "faast",
                     encoder: str = "identity", output: str = "labels", dim: int = 0,
                     label_encoder: str = "", labels: Iterable[Any] = (), base: str = "",
                     feedback_window: int = 0, feedback_age_s: int = 0,
                     **params: Any) -> Dict[str, Any]:
        """Creates tenant/store and returns its info (see get_store).

        kind: "faast", "falcon" or "fwpkm"; output: "labels", "vector:M" or "next"; dim: the key
        dimension (0 = fixed by the first example); label_encoder (faast labels): a text encoder
        that embeds the label names, which the store then learns as targets; labels: label
        names declared at creation (with label_encoder; with prior_examples > 0 the store answers
        zero-shot at once); base: "TENANT/STORE" (or "STORE" of this tenant) to start from, a
        faast store with ridge > 0 or a falcon store (docs/BASE_STORES.md); feedback_window:
        remember the last N served predictions for feedback (docs/FEEDBACK.md), none older than
        feedback_age_s seconds when that is set; params: fields of
        the kind's parameter message (e.g. ridge=1.0,
        rcond=1e-6, prior_examples=16 for faast; enums by short name, e.g. variant="1a",
        key_norm="l2" for falcon).
        """
        request = _calls.create_store_request(tenant, store, kind, encoder, output, dim,
                                              label_encoder, labels, base, params,
                                              feedback_window, feedback_age_s)
        return _convert.store_info_to_dict(self._call("CreateStore", request, (tenant, store)))

    def get_store(self, tenant: str, store: str) -> Dict[str, Any]:
        """The store's info as a dict: tenant, store, spec {kind, encoder, output, dim, params},
        version, examples, weighted_examples, labels (column order), memory_bytes,
        prequential_*, failure and stats (the kind's statistics, e.g. faast's solver)."""
        info = self._call("GetStore", pb.GetStoreRequest(tenant=tenant, store=store),
                          (tenant, store))
        return _convert.store_info_to_dict(info)

    def list_stores(self, tenant: str, page_size: int = 0) -> List[Dict[str, Any]]:
        """Every store of the tenant, in name order, as dicts like get_store's; fetched
        `page_size` stores a call (0: the server's default, 100; at most 1000)."""
        return list(self.iter_stores(tenant, page_size))

    def iter_stores(self, tenant: str, page_size: int = 0) -> Iterator[Dict[str, Any]]:
        """Yields the tenant's stores in name order, fetching the next page only once the
        previous one is consumed. The listing is stable while stores are created and deleted:
        a store that exists throughout is yielded once; one created or deleted meanwhile may or
        may not be."""
        token = ""
        while True:
            response = self.list_stores_page(tenant, page_size, token)
            for info in response.stores:
                yield _convert.store_info_to_dict(info)
            next_token = _calls.check_next_token(response, token)
            if next_token is None:
                return
            token = next_token

    def list_stores_page(self, tenant: str, page_size: int = 0, page_token: str = "") -> Any:
        """One ListStores call: the adapt.v1.ListStoresResponse (stores, next_page_token) of the
        page `page_token` names (empty: the first)."""
        return self._call("ListStores", _calls.list_request(tenant, page_size, page_token))

    def delete_store(self, tenant: str, store: str) -> None:
        self._call("DeleteStore", pb.DeleteStoreRequest(tenant=tenant, store=store),
                   (tenant, store))

    def pin_store(self, tenant: str, store: str, pinned: bool = True) -> Dict[str, Any]:
        """Pins the store (it stays loaded, never evicted under the server's memory budget),
        or unpins it with pinned=False. Returns the store's info."""
        return _convert.store_info_to_dict(self._call(
            "PinStore", pb.PinStoreRequest(tenant=tenant, store=store, pinned=pinned),
            (tenant, store)))

    def encoders(self) -> List[Dict[str, Any]]:
        """The encoders the server hosts: dicts with name, type, input_kind, dim, normalize,
        fingerprint."""
        response = self._call("ListEncoders", pb.ListEncodersRequest())
        return [_convert.message_to_dict(info) for info in response.encoders]

    # -- adaptation ------------------------------------------------------------------------

    def adapt(self, tenant: str, store: str, inputs: Any, labels: Any = None,
              targets: Any = None, batch: int = 256, ids: Any = None,
              passes: Optional[int] = None) -> Dict[str, Any]:
        """Streams examples into the store in one Adapt call (one transaction), `batch`
        examples per message.

        inputs: rows × dim numbers (array, list of rows, DataFrame), a sequence of texts, or
        images (image encoders): a sequence of encoded PNG/JPEG bytes, pathlib.Path files or
        uint8 arrays (H × W or H × W × 1/3/4, sent losslessly as PNG), or an N × H × W(× C)
        uint8 array; labels: one per row (label stores, converted with str; list, array or Series) or
        targets: rows × M numbers (vector stores); ids: one per row, optional: without them
        the client gives each example an id unique to this call (auto_example_ids), so a
        retried call applies each example once. Returns {accepted, version, evaluated, correct,
        accuracy, loss, duplicates, truncated_texts}; accuracy and loss are None when no example
        was evaluated (nothing was published before the call); duplicates counts the examples
        skipped because the store had applied their id already; truncated_texts the texts the
        encoder cut to its maximum length (onnx text encoders). passes (fwpkm stores): each message
        is fed this many times (iterative reading).
        """
        items = _calls.examples(inputs, labels, targets, ids, self.auto_example_ids)
        messages = _calls.example_messages(pb.AdaptRequest, tenant, store, items, batch, passes)
        return _calls.adapt_result(self._call("Adapt", messages, (tenant, store)))

    def adapt_sequences(self, tenant: str, store: str, sequences: Iterable[Any],
                        batch: int = 256, passes: Optional[int] = None,
                        continue_sequence: bool = False) -> Dict[str, Any]:
        """Streams sequences of items into a store whose output is `next`, in one Adapt call
        (one transaction): within each sequence, every item is predicted from the one before.

        sequences: a list of sequences, each rows × dim numbers (array, list of rows,
        DataFrame) or a list of texts, in order. Each starts afresh (its first item has no
        predecessor); with continue_sequence the first continues the sequence the store kept
        from earlier calls. passes: fwpkm stores. Returns adapt's dict and "sequences", the
        number of non-empty sequences sent. Every item gets an id unique to this call
        (auto_example_ids), so a retried call applies each message of items once.
        """
        messages, count = _calls.sequence_messages(tenant, store, sequences, batch, passes,
                                                   continue_sequence, self.auto_example_ids)
        result = _calls.adapt_result(self._call("Adapt", messages, (tenant, store)))
        result["sequences"] = count
        return result

    def adapt_sequence(self, tenant: str, store: str, items: Any, batch: int = 256,
                       passes: Optional[int] = None,
                       continue_sequence: bool = False) -> Dict[str, Any]:
        """adapt_sequences with one sequence."""
        return self.adapt_sequences(tenant, store, [items], batch, passes, continue_sequence)

    def forget(self, tenant: str, store: str, inputs: Any, labels: Any = None,
               targets: Any = None, batch: int = 256, ids: Any = None) -> Dict[str, Any]:
        """Removes examples adapted before (faast), in one Forget call. Same arguments as
        adapt. Returns {forgotten, version}."""
        items = _convert.to_examples(inputs, labels, targets, ids)
        messages = _calls.example_messages(pb.ForgetRequest, tenant, store, items, batch)
        return _calls.forget_result(self._call("Forget", messages, (tenant, store)))

    @staticmethod
    def _example_stream(message_type: Any, tenant: str, store: str, examples: List[Any],
                        batch: int) -> Iterator[Any]:
        """The request messages of an Adapt or Forget stream."""
        return iter(_calls.example_messages(message_type, tenant, store, examples, batch))

    def compile(self, tenant: str, store: str, refresh_base: bool = False,
                **overrides: Any) -> Dict[str, Any]:
        """Solves and publishes a new version (faast; fwpkm applies any queued items). overrides
        (faast): rcond, alpha, ridge, kept for later compiles too; refresh_base (a faast store
        with a base): copy the base's current read-out first. Returns {version, stats}."""
        request = _calls.compile_request(tenant, store, refresh_base, overrides)
        return _calls.compile_result(self._call("Compile", request, (tenant, store)))

    # -- prediction ------------------------------------------------------------------------

    def predict_raw(self, tenant: str, store: str, inputs: Any, top_k: int = 1) -> Any:
        """One Predict call; returns the PredictResponse message (it names the version read)."""
        return self._call("Predict", _calls.predict_request(tenant, store, inputs, top_k),
                          (tenant, store))

    def predict(self, tenant: str, store: str, inputs: Any, top_k: int = 1) -> Predictions:
        """Adapted outputs for rows × dim inputs (or texts, or images as adapt takes them), read
        from one published version.

        Label stores: a list with, per input, a list of (label, score) best first (at most
        top_k). Vector stores: a float32 numpy array rows × M.
        """
        return _calls.predictions(self.predict_raw(tenant, store, inputs, top_k))

    def predict_with_ids(self, tenant: str, store: str, inputs: Any,
                         top_k: int = 1) -> Tuple[Predictions, List[str]]:
        """As predict, with each prediction's id for feedback (a store with a feedback window,
        docs/FEEDBACK.md)."""
        response = self.predict_raw(tenant, store, inputs, top_k)
        return _calls.predictions(response), _calls.prediction_ids(response)

    def feedback(self, tenant: str, store: str, items: Iterable[Any]) -> Dict[str, Any]:
        """Teaches the store the true labels (or targets) of predictions it served: items are
        (prediction_id, label) pairs, (prediction_id, None) or a bare id to confirm the served
        one. Applied once however often it is resent. Returns {accepted, version, duplicates,
        evaluated, correct, served_correct}."""
        request = _calls.feedback_request(tenant, store, items)
        return _calls.feedback_result(self._call("Feedback", request, (tenant, store)))

    def predict_stream(self, tenant: str, store: str, batches: Iterable[Any], top_k: int = 1,
                       raw: bool = False, timeout: Optional[float] = None) -> Iterator[Any]:
        """One PredictStream call: yields, for each batch of inputs taken from `batches` (read
        lazily, so it may be a generator that waits for data), its predictions as predict
        returns them (raw=True: the PredictResponse), in order, as they arrive. The stream as a
        whole has the deadline `timeout` (default: the client's). A batch that cannot be
        converted ends the stream after the batches before it were answered, then raises
        ValueError."""
        failure: List[BaseException] = []

        def requests() -> Iterator[Any]:
            try:
                for inputs in batches:
                    yield _calls.predict_request(tenant, store, inputs, top_k)
            except Exception as error:  # raised again in the caller's thread below
                failure.append(error)

        call = self._stub.PredictStream(requests(), timeout=timeout or self.timeout,
                                        metadata=self._metadata)
        try:
            for response in call:
                yield response if raw else _calls.predictions(response)
        except grpc.RpcError as error:
            raise AdaptdError.from_rpc_error(error, "PredictStream") from None
        finally:
            call.cancel()
        if failure:
            raise failure[0]

    def predict_scores(self, tenant: str, store: str,
                       inputs: Any) -> Tuple[Optional[List[str]], np.ndarray]:
        """Label stores: (labels, scores) with labels in the store's column order and scores a
        float64 array rows × labels of the raw adapted outputs (NaN for a label the version
        read does not know yet). Vector stores: (None, the predict array)."""
        info = self.get_store(tenant, store)
        if info["spec"]["output"] != "labels":
            return None, np.asarray(self.predict(tenant, store, inputs))
        labels = info["labels"]
        response = self.predict_raw(tenant, store, inputs, top_k=len(labels))
        return labels, _calls.score_matrix(labels, response)

    # -- export and import -----------------------------------------------------------------

    def export_store(self, tenant: str, store: str) -> bytes:
        """The store's snapshot file (header, checksum, payload) as bytes."""
        request = pb.ExportStoreRequest(tenant=tenant, store=store)
        return b"".join(chunk.data for chunk in self._call("ExportStore", request,
                                                           (tenant, store)))

    def import_store(self, tenant: str, store: str, data: bytes) -> Dict[str, Any]:
        """Creates tenant/store (it must not exist) from an export_store snapshot; returns its
        info."""
        chunks = _calls.import_chunks(tenant, store, bytes(data))
        return _convert.store_info_to_dict(self._call("ImportStore", chunks, (tenant, store)))


class _Member:
    """A channel to one cluster member (routing to holders) and whether it can be used: not
    while gRPC reports it failed to connect (TRANSIENT_FAILURE) or shut down."""

    def __init__(self, settings: _channel.Settings) -> None:
        self.channel = open_channel(settings)
        self.stub = pb_grpc.AdaptationStub(self.channel)
        self._state = grpc.ChannelConnectivity.IDLE
        self.channel.subscribe(self._changed, try_to_connect=True)

    def _changed(self, state: grpc.ChannelConnectivity) -> None:
        self._state = state

    def usable(self) -> bool:
        return self._state not in (grpc.ChannelConnectivity.TRANSIENT_FAILURE,
                                   grpc.ChannelConnectivity.SHUTDOWN)
