"""adaptd_client: a Python client for adaptd, the test-time adaptation service.

Install it with `pip install client/python` (from the adaptd repository): the wheel carries the
adapt.v1 modules, generated from proto/ when it is built, and needs grpcio, protobuf and numpy.
docs/CLIENTS.md has the full guide.

Example (a faast label store over raw vectors)::

    import numpy as np
    from adaptd_client import Client, AdaptdError, NotFoundError

    with Client("127.0.0.1:50051", token=None, timeout=30.0) as client:
        client.create_store("acme", "intents", kind="faast", encoder="identity",
                            output="labels", ridge=1.0)
        x = np.random.default_rng(0).normal(size=(100, 32))
        y = ["yes" if v > 0 else "no" for v in x[:, 0]]
        print(client.adapt("acme", "intents", x, labels=y))   # accepted, version, accuracy...
        client.compile("acme", "intents")                     # publishes a new version
        print(client.predict("acme", "intents", x[:3], top_k=2))
        # [[('yes', 0.91), ('no', 0.08)], ...]
        try:
            client.get_store("acme", "missing")
        except NotFoundError as error:                        # an AdaptdError
            print(error.code_name, error.message)             # NOT_FOUND ...

Vector stores (output="vector:M") take `targets=` (rows × M) in adapt and return a numpy array
from predict. Inputs and labels may be numpy arrays, lists or pandas DataFrames / Series.
Every call has a deadline (`timeout`); every failure raises an AdaptdError subclass with the
gRPC status code, its name and the server's message; calls that are safe to resend are retried
on UNAVAILABLE with backoff (RetryPolicy), and adapted examples carry ids so a resend applies
each once. `list_stores` returns every store of a tenant, following the server's pages;
`iter_stores` yields them one page at a time; `predict_stream` answers a stream of batches on
one call. adaptd_client.aio.Client is the asyncio form; adaptd_client.sklearn has
scikit-learn estimators backed by a store.
"""

from ._channel import DEFAULT_RETRY, RetryPolicy
from .client import Client
from .errors import (AbortedError, AdaptdError, AlreadyExistsError, CancelledError,
                     DeadlineExceededError, FailedPreconditionError, InternalError,
                     InvalidArgumentError, NotFoundError, PermissionDeniedError,
                     ResourceExhaustedError, UnauthenticatedError, UnavailableError,
                     UnimplementedError)

__all__ = [
    "Client", "RetryPolicy", "DEFAULT_RETRY", "AdaptdError", "AbortedError",
    "AlreadyExistsError", "CancelledError", "DeadlineExceededError", "FailedPreconditionError",
    "InternalError", "InvalidArgumentError", "NotFoundError", "PermissionDeniedError",
    "ResourceExhaustedError", "UnauthenticatedError", "UnavailableError", "UnimplementedError",
]
__version__ = "0.2.0"
