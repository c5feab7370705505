"""The real adaptd binary as a child process, for the Python end-to-end tests.

AdaptdProcess starts adaptd on a free loopback port with a temporary data directory, waits
(bounded) until its health service answers SERVING, and always stops it. run_tests() runs a
test module's unittest suite and prints the server's log when something failed.

The binary comes from the environment variable ADAPTD_BIN (ctest sets it).
"""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

from adaptd_client import AdaptdError, Client

START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 10.0


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent_prefix():
    """A command prefix that makes the kernel send SIGTERM to the server when the test process
    dies, so a killed test (ctest timeout) leaves no server behind. util-linux's setpriv does
    it without running Python code between fork and exec (unsafe once gRPC threads exist)."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM"] if setpriv else []


class AdaptdProcess:
    def __init__(self, binary=None, metrics_listen="off"):
        """`metrics_listen`: adaptd's --metrics-listen (off unless a test scrapes it)."""
        self.metrics_listen = metrics_listen
        self.binary = binary or os.environ.get("ADAPTD_BIN", "")
        if not self.binary or not os.access(self.binary, os.X_OK):
            raise RuntimeError("adaptd binary not found or not executable: ADAPTD_BIN=%r" %
                               (self.binary,))
        self.tmp = tempfile.mkdtemp(prefix="adaptd-py-e2e-")
        self.log_path = os.path.join(self.tmp, "adaptd.stderr")
        self.address = None
        self.process = None

    def start(self):
        """Starts the server and returns its address once it serves; on failure the server
        is stopped and RuntimeError carries its stderr."""
        self.address = "127.0.0.1:%d" % free_port()
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                _die_with_parent_prefix() +
                [self.binary, "--listen", self.address, "--metrics-listen", self.metrics_listen,
                 "--data-dir", os.path.join(self.tmp, "data")],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT_S
        last = "no answer yet"
        try:
            while True:
                if self.process.poll() is not None:
                    raise RuntimeError("adaptd exited with status %d before serving:\n%s" %
                                       (self.process.returncode, self.log()))
                # A fresh channel per attempt: one that found no server backs off for seconds.
                with Client(self.address, timeout=1.0) as probe:
                    try:
                        status = probe.health()
                        if status == "SERVING":
                            return self.address
                        last = "health status " + status
                    except AdaptdError as error:
                        last = error
                if time.monotonic() > deadline:
                    raise RuntimeError("adaptd did not serve within %.0f s (%s):\n%s" %
                                       (START_TIMEOUT_S, last, self.log()))
                time.sleep(0.1)
        except BaseException:
            self.stop()
            raise

    def stop(self):
        """Stops the server (SIGTERM, then SIGKILL after STOP_TIMEOUT_S); returns its exit
        status."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError as error:
            return "(no log: %s)" % error

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)


def run_tests(get_server):
    """Runs the calling module's tests (unittest command line); on failure prints the log of
    the server that get_server() returns (None when it never started). Exits."""
    program = unittest.main(module="__main__", exit=False, verbosity=2)
    ok = program.result.wasSuccessful()
    server = get_server()
    if server is not None:
        if not ok:
            running = server.process is not None and server.process.poll() is None
            status = "running" if running else "exit status %s" % (
                server.process.returncode if server.process else "(never started)")
            sys.stderr.write("---- adaptd stderr (%s) ----\n%s---- end of adaptd stderr ----\n"
                             % (status, server.log()))
        server.cleanup()
    sys.exit(0 if ok else 1)
