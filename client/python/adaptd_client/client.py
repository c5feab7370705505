"""Client: one gRPC channel to adaptd and a method per RPC of adapt.v1.Adaptation.

Thread safety: a Client may be shared between threads (the channel is thread-safe and the
client keeps no other mutable state). Every call carries a deadline of `timeout` seconds.
"""

import os
import time

import grpc
import numpy as np

from . import _convert, _health
from ._stubs import pb, pb_grpc
from .errors import AdaptdError

DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
IMPORT_CHUNK_BYTES = 1 << 20


def _batches(items, batch):
    for start in range(0, len(items), batch):
        yield items[start:start + batch]


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
    """

    def __init__(self, address, token=None, timeout=30.0, root_certificates=None,
                 max_message_bytes=DEFAULT_MAX_MESSAGE_BYTES, channel_options=(),
                 private_key=None, certificate_chain=None):
        if token is None:
            token = os.environ.get("ADAPTD_TOKEN") or None
        if (private_key is None) != (certificate_chain is None):
            raise ValueError("private_key and certificate_chain go together")
        if private_key is not None and root_certificates is None:
            raise ValueError("a client certificate needs root_certificates (TLS)")
        if timeout is None or timeout <= 0:
            raise ValueError("timeout: every call needs a positive deadline, got %r" % (timeout,))
        self.address = address
        self.timeout = float(timeout)
        self._token = token
        self._root_certificates = root_certificates
        self._client_cert = (private_key, certificate_chain)
        options = [("grpc.max_send_message_length", max_message_bytes),
                   ("grpc.max_receive_message_length", max_message_bytes)]
        options.extend(channel_options)
        if root_certificates is not None:
            credentials = grpc.ssl_channel_credentials(root_certificates=root_certificates,
                                                       private_key=private_key,
                                                       certificate_chain=certificate_chain)
            self._channel = grpc.secure_channel(address, credentials, options=options)
        else:
            self._channel = grpc.insecure_channel(address, options=options)
        self._stub = pb_grpc.AdaptationStub(self._channel)
        self._metadata = (("authorization", "Bearer " + token),) if token else None
        self._health_check = self._channel.unary_unary(
            _health.CHECK_METHOD,
            request_serializer=_health.HealthCheckRequest.SerializeToString,
            response_deserializer=_health.HealthCheckResponse.FromString)

    # -- plumbing --------------------------------------------------------------------------

    def close(self):
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _call(self, method, request):
        try:
            return getattr(self._stub, method)(request, timeout=self.timeout,
                                               metadata=self._metadata)
        except grpc.RpcError as error:
            raise AdaptdError.from_rpc_error(error, method) from None

    # -- health ----------------------------------------------------------------------------

    def health(self, service=""):
        """The standard health service's status for `service` ("" = the server), e.g. "SERVING"."""
        try:
            response = self._health_check(_health.HealthCheckRequest(service=service),
                                          timeout=self.timeout, metadata=self._metadata)
        except grpc.RpcError as error:
            raise AdaptdError.from_rpc_error(error, "Health.Check") from None
        return _health.status_name(response)

    def wait_ready(self, timeout=20.0, interval=0.1):
        """Polls the health service until the server answers SERVING; raises AdaptdError
        (the last failure) when `timeout` seconds pass first.

        Each attempt uses a fresh channel: a channel that found no server backs off for
        seconds before it tries again, which would make a server that just started look slow.
        """
        deadline = time.monotonic() + timeout
        while True:
            probe = Client(self.address, token=self._token,
                           timeout=max(0.05, min(1.0, deadline - time.monotonic())),
                           root_certificates=self._root_certificates,
                           private_key=self._client_cert[0],
                           certificate_chain=self._client_cert[1])
            try:
                status = probe.health()
                if status == "SERVING":
                    return
                last = AdaptdError(grpc.StatusCode.UNAVAILABLE, "health status " + status,
                                   "Health.Check")
            except AdaptdError as error:
                last = error
            finally:
                probe.close()
            if time.monotonic() + interval > deadline:
                raise last
            time.sleep(interval)

    # -- stores ----------------------------------------------------------------------------

    def create_store(self, tenant, store, kind="faast", encoder="identity", output="labels",
                     dim=0, label_encoder="", labels=(), base="", **params):
        """Creates tenant/store and returns its info (see get_store).

        kind: "faast", "falcon" or "fwpkm"; output: "labels", "vector:M" or "next"; dim: the key
        dimension (0 = fixed by the first example); label_encoder (faast labels): a text encoder
        that embeds the label names, which the store then learns as targets; labels: label
        names declared at creation (with label_encoder; with prior_examples > 0 the store answers
        zero-shot at once); base: "TENANT/STORE" (or "STORE" of this tenant) to start from, a
        faast store with ridge > 0 or a falcon store (docs/BASE_STORES.md); params: fields of
        the kind's parameter message (e.g. ridge=1.0,
        rcond=1e-6, prior_examples=16 for faast; enums by short name, e.g. variant="1a",
        key_norm="l2" for falcon).
        """
        spec = _convert.build_spec(kind, encoder, output, dim, params)
        spec.output.label_encoder = label_encoder
        spec.output.labels.extend(str(name) for name in labels)
        spec.base = base
        info = self._call("CreateStore",
                          pb.CreateStoreRequest(tenant=tenant, store=store, spec=spec))
        return _convert.store_info_to_dict(info)

    def get_store(self, tenant, store):
        """The store's info as a dict: tenant, store, spec {kind, encoder, output, dim, params},
        version, examples, weighted_examples, labels (column order), memory_bytes,
        prequential_*, failure and stats (the kind's statistics, e.g. faast's solver)."""
        info = self._call("GetStore", pb.GetStoreRequest(tenant=tenant, store=store))
        return _convert.store_info_to_dict(info)

    def list_stores(self, tenant, page_size=0):
        """Every store of the tenant, in name order, as dicts like get_store's; fetched
        `page_size` stores a call (0: the server's default, 100; at most 1000)."""
        return list(self.iter_stores(tenant, page_size))

    def iter_stores(self, tenant, page_size=0):
        """Yields the tenant's stores in name order, fetching the next page only once the
        previous one is consumed. The listing is stable while stores are created and deleted:
        a store that exists throughout is yielded once; one created or deleted meanwhile may or
        may not be."""
        token = ""
        while True:
            response = self.list_stores_page(tenant, page_size, token)
            for info in response.stores:
                yield _convert.store_info_to_dict(info)
            if not response.next_page_token:
                return
            if response.next_page_token == token:
                raise AdaptdError(grpc.StatusCode.INTERNAL,
                                  "the server answered a page token with itself", "ListStores")
            token = response.next_page_token

    def list_stores_page(self, tenant, page_size=0, page_token=""):
        """One ListStores call: the adapt.v1.ListStoresResponse (stores, next_page_token) of the
        page `page_token` names (empty: the first)."""
        return self._call("ListStores", pb.ListStoresRequest(
            tenant=tenant, page_size=page_size, page_token=page_token))

    def delete_store(self, tenant, store):
        self._call("DeleteStore", pb.DeleteStoreRequest(tenant=tenant, store=store))

    def pin_store(self, tenant, store, pinned=True):
        """Pins the store (it stays loaded, never evicted under the server's memory budget),
        or unpins it with pinned=False. Returns the store's info."""
        return _convert.store_info_to_dict(self._call(
            "PinStore", pb.PinStoreRequest(tenant=tenant, store=store, pinned=pinned)))

    def encoders(self):
        """The encoders the server hosts: dicts with name, type, input_kind, dim, normalize,
        fingerprint."""
        response = self._call("ListEncoders", pb.ListEncodersRequest())
        return [_convert.message_to_dict(info) for info in response.encoders]

    # -- adaptation ------------------------------------------------------------------------

    def adapt(self, tenant, store, inputs, labels=None, targets=None, batch=256, ids=None):
        """Streams examples into the store in one Adapt call (one transaction), `batch`
        examples per message.

        inputs: rows × dim numbers or a sequence of texts; labels: one per row (label stores,
        converted with str) or targets: rows × M numbers (vector stores); ids: optional, one
        per row. Returns {accepted, version, evaluated, correct, accuracy, loss}; accuracy and
        loss are None when no example was evaluated (nothing was published before the call).
        """
        examples = _convert.to_examples(inputs, labels, targets, ids)
        response = self._call("Adapt", self._example_stream(
            pb.AdaptRequest, tenant, store, examples, batch))
        return {
            "accepted": response.accepted,
            "version": response.version,
            "evaluated": response.evaluated,
            "correct": response.correct,
            "accuracy": response.accuracy if response.evaluated else None,
            "loss": response.loss if response.evaluated else None,
        }

    def forget(self, tenant, store, inputs, labels=None, targets=None, batch=256, ids=None):
        """Removes examples adapted before (faast), in one Forget call. Same arguments as
        adapt. Returns {forgotten, version}."""
        examples = _convert.to_examples(inputs, labels, targets, ids)
        response = self._call("Forget", self._example_stream(
            pb.ForgetRequest, tenant, store, examples, batch))
        return {"forgotten": response.forgotten, "version": response.version}

    @staticmethod
    def _example_stream(message_type, tenant, store, examples, batch):
        """The request messages of an Adapt or Forget stream (built eagerly, so that a bad
        argument raises here rather than inside gRPC's sending thread)."""
        if not isinstance(batch, int) or batch < 1:
            raise ValueError("batch: must be a positive int, got %r" % (batch,))
        if not examples:
            return iter([message_type(tenant=tenant, store=store)])
        return iter([message_type(tenant=tenant, store=store, examples=part)
                     for part in _batches(examples, batch)])

    def compile(self, tenant, store, refresh_base=False, **overrides):
        """Solves and publishes a new version (faast; fwpkm applies any queued items). overrides
        (faast): rcond, alpha, ridge, kept for later compiles too; refresh_base (a faast store
        with a base): copy the base's current read-out first. Returns {version, stats}."""
        request = pb.CompileRequest(tenant=tenant, store=store, refresh_base=refresh_base)
        if overrides:
            _convert.fill_params(request.faast, overrides, "compile")
        response = self._call("Compile", request)
        stats = _convert.message_to_dict(response.faast) if response.HasField("faast") else {}
        return {"version": response.version, "stats": stats}

    # -- prediction ------------------------------------------------------------------------

    def predict_raw(self, tenant, store, inputs, top_k=1):
        """One Predict call; returns the PredictResponse message (it names the version read)."""
        request = pb.PredictRequest(tenant=tenant, store=store, inputs=_convert.to_inputs(inputs),
                                    top_k=top_k)
        return self._call("Predict", request)

    def predict(self, tenant, store, inputs, top_k=1):
        """Adapted outputs for rows × dim inputs (or texts), read from one published version.

        Label stores: a list with, per input, a list of (label, score) best first (at most
        top_k). Vector stores: a float32 numpy array rows × M.
        """
        response = self.predict_raw(tenant, store, inputs, top_k)
        predictions = response.predictions
        if predictions and not predictions[0].labels:
            return np.array([list(p.vector) for p in predictions], dtype=np.float32)
        return [[(item.label, item.score) for item in p.labels] for p in predictions]

    def predict_scores(self, tenant, store, inputs):
        """Label stores: (labels, scores) with labels in the store's column order and scores a
        float64 array rows × labels of the raw adapted outputs (NaN for a label the version
        read does not know yet). Vector stores: (None, the predict array)."""
        info = self.get_store(tenant, store)
        if info["spec"]["output"] != "labels":
            return None, self.predict(tenant, store, inputs)
        labels = info["labels"]
        column = {label: j for j, label in enumerate(labels)}
        response = self.predict_raw(tenant, store, inputs, top_k=len(labels))
        scores = np.full((len(response.predictions), len(labels)), np.nan)
        for i, prediction in enumerate(response.predictions):
            for item in prediction.labels:
                j = column.get(item.label)
                if j is not None:
                    scores[i, j] = item.score
        return labels, scores

    # -- export and import -----------------------------------------------------------------

    def export_store(self, tenant, store):
        """The store's snapshot file (header, checksum, payload) as bytes."""
        method = "ExportStore"
        try:
            chunks = self._stub.ExportStore(pb.ExportStoreRequest(tenant=tenant, store=store),
                                            timeout=self.timeout, metadata=self._metadata)
            return b"".join(chunk.data for chunk in chunks)
        except grpc.RpcError as error:
            raise AdaptdError.from_rpc_error(error, method) from None

    def import_store(self, tenant, store, data):
        """Creates tenant/store (it must not exist) from an export_store snapshot; returns its
        info."""
        data = bytes(data)

        def chunks():
            yield pb.StoreChunk(tenant=tenant, store=store, data=data[:IMPORT_CHUNK_BYTES])
            for start in range(IMPORT_CHUNK_BYTES, len(data), IMPORT_CHUNK_BYTES):
                yield pb.StoreChunk(data=data[start:start + IMPORT_CHUNK_BYTES])

        return _convert.store_info_to_dict(self._call("ImportStore", chunks()))
