"""adaptd_client.aio.Client: the Client's methods as coroutines, over grpc.aio.

    import asyncio
    from adaptd_client.aio import Client

    async def main():
        async with Client("127.0.0.1:50051") as client:
            await client.create_store("acme", "intents", ridge=1.0)
            print(await client.adapt("acme", "intents", x, labels=y))
            await client.compile("acme", "intents")
            async for top in client.predict_stream("acme", "intents", batches):
                print(top)

    asyncio.run(main())

Arguments, results and errors are the sync Client's (the same request building and result
conversion run underneath); iter_stores and predict_stream are async generators, and
predict_stream takes a sync or an async iterable of input batches. A Client belongs to the
event loop it was created in (grpc.aio's rule): create it inside that loop.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, AsyncIterator, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import grpc
import grpc.aio
import numpy as np

from . import _calls, _channel, _convert, _health, _routes
from ._calls import Predictions
from ._channel import DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_RETRY, RetryPolicy
from ._stubs import pb, pb_grpc
from .errors import AdaptdError, error_for

__all__ = ["Client"]


def _open_channel(settings: _channel.Settings) -> grpc.aio.Channel:
    credentials = settings.credentials()
    if credentials is not None:
        return grpc.aio.secure_channel(settings.address, credentials, options=settings.options)
    return grpc.aio.insecure_channel(settings.address, options=settings.options)


class Client:
    """An asyncio connection to one adaptd server; the arguments are the sync Client's."""

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
        self._channel = _open_channel(self._settings)
        self._stub = pb_grpc.AdaptationStub(self._channel)
        self._metadata = self._settings.metadata
        self._routes = _routes.RouteState(address) if route_to_holders else None
        self._members: Dict[str, Tuple[grpc.aio.Channel, Any]] = {}  # address -> (channel, stub)

    # -- plumbing --------------------------------------------------------------------------

    async def close(self) -> None:
        members, self._members = list(self._members.values()), {}
        for channel, _ in members:
            await channel.close()
        await self._channel.close()

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def _call(self, method: str, request: Any,
                    store: Optional[Tuple[str, str]] = None) -> Any:
        """One call of `method`; `store` (tenant, store) routes it to the store's holder (see
        Client._call)."""
        if store is None or self._routes is None or not self._routes.enabled:
            if isinstance(request, list):
                request = iter(request)
            try:
                call = getattr(self._stub, method)(request, timeout=self.timeout,
                                                   metadata=self._metadata)
                if method == "ExportStore":  # the one server stream here
                    return [chunk async for chunk in call]
                return await call
            except grpc.RpcError as error:
                raise AdaptdError.from_rpc_error(error, method) from None
        deadline = time.monotonic() + self.timeout
        holder = await self._holder(method, store)
        if holder is not None:
            try:
                return await self._attempt(method, request, holder, deadline, routed=True)
            except grpc.RpcError as error:
                if not _routes.resend_to_given(error.code(), method, request,
                                               self.retry is not None):
                    raise AdaptdError.from_rpc_error(error, method) from None
        try:
            return await self._attempt(method, request, self._stub, deadline, routed=False)
        except grpc.RpcError as error:
            raise AdaptdError.from_rpc_error(error, method) from None

    # -- routing to holders (a cluster on etcd; see the sync Client) -----------------------

    def routing(self) -> bool:
        """Whether calls for stores go to their holders now."""
        return self._routes is not None and self._routes.revision is not None

    async def cluster_routes(self) -> Any:
        """The route table the given member answers (adapt.v1.ClusterRoutesResponse)."""
        return await self._call("ClusterRoutes", pb.ClusterRoutesRequest())

    async def _attempt(self, method: str, request: Any, stub: Any, deadline: float,
                       routed: bool) -> Any:
        messages = iter(request) if isinstance(request, list) else request
        call = getattr(stub, method)(messages, timeout=max(0.001, deadline - time.monotonic()),
                                     metadata=self._metadata)
        try:
            if method == "ExportStore":  # the one server stream routed
                response: Any = [chunk async for chunk in call]
            else:
                response = await call
        except grpc.RpcError as error:
            await self._observe(error.initial_metadata(), error.trailing_metadata(),
                                error.code(), routed)
            raise
        await self._observe(await call.initial_metadata(), await call.trailing_metadata(),
                            grpc.StatusCode.OK, routed)
        return response

    async def _observe(self, initial: Any, trailing: Any, code: Any, routed: bool) -> None:
        if self._routes.observe(_routes.hint_of(initial, trailing), code, routed):
            await self._refresh_routes()

    async def _refresh_routes(self) -> None:
        if not self._routes.begin_fetch():
            return
        try:
            response = await self._stub.ClusterRoutes(pb.ClusterRoutesRequest(),
                                                      timeout=min(self.timeout, 5.0),
                                                      metadata=self._metadata)
        except grpc.RpcError as error:
            self._routes.end_fetch(code=error.code())
            return
        self._routes.end_fetch(response)

    async def _holder(self, method: str, store: Tuple[str, str]) -> Any:
        """The stub of the store's holder; None for the given member."""
        if method not in _routes.ROUTED_METHODS:
            return None
        if self._routes.first_fetch_due():
            await self._refresh_routes()
        address = self._routes.holder(*store)
        if address is None:
            return None
        member = self._members.get(address)
        if member is None:
            channel = _open_channel(self._settings.for_member(address))
            member = self._members[address] = (channel, pb_grpc.AdaptationStub(channel))
        state = member[0].get_state(try_to_connect=True)
        if state in (grpc.ChannelConnectivity.TRANSIENT_FAILURE,
                     grpc.ChannelConnectivity.SHUTDOWN):
            return None
        return member[1]

    # -- health ----------------------------------------------------------------------------

    async def _check(self, channel: grpc.aio.Channel, service: str, timeout: float) -> str:
        check = channel.unary_unary(
            _health.CHECK_METHOD,
            request_serializer=_health.HealthCheckRequest.SerializeToString,
            response_deserializer=_health.HealthCheckResponse.FromString)
        try:
            response = await check(_health.HealthCheckRequest(service=service), timeout=timeout,
                                   metadata=self._metadata)
        except grpc.RpcError as error:
            raise AdaptdError.from_rpc_error(error, "Health.Check") from None
        return _health.status_name(response)

    async def health(self, service: str = "") -> str:
        """The standard health service's status for `service` ("" = the server)."""
        return await self._check(self._channel, service, self.timeout)

    async def ping(self) -> None:
        await self._call("Ping", pb.PingRequest())

    async def wait_ready(self, timeout: float = 20.0, interval: float = 0.1) -> None:
        """Polls the health service (a fresh channel each time) until the server answers
        SERVING; raises the last AdaptdError when `timeout` seconds pass first."""
        deadline = time.monotonic() + timeout
        while True:
            attempt = max(0.05, min(1.0, deadline - time.monotonic()))
            channel = _open_channel(self._settings.with_timeout(attempt))
            try:
                status = await self._check(channel, "", attempt)
                if status == "SERVING":
                    return
                last = error_for(grpc.StatusCode.UNAVAILABLE, "health status " + status,
                                 "Health.Check")
            except AdaptdError as error:
                last = error
            finally:
                await channel.close()
            if time.monotonic() + interval > deadline:
                raise last
            await asyncio.sleep(interval)

    # -- stores ----------------------------------------------------------------------------

    async def create_store(self, tenant: str, store: str, kind: str = "faast",
                           encoder: str = "identity", output: str = "labels", dim: int = 0,
                           label_encoder: str = "", labels: Iterable[Any] = (),
                           base: str = "", feedback_window: int = 0,
                           feedback_age_s: int = 0, **params: Any) -> Dict[str, Any]:
        request = _calls.create_store_request(tenant, store, kind, encoder, output, dim,
                                              label_encoder, labels, base, params,
                                              feedback_window, feedback_age_s)
        return _convert.store_info_to_dict(await self._call("CreateStore", request,
                                                            (tenant, store)))

    async def get_store(self, tenant: str, store: str) -> Dict[str, Any]:
        info = await self._call("GetStore", pb.GetStoreRequest(tenant=tenant, store=store),
                                (tenant, store))
        return _convert.store_info_to_dict(info)

    async def list_stores(self, tenant: str, page_size: int = 0) -> List[Dict[str, Any]]:
        return [info async for info in self.iter_stores(tenant, page_size)]

    async def iter_stores(self, tenant: str,
                          page_size: int = 0) -> AsyncIterator[Dict[str, Any]]:
        token = ""
        while True:
            response = await self.list_stores_page(tenant, page_size, token)
            for info in response.stores:
                yield _convert.store_info_to_dict(info)
            next_token = _calls.check_next_token(response, token)
            if next_token is None:
                return
            token = next_token

    async def list_stores_page(self, tenant: str, page_size: int = 0,
                               page_token: str = "") -> Any:
        return await self._call("ListStores", _calls.list_request(tenant, page_size, page_token))

    async def delete_store(self, tenant: str, store: str) -> None:
        await self._call("DeleteStore", pb.DeleteStoreRequest(tenant=tenant, store=store),
                         (tenant, store))

    async def pin_store(self, tenant: str, store: str, pinned: bool = True) -> Dict[str, Any]:
        return _convert.store_info_to_dict(await self._call(
            "PinStore", pb.PinStoreRequest(tenant=tenant, store=store, pinned=pinned),
            (tenant, store)))

    async def encoders(self) -> List[Dict[str, Any]]:
        response = await self._call("ListEncoders", pb.ListEncodersRequest())
        return [_convert.message_to_dict(info) for info in response.encoders]

    # -- adaptation ------------------------------------------------------------------------

    async def adapt(self, tenant: str, store: str, inputs: Any, labels: Any = None,
                    targets: Any = None, batch: int = 256, ids: Any = None,
                    passes: Optional[int] = None) -> Dict[str, Any]:
        """See Client.adapt (the sync one): one Adapt call, examples with ids."""
        items = _calls.examples(inputs, labels, targets, ids, self.auto_example_ids)
        messages = _calls.example_messages(pb.AdaptRequest, tenant, store, items, batch, passes)
        return _calls.adapt_result(await self._call("Adapt", messages, (tenant, store)))

    async def adapt_sequences(self, tenant: str, store: str, sequences: Iterable[Any],
                              batch: int = 256, passes: Optional[int] = None,
                              continue_sequence: bool = False) -> Dict[str, Any]:
        """See Client.adapt_sequences: sequences into a `next` store in one Adapt call."""
        messages, count = _calls.sequence_messages(tenant, store, sequences, batch, passes,
                                                   continue_sequence, self.auto_example_ids)
        result = _calls.adapt_result(await self._call("Adapt", messages, (tenant, store)))
        result["sequences"] = count
        return result

    async def adapt_sequence(self, tenant: str, store: str, items: Any, batch: int = 256,
                             passes: Optional[int] = None,
                             continue_sequence: bool = False) -> Dict[str, Any]:
        """adapt_sequences with one sequence."""
        return await self.adapt_sequences(tenant, store, [items], batch, passes,
                                          continue_sequence)

    async def forget(self, tenant: str, store: str, inputs: Any, labels: Any = None,
                     targets: Any = None, batch: int = 256, ids: Any = None) -> Dict[str, Any]:
        items = _convert.to_examples(inputs, labels, targets, ids)
        messages = _calls.example_messages(pb.ForgetRequest, tenant, store, items, batch)
        return _calls.forget_result(await self._call("Forget", messages, (tenant, store)))

    async def compile(self, tenant: str, store: str, refresh_base: bool = False,
                      **overrides: Any) -> Dict[str, Any]:
        request = _calls.compile_request(tenant, store, refresh_base, overrides)
        return _calls.compile_result(await self._call("Compile", request, (tenant, store)))

    # -- prediction ------------------------------------------------------------------------

    async def predict_raw(self, tenant: str, store: str, inputs: Any, top_k: int = 1) -> Any:
        return await self._call("Predict", _calls.predict_request(tenant, store, inputs, top_k),
                                (tenant, store))

    async def predict(self, tenant: str, store: str, inputs: Any,
                      top_k: int = 1) -> Predictions:
        return _calls.predictions(await self.predict_raw(tenant, store, inputs, top_k))

    async def predict_with_ids(self, tenant: str, store: str, inputs: Any,
                               top_k: int = 1) -> Tuple[Predictions, List[str]]:
        response = await self.predict_raw(tenant, store, inputs, top_k)
        return _calls.predictions(response), _calls.prediction_ids(response)

    async def feedback(self, tenant: str, store: str, items: Iterable[Any]) -> Dict[str, Any]:
        request = _calls.feedback_request(tenant, store, items)
        return _calls.feedback_result(await self._call("Feedback", request, (tenant, store)))

    async def predict_stream(self, tenant: str, store: str,
                             batches: Union[Iterable[Any], AsyncIterator[Any]], top_k: int = 1,
                             raw: bool = False,
                             timeout: Optional[float] = None) -> AsyncIterator[Any]:
        """One PredictStream call: yields each batch's predictions in order as they arrive
        (see Client.predict_stream). `batches` may be an async iterable."""
        failure: List[BaseException] = []

        async def requests() -> AsyncIterator[Any]:
            try:
                if hasattr(batches, "__aiter__"):
                    async for inputs in batches:  # type: ignore[union-attr]
                        yield _calls.predict_request(tenant, store, inputs, top_k)
                else:
                    for inputs in batches:  # type: ignore[union-attr]
                        yield _calls.predict_request(tenant, store, inputs, top_k)
            except Exception as error:  # raised again by the reader below
                failure.append(error)

        call = self._stub.PredictStream(requests(), timeout=timeout or self.timeout,
                                        metadata=self._metadata)
        try:
            async for response in call:
                yield response if raw else _calls.predictions(response)
        except grpc.RpcError as error:
            raise AdaptdError.from_rpc_error(error, "PredictStream") from None
        finally:
            call.cancel()
        if failure:
            raise failure[0]

    async def predict_scores(self, tenant: str, store: str,
                             inputs: Any) -> Tuple[Optional[List[str]], np.ndarray]:
        info = await self.get_store(tenant, store)
        if info["spec"]["output"] != "labels":
            return None, np.asarray(await self.predict(tenant, store, inputs))
        labels = info["labels"]
        response = await self.predict_raw(tenant, store, inputs, top_k=len(labels))
        return labels, _calls.score_matrix(labels, response)

    # -- export and import -----------------------------------------------------------------

    async def export_store(self, tenant: str, store: str) -> bytes:
        request = pb.ExportStoreRequest(tenant=tenant, store=store)
        chunks = await self._call("ExportStore", request, (tenant, store))
        return b"".join(chunk.data for chunk in chunks)

    async def import_store(self, tenant: str, store: str, data: bytes) -> Dict[str, Any]:
        chunks = _calls.import_chunks(tenant, store, bytes(data))
        return _convert.store_info_to_dict(await self._call("ImportStore", chunks,
                                                            (tenant, store)))
