"""Imports the adapt.v1 modules: the ones built into the installed package, else the build's.

An installed adaptd-client (pip install client/python) carries them as adaptd_client._gen,
generated from proto/ when the wheel was built. A source checkout without that falls back to
the stubs the CMake build generates (target adaptd_python_stubs) into <build>/client/python,
which then has to be on PYTHONPATH.
"""

__all__ = ["pb", "pb_grpc", "SOURCE"]

try:
    from ._gen.adapt.v1 import adapt_pb2 as pb  # noqa: F401
    from ._gen.adapt.v1 import adapt_pb2_grpc as pb_grpc  # noqa: F401

    SOURCE = "package"
except ImportError as packaged_error:
    try:
        from adapt.v1 import adapt_pb2 as pb  # noqa: F401
        from adapt.v1 import adapt_pb2_grpc as pb_grpc  # noqa: F401

        SOURCE = "build"
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError(
            "adaptd_client needs the generated modules adapt_pb2 and adapt_pb2_grpc: install the "
            "package (pip install client/python), or build the target adaptd_python_stubs and put "
            "<build>/client/python on PYTHONPATH (package: %s; build: %s)" %
            (packaged_error, error)) from error
