#!/usr/bin/env python3
"""adaptd's choice of OpenBLAS kernels at start-up (docs/BLAS.md), on the real binary: the log
line and the adaptd_build_info labels agree, --blas-core=NAME restarts the process in place (same
pid) with those kernels, OPENBLAS_CORETYPE in the environment is kept, and a bad name stops the
server with the flag named. Python 3, standard library only."""

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

ADAPTD = None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_flags():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


def clean_env(extra=None):
    """This process's environment without OpenBLAS's and adaptd's own BLAS variables (whoever
    runs the tests may have set OPENBLAS_CORETYPE), plus `extra`."""
    env = {k: v for k, v in os.environ.items()
           if k != "OPENBLAS_CORETYPE" and not k.startswith("ADAPTD_BLAS")}
    env.update(extra or {})
    return env


class BlasCore(unittest.TestCase):
    def start(self, *flags, env=None):
        """Starts adaptd; returns (its pid, the BLAS log line, adaptd_build_info's labels)."""
        data = tempfile.mkdtemp(prefix="blas-core-e2e-")
        self.addCleanup(shutil.rmtree, data, True)
        metrics = free_port()
        proc = subprocess.Popen(
            [ADAPTD, "--listen", "127.0.0.1:%d" % free_port(), "--metrics-listen",
             "127.0.0.1:%d" % metrics, "--data-dir", data] + list(flags),
            stderr=subprocess.PIPE, text=True, env=clean_env(env))
        self.addCleanup(proc.wait)
        self.addCleanup(proc.terminate)
        blas = proc.stderr.readline()
        deadline = time.monotonic() + 30
        while True:
            try:
                page = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % metrics,
                                              timeout=2).read().decode()
                break
            except OSError:
                self.assertIsNone(proc.poll(), "adaptd exited: " + blas)
                self.assertLess(time.monotonic(), deadline, "no metrics")
                time.sleep(0.1)
        line = re.search(r"^adaptd_build_info\{(.*)\} 1$", page, re.M)
        self.assertIsNotNone(line, page)
        labels = dict(re.findall(r'(\w+)="([^"]*)"', line.group(1)))
        return proc.pid, blas, labels

    def test_default_reports_the_kernels_in_use(self):
        _, blas, labels = self.start()
        self.assertRegex(blas, r"^adaptd: BLAS: OpenBLAS \S+, kernels \S+ \(.*\); self-check passed$")
        self.assertIn("kernels %s " % labels["blas_core"], blas)
        self.assertIn(labels["blas_core_source"], ("library", "cpu"))
        self.assertTrue(labels["blas"].startswith("OpenBLAS "))
        _, blas, labels = self.start("--blas-core", "library")
        self.assertEqual(labels["blas_core_source"], "library")
        self.assertIn("(--blas-core=library)", blas)

    def test_a_named_core_restarts_in_place(self):
        if not {"avx2", "fma"} <= cpu_flags():
            self.skipTest("this CPU has no AVX2")
        for core in ("Haswell", "Sandybridge"):
            pid, blas, labels = self.start("--blas-core", core)
            self.assertEqual((labels["blas_core"], labels["blas_core_source"]), (core, "flag"))
            self.assertIn("kernels %s (--blas-core=%s)" % (core, core), blas)
            # The process the test started is the one serving (execv keeps the pid).
            with open("/proc/%d/cmdline" % pid) as f:
                self.assertIn(core, f.read())

    def test_the_environment_wins(self):
        _, blas, labels = self.start(env={"OPENBLAS_CORETYPE": "Prescott"})
        self.assertEqual((labels["blas_core"], labels["blas_core_source"]),
                         ("Prescott", "environment"))
        self.assertIn("OPENBLAS_CORETYPE=Prescott in the environment", blas)

    def test_a_bad_core_stops_the_server(self):
        data = tempfile.mkdtemp(prefix="blas-core-e2e-")
        self.addCleanup(shutil.rmtree, data, True)
        # Refused with or without OPENBLAS_CORETYPE in the environment (which would decide the
        # kernels, but does not excuse a typo in the flag).
        for env in (None, {"OPENBLAS_CORETYPE": "Prescott"}):
            result = subprocess.run(
                [ADAPTD, "--blas-core", "Skylake", "--data-dir", data, "--listen",
                 "127.0.0.1:0", "--metrics-listen", "off"],
                capture_output=True, text=True, timeout=30, env=clean_env(env))
            self.assertEqual(result.returncode, 1, result.stderr)
            self.assertTrue(result.stderr.startswith(
                'adaptd: --blas-core: unknown OpenBLAS core "Skylake"'), result.stderr)


def main():
    global ADAPTD
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--adaptd", required=True)
    args, rest = parser.parse_known_args()
    ADAPTD = args.adaptd
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
