#!/usr/bin/python3
"""End-to-end test of the encoders in the real adaptd binary, driven by adaptctl: the default
`text` encoder listed with its fingerprint, a text store fed raw text, and a fastText model
that does not load stopping the server at start-up with one line naming it.

Usage: encoders_e2e_test.py --adaptctl PATH --adaptd PATH [unittest arguments]
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


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class EncodersE2ETest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="adaptd-encoders-e2e-")
        self.server = None

    def tearDown(self):
        if self.server is not None:
            self.server.terminate()
            self.server.wait(timeout=30)
        shutil.rmtree(self.dir, ignore_errors=True)

    def start(self, *extra):
        self.addr = f"127.0.0.1:{free_port()}"
        self.server = subprocess.Popen(
            [ADAPTD, "--listen", self.addr, "--metrics-listen", "off",
             "--data-dir", os.path.join(self.dir, "data"), *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 60
        while time.time() < deadline:
            probe = subprocess.run([ADAPTCTL, "--addr", self.addr, "--timeout", "2", "encoders"],
                                   capture_output=True, text=True)
            if probe.returncode == 0:
                return
            self.assertIsNone(self.server.poll(), "adaptd exited: " + self.server.stderr.read())
            time.sleep(0.2)
        self.fail("adaptd did not answer within 60 s")

    def ctl(self, *args):
        run = subprocess.run([ADAPTCTL, "--addr", self.addr, *args], capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(run.returncode, 0, run.stderr)
        return run.stdout

    def test_default_text_encoder_serves_raw_text(self):
        self.start()
        encoders = json.loads(self.ctl("encoders"))["encoders"]
        text = [e for e in encoders if e["name"] == "text"]
        self.assertEqual(len(text), 1, encoders)
        self.assertEqual(text[0]["type"], "hashed_ngrams")
        self.assertEqual(text[0]["input_kind"], "text")
        self.assertEqual(text[0]["dim"], 1024)
        self.assertRegex(text[0]["fingerprint"], r"^hashed_ngrams:[0-9a-f]{16}$")
        table = self.ctl("encoders", "--table").splitlines()
        self.assertEqual(table[0].split(), ["NAME", "TYPE", "INPUT", "DIM", "FINGERPRINT"])
        self.assertIn(text[0]["fingerprint"], "\n".join(table))

        self.ctl("store", "create", "acme/news", "--kind", "faast", "--encoder", "text",
                 "--set", "auto_compile_every=0", "--set", "auto_compile_delay_ms=0")
        train = os.path.join(self.dir, "train.csv")
        with open(train, "w") as f:
            f.write("text,label\n")
            for t, l in [("the striker scored a goal", "sports"), ("a draw in the match", "sports"),
                         ("heavy rain tomorrow", "weather"), ("sunny and warm skies", "weather")]:
                f.write(f"{t},{l}\n")
        summary = json.loads(self.ctl("adapt", "acme/news", "--input", train, "--text-col", "text",
                                      "--label-col", "label"))
        self.assertEqual(summary["accepted"], 4)
        self.ctl("compile", "acme/news")
        queries = os.path.join(self.dir, "q.csv")
        with open(queries, "w") as f:
            f.write("text\nanother goal in the match\nrain and wind\n")
        out = os.path.join(self.dir, "out.csv")
        self.ctl("predict", "acme/news", "--input", queries, "--output", out, "--text-col", "text")
        with open(out) as f:
            rows = [line.split(",")[0] for line in f.read().splitlines()[1:]]
        self.assertEqual(rows, ["sports", "weather"])

        bad = os.path.join(self.dir, "bad.csv")
        with open(bad, "wb") as f:
            f.write(b"text,label\nfine,sports\nbad \xff byte,sports\n")
        run = subprocess.run([ADAPTCTL, "--addr", self.addr, "adapt", "acme/news", "--input", bad,
                              "--text-col", "text", "--label-col", "label"],
                             capture_output=True, text=True, errors="replace")
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("UTF-8", run.stderr)
        info = json.loads(self.ctl("store", "get", "acme/news"))
        self.assertEqual(info["examples"], 4)

    def test_unloadable_fasttext_model_stops_the_server(self):
        missing = os.path.join(self.dir, "no-such-model.bin")
        config = os.path.join(self.dir, "config.json")
        with open(config, "w") as f:
            json.dump({"encoders": [{"name": "ft", "type": "fasttext", "model_path": missing}]}, f)
        run = subprocess.run([ADAPTD, "--config", config, "--listen", f"127.0.0.1:{free_port()}",
                              "--metrics-listen", "off", "--data-dir",
                              os.path.join(self.dir, "data")],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 1)
        lines = run.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, run.stderr)
        self.assertIn("encoders[0].model_path", lines[0])
        self.assertIn("'ft'", lines[0])
        self.assertIn(missing, lines[0])


def main():
    global ADAPTCTL, ADAPTD
    parser = argparse.ArgumentParser()
    parser.add_argument("--adaptctl", required=True)
    parser.add_argument("--adaptd", required=True)
    args, rest = parser.parse_known_args()
    ADAPTCTL, ADAPTD = args.adaptctl, args.adaptd
    unittest.main(argv=[sys.argv[0], *rest])


if __name__ == "__main__":
    main()
