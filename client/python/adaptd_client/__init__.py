"""adaptd_client: a Python client for adaptd, the test-time adaptation service.

Needs grpcio, protobuf and numpy, and the adapt.v1 stubs the build generates (target
adaptd_python_stubs) into <build>/client/python, which has to be on PYTHONPATH next to the
folder holding this package.

Example (a faast label store over raw vectors)::

    import numpy as np
    from adaptd_client import Client, AdaptdError

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
        except AdaptdError as error:
            print(error.code_name, error.message)             # NOT_FOUND ...

Vector stores (output="vector:M") take `targets=` (rows × M) in adapt and return a numpy array
from predict. Every call has a deadline (`timeout`); every failure raises AdaptdError with the
gRPC status code's name and the server's message. `list_stores` returns every store of a
tenant, following the server's pages; `iter_stores` yields them one page at a time.
"""

from .client import Client
from .errors import AdaptdError

__all__ = ["Client", "AdaptdError"]
__version__ = "0.1.0"
