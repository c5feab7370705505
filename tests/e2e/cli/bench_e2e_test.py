#!/usr/bin/python3
"""End-to-end test of `adaptctl bench` against the real adaptd binary.

Starts adaptd on a free loopback port (batching on, then off), runs a one-second bench with
small sizes for each store kind, and checks the one-line JSON summary and that the bench
deleted the stores it created.

Usage: bench_e2e_test.py --adaptctl PATH --adaptd PATH [unittest arguments]
"""

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

ADAPTCTL = ""
ADAPTD = ""
FIELDS = ["throughput", "p50_ms", "p90_ms", "p99_ms", "errors", "noop_throughput"]


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, *flags):
        self.tmp = tempfile.mkdtemp(prefix="adaptd-bench-e2e-")
        self.addr = "127.0.0.1:%d" % free_port()
        self.process = subprocess.Popen(
            [ADAPTD, "--listen", self.addr, "--metrics-listen", "off",
             "--data-dir", os.path.join(self.tmp, "data")] + list(flags),
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("adaptd exited: " + self.process.stderr.read())
            probe = subprocess.run([ADAPTCTL, "--addr", self.addr, "encoders"],
                                   capture_output=True, text=True)
            if probe.returncode == 0:
                return
            time.sleep(0.2)
        raise RuntimeError("adaptd did not start")

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process.stderr.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def adaptctl(self, *args):
        return subprocess.run([ADAPTCTL, "--addr", self.addr] + list(args),
                              capture_output=True, text=True, timeout=180)


class BenchTest(unittest.TestCase):
    def run_bench(self, server, kind, *extra):
        result = server.adaptctl("bench", "--concurrency", "4", "--tenants", "2", "--stores", "6",
                                 "--kind", kind, "--dim", "16", "--labels", "4",
                                 "--inputs-per-request", "2", "--duration", "1", *extra)
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = [l for l in result.stdout.splitlines() if l.strip()]
        self.assertEqual(len(lines), 1, result.stdout)
        summary = json.loads(lines[0])
        for field in FIELDS:
            self.assertIn(field, summary)
            self.assertIsInstance(summary[field], (int, float))
        self.assertEqual(summary["errors"], 0, summary.get("first_error"))
        self.assertGreater(summary["throughput"], 0)
        self.assertGreater(summary["noop_throughput"], 0)
        self.assertLessEqual(summary["p50_ms"], summary["p90_ms"])
        self.assertLessEqual(summary["p90_ms"], summary["p99_ms"])
        # The bench's stores are gone.
        for tenant in ("bench0", "bench1"):
            listed = server.adaptctl("store", "list", tenant)
            self.assertEqual(listed.returncode, 0, listed.stderr)
            self.assertNotIn('"store"', listed.stdout)
        return summary

    def test_every_kind_batching_on(self):
        server = Server()
        try:
            for kind, settings in (("faast", ()), ("falcon", ("--set", "variant=1")),
                                   ("fwpkm", ())):
                with self.subTest(kind=kind):
                    self.run_bench(server, kind, *settings)
        finally:
            server.stop()

    def test_adapt_phase(self):
        server = Server()
        try:
            for kind, settings in (("faast", ()), ("falcon", ("--set", "variant=1"))):
                with self.subTest(kind=kind):
                    summary = self.run_bench(server, kind, "--adapt-examples", "5", *settings)
                    self.assertEqual(summary["adapt_examples"], 5)
                    self.assertEqual(summary["adapt_errors"], 0, summary.get("first_error"))
                    self.assertGreater(summary["adapt_calls"], 0)
                    self.assertAlmostEqual(summary["adapt_examples_per_s"],
                                           5 * summary["adapt_throughput"], places=3)
                    self.assertLessEqual(summary["adapt_p50_ms"], summary["adapt_p99_ms"])
            # Without the flag the summary has no adapt figures.
            self.assertNotIn("adapt_calls", self.run_bench(server, "faast"))
        finally:
            server.stop()

    def test_batching_off_and_address_flag(self):
        server = Server("--max-batch-size", "1", "--workers", "2")
        try:
            result = subprocess.run(
                [ADAPTCTL, "bench", "--address", server.addr, "--concurrency", "2", "--stores",
                 "3", "--dim", "8", "--labels", "3", "--duration", "1"],
                capture_output=True, text=True, timeout=180)
            self.assertEqual(result.returncode, 0, result.stderr)
            summary = json.loads(result.stdout.strip())
            self.assertEqual(summary["errors"], 0, summary.get("first_error"))
        finally:
            server.stop()

    def test_existing_stores_are_queried_and_kept(self):
        server = Server()
        try:
            created = server.adaptctl("store", "create", "mine/s", "--kind", "falcon", "--set",
                                      "variant=1", "--set", "dim=8")
            self.assertEqual(created.returncode, 0, created.stderr)
            examples = os.path.join(server.tmp, "examples.csv")
            with open(examples, "w") as f:
                f.write(",".join("x%d" % j for j in range(8)) + ",label\n")
                for i in range(6):
                    f.write(",".join(str((i * 7 + j) % 5 - 2) for j in range(8)) +
                            ",%s\n" % ("even" if i % 2 == 0 else "odd"))
            adapted = server.adaptctl("adapt", "mine/s", "--input", examples)
            self.assertEqual(adapted.returncode, 0, adapted.stderr)
            result = server.adaptctl("bench", "--store", "mine/s", "--dim", "8",
                                     "--concurrency", "2", "--duration", "1")
            self.assertEqual(result.returncode, 0, result.stderr)
            summary = json.loads(result.stdout.strip())
            self.assertEqual(summary["stores"], 1)
            self.assertEqual(summary["errors"], 0, summary.get("first_error"))
            self.assertGreater(summary["calls"], 0)
            kept = server.adaptctl("store", "get", "mine/s")
            self.assertEqual(kept.returncode, 0, kept.stderr)
            self.assertIn('"examples":6', kept.stdout.replace(" ", ""))  # the bench added none
            bad = server.adaptctl("bench", "--store", "no-slash", "--duration", "1")
            self.assertEqual(bad.returncode, 2, bad.stderr)
            self.assertIn("--store", bad.stderr)
        finally:
            server.stop()

    def test_texts_through_a_text_encoder(self):
        server = Server()
        try:
            texts = os.path.join(server.tmp, "texts.txt")
            with open(texts, "w") as f:
                f.write("the invoice is overdue\r\n\nreset my password please\n"
                        "where is my parcel\nupgrade the plan to premium\n")
            result = server.adaptctl("bench", "--encoder", "text", "--texts", texts,
                                     "--concurrency", "3", "--stores", "2", "--labels", "3",
                                     "--duration", "1")
            self.assertEqual(result.returncode, 0, result.stderr)
            summary = json.loads(result.stdout.strip())
            self.assertEqual(summary["errors"], 0, summary.get("first_error"))
            self.assertGreater(summary["calls"], 0)
            self.assertEqual((summary["encoder"], summary["inputs"], summary["texts"]),
                             ("text", "text", 4))  # the blank line is skipped
            listed = server.adaptctl("store", "list", "bench0")
            self.assertNotIn('"store"', listed.stdout)
            # A text encoder without texts, texts for a vector encoder, an unknown encoder, an
            # empty or missing file: usage errors naming the flag, and no store is left.
            empty = os.path.join(server.tmp, "empty.txt")
            open(empty, "w").write("\n\n")
            for args, flag in ((["--encoder", "text"], "--texts"),
                               (["--texts", texts], "--texts"),
                               (["--encoder", "nope", "--texts", texts], "--encoder"),
                               (["--encoder", "text", "--texts", empty], "--texts"),
                               (["--encoder", "text", "--texts", texts + ".missing"], "--texts")):
                with self.subTest(args=args):
                    bad = server.adaptctl("bench", "--duration", "1", *args)
                    self.assertEqual(bad.returncode, 2, bad.stderr)
                    self.assertIn(flag, bad.stderr)
            listed = server.adaptctl("store", "list", "bench0")
            self.assertNotIn('"store"', listed.stdout)
        finally:
            server.stop()

    def test_bad_kind_is_a_usage_error(self):
        result = subprocess.run([ADAPTCTL, "bench", "--kind", "nope"], capture_output=True,
                                text=True, timeout=60)
        self.assertEqual(result.returncode, 2)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--adaptctl", required=True)
    parser.add_argument("--adaptd", required=True)
    args, rest = parser.parse_known_args()
    ADAPTCTL, ADAPTD = args.adaptctl, args.adaptd
    unittest.main(argv=[sys.argv[0]] + rest)
