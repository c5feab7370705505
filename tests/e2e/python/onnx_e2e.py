"""What the onnx encoder's end-to-end tests share (test_onnx_encoder.py, test_onnx_images.py):
the environment ctest sets (ADAPTD_BIN, ADAPTD_ONNXRUNTIME_LIBRARY, ADAPTD_ONNX_TESTDATA), a
launcher script running adaptd with a config and ONNX Runtime's library, and the module's one
server."""

import os
import shutil
import stat

from adaptd_process import AdaptdProcess

TENANT = "acme"
DATA = os.environ.get("ADAPTD_ONNX_TESTDATA", "")
LIBRARY = os.environ.get("ADAPTD_ONNXRUNTIME_LIBRARY", "")
MANUAL = dict(auto_compile_every=0, auto_compile_delay_ms=0)


def launcher(path, config, library=LIBRARY, extra=""):
    """Writes at `path` an executable that runs adaptd with `config`, the runtime named by
    `library` in the environment and `extra` flags (AdaptdProcess adds the listen address and
    data directory); returns `path`."""
    with open(path, "w") as f:
        f.write('#!/bin/sh\nADAPTD_ONNXRUNTIME_LIBRARY="%s" exec "%s" --config "%s"%s "$@"\n' %
                (library, os.environ["ADAPTD_BIN"], config, extra))
    os.chmod(path, stat.S_IRWXU)
    return path


def start_server(binary):
    """The module's server on `binary` (a launcher), started; fails without the library."""
    if not os.path.exists(LIBRARY):
        raise RuntimeError("ONNX Runtime's library not found at ADAPTD_ONNXRUNTIME_LIBRARY=%r "
                           "(bash .ci/dev build fetches it)" % LIBRARY)
    server = AdaptdProcess(binary=binary)
    server.start()
    return server


def stop_server(server, tmp):
    if server is not None:
        server.stop()
    shutil.rmtree(tmp, ignore_errors=True)
