#!/usr/bin/python3
"""End-to-end test of adaptctl against the real adaptd binary.

Starts adaptd on a free loopback port with a temporary data directory, drives it only through
the adaptctl command line, and checks the contract of docs/DESIGN.md ("The command-line
client adaptctl"): summaries, files, exit codes and error messages.

Usage: adaptctl_e2e_test.py --adaptctl PATH --adaptd PATH [unittest arguments]
(or the environment variables ADAPTCTL_BIN and ADAPTD_BIN).
"""

import argparse
import csv
import json
import math
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

ADAPTCTL = os.environ.get("ADAPTCTL_BIN", "")
ADAPTD = os.environ.get("ADAPTD_BIN", "")
START_TIMEOUT_S = 20.0
DIM = 16
LABELS = ["alpha", "beta, with comma", 'gamma "quoted"', "delta"]


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def gaussian_classes(rng, per_class, centers, id_prefix):
    """Rows id,x0..x{DIM-1},label: Gaussian clouds (sigma 1) around well separated centers."""
    rows = []
    for k, label in enumerate(LABELS):
        for i in range(per_class):
            x = [round(c + rng.gauss(0.0, 1.0), 5) for c in centers[k]]
            rows.append(["%s%d_%d" % (id_prefix, k, i)] + x + [label])
    rng.shuffle(rows)
    return rows


class AdaptctlEndToEnd(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for name, path in (("adaptctl", ADAPTCTL), ("adaptd", ADAPTD)):
            if not path or not os.access(path, os.X_OK):
                raise RuntimeError("%s binary not found or not executable: %r" % (name, path))
        cls.tmp = tempfile.mkdtemp(prefix="adaptctl-e2e-")
        cls.addr = "127.0.0.1:%d" % free_port()
        cls.log_path = os.path.join(cls.tmp, "adaptd.log")
        cls.log = open(cls.log_path, "w")
        cls.server = subprocess.Popen(
            [ADAPTD, "--listen", cls.addr, "--metrics-listen", "127.0.0.1:0",
             "--data-dir", os.path.join(cls.tmp, "data")],
            stdout=cls.log, stderr=subprocess.STDOUT)
        try:
            cls.wait_until_serving()
        except Exception:
            cls.stop_server()
            raise

    @classmethod
    def wait_until_serving(cls):
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if cls.server.poll() is not None:
                raise RuntimeError("adaptd exited with %d:\n%s" % (cls.server.returncode,
                                                                   cls.server_log()))
            probe = subprocess.run([ADAPTCTL, "--addr", cls.addr, "--timeout", "2", "encoders"],
                                   capture_output=True, text=True)
            if probe.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise RuntimeError("adaptd did not answer within %.0f s: %s\n%s" %
                                   (START_TIMEOUT_S, probe.stderr, cls.server_log()))
            time.sleep(0.2)

    @classmethod
    def server_log(cls):
        cls.log.flush()
        with open(cls.log_path) as f:
            return f.read()

    @classmethod
    def stop_server(cls):
        if cls.server.poll() is None:
            cls.server.terminate()
            try:
                cls.server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                cls.server.kill()
                cls.server.wait()
        cls.log.close()

    @classmethod
    def tearDownClass(cls):
        cls.stop_server()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    # -- helpers ---------------------------------------------------------------------------

    def path(self, name):
        return os.path.join(self.tmp, name)

    def adaptctl(self, *args, stdin=None):
        """Runs adaptctl against the server; returns the CompletedProcess."""
        return subprocess.run([ADAPTCTL, "--addr", self.addr, "--timeout", "60"] + list(args),
                              capture_output=True, text=True, input=stdin)

    def ok(self, *args):
        """Runs adaptctl, expects success and one JSON line on stdout; returns it parsed."""
        result = self.adaptctl(*args)
        self.assertEqual(result.returncode, 0,
                         "adaptctl %s failed: %s" % (" ".join(args), result.stderr))
        lines = result.stdout.splitlines()
        self.assertEqual(len(lines), 1, "expected one summary line, got %r" % result.stdout)
        return json.loads(lines[0])

    def fails(self, exit_code, code_name, *args):
        """Runs adaptctl, expects `exit_code` and `error: CODE_NAME: ...` on stderr."""
        result = self.adaptctl(*args)
        self.assertEqual(result.returncode, exit_code,
                         "adaptctl %s: stdout %r stderr %r" % (" ".join(args), result.stdout,
                                                              result.stderr))
        self.assertTrue(result.stderr.startswith("error: %s: " % code_name),
                        "stderr %r does not start with 'error: %s: '" % (result.stderr, code_name))
        return result.stderr

    def make_classification_files(self, prefix, seed):
        rng = random.Random(seed)
        centers = [[rng.gauss(0.0, 2.5) for _ in range(DIM)] for _ in LABELS]
        header = ["id"] + ["x%d" % j for j in range(DIM)] + ["label"]
        train = gaussian_classes(rng, 100, centers, "tr")
        test = gaussian_classes(rng, 50, centers, "te")
        write_csv(self.path(prefix + "train.csv"), header, train)
        write_csv(self.path(prefix + "test.csv"), header, test)
        return train, test

    # -- tests -----------------------------------------------------------------------------

    def test_encoders_lists_identity(self):
        encoders = self.ok("encoders")["encoders"]
        self.assertIn("identity", [e["name"] for e in encoders])

    def test_label_store_lifecycle(self):
        train, test = self.make_classification_files("cls_", seed=7)

        info = self.ok("store", "create", "acme/cls", "--kind", "faast", "--encoder", "identity",
                       "--output", "labels", "--set", "dim=%d" % DIM)
        self.assertEqual(info["tenant"], "acme")
        self.assertEqual(info["store"], "cls")
        self.assertEqual(info["spec"]["kind"], "STORE_KIND_FAAST")
        self.assertEqual(info["spec"]["output"]["kind"], "KIND_LABELS")
        self.assertEqual(info["spec"]["dim"], DIM)

        adapted = self.ok("adapt", "acme/cls", "--input", self.path("cls_train.csv"),
                          "--batch", "64")
        self.assertEqual(list(adapted), ["accepted", "version", "evaluated", "correct",
                                         "duplicates", "accuracy", "loss"])
        self.assertEqual(adapted["accepted"], len(train))
        self.assertIsInstance(adapted["version"], int)
        self.assertLessEqual(adapted["correct"], adapted["evaluated"])
        if adapted["evaluated"] == 0:
            self.assertIsNone(adapted["accuracy"])
        else:
            self.assertAlmostEqual(adapted["accuracy"],
                                   adapted["correct"] / adapted["evaluated"], places=6)

        compiled = self.ok("compile", "acme/cls")
        self.assertGreaterEqual(compiled["version"], 1)

        predicted = self.ok("predict", "acme/cls", "--input", self.path("cls_test.csv"),
                            "--output", self.path("cls_pred.csv"))
        self.assertEqual(predicted["predicted"], len(test))
        self.assertGreaterEqual(predicted["version"], compiled["version"])
        predictions = read_csv(self.path("cls_pred.csv"))
        self.assertEqual(list(predictions[0]), ["id", "label", "score"])
        self.assertEqual([p["id"] for p in predictions], [row[0] for row in test])
        correct = sum(p["label"] == row[-1] for p, row in zip(predictions, test))
        self.assertGreaterEqual(correct / len(test), 0.9)

        # Top-k: label_2.. columns, best first.
        self.ok("predict", "acme/cls", "--input", self.path("cls_test.csv"), "--output",
                self.path("cls_top3.csv"), "--top-k", "3")
        top3 = read_csv(self.path("cls_top3.csv"))
        self.assertEqual(list(top3[0]), ["id", "label", "score", "label_2", "score_2",
                                         "label_3", "score_3"])
        for row in top3:
            self.assertGreaterEqual(float(row["score"]), float(row["score_2"]))
            self.assertGreaterEqual(float(row["score_2"]), float(row["score_3"]))

        # "-": the CSV on stdout, the summary on stderr.
        result = self.adaptctl("predict", "acme/cls", "--input", self.path("cls_test.csv"),
                               "--output", "-")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(json.loads(result.stderr.strip())["predicted"], len(test))
        with open(self.path("cls_pred.csv"), newline="") as f:
            self.assertEqual(result.stdout, f.read())

        info = self.ok("store", "get", "acme/cls")
        self.assertEqual(info["examples"], len(train))
        self.assertEqual(sorted(info["labels"]), sorted(LABELS))
        self.assertGreaterEqual(info["version"], compiled["version"])
        stores = self.ok("store", "list", "acme")["stores"]
        self.assertIn("cls", [s["store"] for s in stores])

        # export -> delete -> import -> the same predictions.
        exported = self.ok("export", "acme/cls", "--output", self.path("cls.snapshot"))
        self.assertEqual(exported["bytes"], os.path.getsize(self.path("cls.snapshot")))
        self.assertGreater(exported["bytes"], 0)
        self.ok("store", "delete", "acme/cls")
        self.fails(1, "NOT_FOUND", "store", "get", "acme/cls")
        imported = self.ok("import", "acme/cls", "--input", self.path("cls.snapshot"))
        self.assertEqual(imported["bytes"], exported["bytes"])
        self.assertEqual(imported["examples"], len(train))
        self.ok("predict", "acme/cls", "--input", self.path("cls_test.csv"), "--output",
                self.path("cls_pred_imported.csv"))
        again = read_csv(self.path("cls_pred_imported.csv"))
        self.assertEqual([p["label"] for p in again], [p["label"] for p in predictions])
        for before, after in zip(predictions, again):
            self.assertTrue(math.isclose(float(before["score"]), float(after["score"]),
                                         rel_tol=1e-5, abs_tol=1e-6))

        # Forget ten of the training rows.
        write_csv(self.path("cls_forget.csv"),
                  ["id"] + ["x%d" % j for j in range(DIM)] + ["label"], train[:10])
        forgotten = self.ok("forget", "acme/cls", "--input", self.path("cls_forget.csv"))
        self.assertEqual(forgotten["forgotten"], 10)
        self.assertEqual(self.ok("store", "get", "acme/cls")["examples"], len(train) - 10)

    def test_errors(self):
        self.make_classification_files("err_", seed=11)
        self.ok("store", "create", "acme/err", "--kind", "faast", "--set", "dim=%d" % DIM)

        stderr = self.fails(1, "NOT_FOUND", "store", "get", "acme/missing")
        self.assertIn("missing", stderr)
        self.fails(1, "NOT_FOUND", "predict", "acme/missing", "--input",
                   self.path("err_test.csv"), "--output", self.path("never.csv"))
        self.assertFalse(os.path.exists(self.path("never.csv")))
        self.fails(1, "ALREADY_EXISTS", "store", "create", "acme/err", "--kind", "faast")

        # Eight features for a 16-dimensional store.
        write_csv(self.path("err_narrow.csv"), ["x%d" % j for j in range(8)] + ["label"],
                  [[0.5] * 8 + ["alpha"], [1.5] * 8 + ["beta"]])
        self.fails(1, "INVALID_ARGUMENT", "adapt", "acme/err", "--input",
                   self.path("err_narrow.csv"))

        # A non-numeric feature value: the file's line and the column are named.
        write_csv(self.path("err_text.csv"), ["x0", "x1", "label"],
                  [[1, 2, "a"], [3, "oops", "b"]])
        stderr = self.fails(1, "INVALID_ARGUMENT", "adapt", "acme/err", "--input",
                            self.path("err_text.csv"))
        self.assertTrue(stderr.startswith('error: INVALID_ARGUMENT: %s:3: column "x1": not a number'
                                          % self.path("err_text.csv")), stderr)

        # Usage errors exit with 2.
        stderr = self.fails(2, "INVALID_ARGUMENT", "store", "create", "acme/other", "--kind",
                            "faast", "--set", "bogus=1")
        self.assertIn("valid keys: dim, rcond", stderr)
        self.fails(2, "INVALID_ARGUMENT", "store", "get", "no-slash")
        self.fails(2, "INVALID_ARGUMENT", "adapt", "acme/err")
        # The failed commands changed nothing.
        self.assertEqual(self.ok("store", "get", "acme/err")["examples"], 0)

    def test_store_list_follows_every_page(self):
        names = ["p%02d" % i for i in range(7)]
        for name in reversed(names):
            self.ok("store", "create", "paging/" + name, "--kind", "faast", "--set",
                    "dim=%d" % DIM)
        # One list whatever the page size: the default, pages of 1 and 2, one page of 1000.
        for size in ([], ["--page-size", "1"], ["--page-size", "2"], ["--page-size", "1000"]):
            listed = self.ok("store", "list", "paging", *size)
            self.assertEqual(list(listed), ["stores"], size)
            self.assertEqual([s["store"] for s in listed["stores"]], names, size)
            self.assertEqual({s["tenant"] for s in listed["stores"]}, {"paging"})
        self.assertEqual(self.ok("store", "list", "nobody-here"), {"stores": []})

        stderr = self.fails(1, "INVALID_ARGUMENT", "store", "list", "paging",
                            "--page-size", "1001")
        self.assertTrue(stderr.startswith("error: INVALID_ARGUMENT: page_size: at most 1000"),
                        stderr)
        self.fails(2, "INVALID_ARGUMENT", "store", "list", "paging", "--page-size", "-1")
        self.fails(2, "INVALID_ARGUMENT", "store", "list", "paging", "--page-size", "many")

    def test_store_pin_and_unpin(self):
        created = self.ok("store", "create", "pins/a", "--kind", "faast", "--set",
                          "dim=%d" % DIM, "--pinned")
        self.assertTrue(created["spec"]["pinned"])
        self.assertFalse(self.ok("store", "unpin", "pins/a")["spec"]["pinned"])
        self.assertFalse(self.ok("store", "get", "pins/a")["spec"]["pinned"])
        self.assertTrue(self.ok("store", "pin", "pins/a")["spec"]["pinned"])
        self.assertTrue(self.ok("store", "get", "pins/a")["spec"]["pinned"])
        self.assertEqual(self.ok("store", "get", "pins/a")["tier"], "TIER_HOT")
        self.fails(1, "NOT_FOUND", "store", "pin", "pins/missing")
        self.fails(2, "INVALID_ARGUMENT", "store", "unpin", "no-slash")

    def test_store_from_a_base(self):
        train, test = self.make_classification_files("base_", seed=11)
        self.ok("store", "create", "shared/curated", "--kind", "faast", "--set", "ridge=1")
        self.ok("adapt", "shared/curated", "--input", self.path("base_train.csv"))
        self.ok("compile", "shared/curated")
        child = self.ok("store", "create", "acme/child", "--kind", "faast", "--set", "ridge=1",
                        "--base", "shared/curated")
        self.assertEqual(child["spec"]["base"], "shared/curated")
        self.assertEqual(child["version"], 1)
        predicted = self.ok("predict", "acme/child", "--input", self.path("base_test.csv"),
                            "--output", self.path("base_pred.csv"))
        self.assertEqual(predicted["predicted"], len(test))
        correct = sum(p["label"] == row[-1]
                      for p, row in zip(read_csv(self.path("base_pred.csv")), test))
        self.assertGreaterEqual(correct / len(test), 0.9, "the base's knowledge, before any example")
        refreshed = self.ok("compile", "acme/child", "--refresh-base")
        self.assertEqual(refreshed["base_version"], 1)
        self.fails(1, "FAILED_PRECONDITION", "store", "delete", "shared/curated")
        self.fails(1, "INVALID_ARGUMENT", "store", "create", "acme/spectral", "--kind", "faast",
                   "--base", "shared/curated")
        self.ok("store", "delete", "acme/child")
        self.ok("store", "delete", "shared/curated")

    def test_declared_labels_answer_zero_shot(self):
        with open(self.path("zs_labels.txt"), "w") as f:
            f.write("shipping\npassword\n")
        info = self.ok("store", "create", "acme/zs", "--kind", "faast", "--encoder", "text",
                       "--label-encoder", "text", "--label", "refund", "--labels-file",
                       self.path("zs_labels.txt"), "--set", "prior_examples=8")
        self.assertEqual(info["labels"], ["refund", "shipping", "password"])
        self.assertEqual(info["version"], 1)
        write_csv(self.path("zs_texts.csv"), ["id", "text"],
                  [["a", "password"], ["b", "refund"], ["c", "shipping"]])
        predicted = self.ok("predict", "acme/zs", "--input", self.path("zs_texts.csv"),
                            "--output", self.path("zs_pred.csv"))
        self.assertEqual(predicted["predicted"], 3)
        self.assertEqual([p["label"] for p in read_csv(self.path("zs_pred.csv"))],
                         ["password", "refund", "shipping"])
        self.fails(1, "INVALID_ARGUMENT", "store", "create", "acme/zs-bad", "--kind", "faast",
                   "--encoder", "text", "--label", "refund")

    def test_feedback_loop(self):
        """predict prints prediction ids; feedback teaches their true labels as adapt would."""
        train, test = self.make_classification_files("fb_", seed=11)
        header = ["id"] + ["x%d" % j for j in range(DIM)] + ["label"]
        for store in ("acme/fb", "acme/fbtwin"):
            info = self.ok("store", "create", store, "--kind", "faast", "--output", "labels",
                           "--set", "dim=%d" % DIM, "--feedback-window", "1000")
            self.assertEqual(info["spec"]["feedback"]["count"], 1000)
            self.ok("adapt", store, "--input", self.path("fb_train.csv"))
            self.ok("compile", store)
        self.ok("predict", "acme/fb", "--input", self.path("fb_test.csv"), "--output",
                self.path("fb_pred.csv"))
        predictions = read_csv(self.path("fb_pred.csv"))
        self.assertEqual(list(predictions[0]), ["id", "prediction_id", "label", "score"])
        self.assertEqual(len({p["prediction_id"] for p in predictions}), len(test))
        write_csv(self.path("fb_truth.csv"), ["prediction_id", "label"],
                  [[p["prediction_id"], row[-1]] for p, row in zip(predictions, test)])
        fed = self.ok("feedback", "acme/fb", "--input", self.path("fb_truth.csv"), "--batch",
                      "20")
        self.assertEqual(fed["accepted"], len(test))
        self.assertEqual(fed["duplicates"], 0)
        self.assertEqual(fed["served_correct"],
                         sum(p["label"] == row[-1] for p, row in zip(predictions, test)))
        again = self.ok("feedback", "acme/fb", "--input", self.path("fb_truth.csv"))
        self.assertEqual(again["duplicates"], len(test))
        # The twin learns the same examples by adapt: the same store.
        write_csv(self.path("fb_test_noid.csv"), header[1:], [row[1:] for row in test])
        self.ok("adapt", "acme/fbtwin", "--input", self.path("fb_test_noid.csv"))
        for store in ("acme/fb", "acme/fbtwin"):
            self.ok("compile", store)
            self.assertEqual(self.ok("store", "get", store)["examples"], len(train) + len(test))
        self.ok("predict", "acme/fb", "--input", self.path("fb_train.csv"), "--output",
                self.path("fb_after.csv"))
        self.ok("predict", "acme/fbtwin", "--input", self.path("fb_train.csv"), "--output",
                self.path("fb_twin.csv"))
        for a, b in zip(read_csv(self.path("fb_after.csv")), read_csv(self.path("fb_twin.csv"))):
            self.assertEqual(a["label"], b["label"])
            self.assertTrue(math.isclose(float(a["score"]), float(b["score"]), rel_tol=1e-5,
                                         abs_tol=1e-6))
        # An id the store never served: NOT_FOUND naming the window, nothing applied.
        write_csv(self.path("fb_unknown.csv"), ["prediction_id", "label"],
                  [[predictions[0]["prediction_id"] + "0000", LABELS[0]]])
        stderr = self.fails(1, "NOT_FOUND", "feedback", "acme/fb", "--input",
                            self.path("fb_unknown.csv"))
        self.assertIn("feedback window", stderr)
        self.assertEqual(self.ok("store", "get", "acme/fb")["examples"], len(train) + len(test))

    def test_next_store_sequences(self):
        cycle = [[1 if j == i else 0 for j in range(4)] for i in range(4)]  # e0 -> e1 -> e2 -> e3
        header = ["f%d" % j for j in range(4)]
        # Six sessions of one cycle each, interleaved in the file: --sequence-col groups them.
        rows = [["s%d" % (k % 6)] + cycle[k // 6] for k in range(24)]
        write_csv(self.path("sessions.csv"), ["session"] + header, rows)
        write_csv(self.path("cycle.csv"), header, cycle)
        self.ok("store", "create", "acme/next", "--kind", "falcon", "--output", "next", "--set",
                "dim=4")
        grouped = self.ok("adapt", "acme/next", "--input", self.path("sessions.csv"),
                          "--sequence-col", "session", "--batch", "3")
        self.assertEqual((grouped["accepted"], grouped["sequences"], grouped["evaluated"]),
                         (24, 6, 18))
        self.assertNotIn("accuracy", grouped)
        continued = self.ok("adapt", "acme/next", "--input", self.path("cycle.csv"),
                            "--continue-sequence")
        self.assertEqual((continued["sequences"], continued["evaluated"]), (1, 4))
        # A next store takes the rows as one sequence by default; it starts afresh.
        fresh = self.ok("adapt", "acme/next", "--input", self.path("cycle.csv"))
        self.assertEqual(fresh["evaluated"], 3)
        self.assertEqual(self.ok("adapt", "acme/next", "--input", self.path("cycle.csv"),
                                 "--sequence")["evaluated"], 3)
        self.ok("predict", "acme/next", "--input", self.path("cycle.csv"), "--output",
                self.path("next_pred.csv"))
        predicted = read_csv(self.path("next_pred.csv"))
        self.assertEqual(list(predicted[0]), ["y0", "y1", "y2", "y3"])
        best = [max(range(4), key=lambda j: float(row["y%d" % j])) for row in predicted[:3]]
        self.assertEqual(best, [1, 2, 3])
        self.assertEqual(self.ok("store", "get", "acme/next")["examples"], 36)
        # With an id column, rerunning the same file (an answer lost) is skipped message by
        # message; the store learns the rows once.
        write_csv(self.path("cycle_ids.csv"), ["id"] + header,
                  [["c%d" % i] + row for i, row in enumerate(cycle)])
        first = self.ok("adapt", "acme/next", "--input", self.path("cycle_ids.csv"), "--batch",
                        "2")
        self.assertEqual((first["accepted"], first["duplicates"]), (4, 0))
        again = self.ok("adapt", "acme/next", "--input", self.path("cycle_ids.csv"), "--batch",
                        "2")
        self.assertEqual((again["accepted"], again["duplicates"]), (4, 4))
        self.assertEqual(self.ok("store", "get", "acme/next")["examples"], 40)

        # Sequences only for next stores, passes only for fwpkm; nothing changes on an error.
        self.ok("store", "create", "acme/flat", "--kind", "falcon", "--set", "dim=4")
        write_csv(self.path("flat.csv"), header + ["label"], [r + ["a"] for r in cycle])
        stderr = self.fails(1, "INVALID_ARGUMENT", "adapt", "acme/flat", "--input",
                            self.path("flat.csv"), "--sequence")
        self.assertIn("--sequence applies to stores whose output is next", stderr)
        stderr = self.fails(1, "INVALID_ARGUMENT", "adapt", "acme/flat", "--input",
                            self.path("flat.csv"), "--passes", "2")
        self.assertIn("passes: only fwpkm stores re-read examples", stderr)
        self.fails(1, "INVALID_ARGUMENT", "adapt", "acme/next", "--input",
                   self.path("sessions.csv"), "--sequence-col", "user")
        self.fails(2, "INVALID_ARGUMENT", "adapt", "acme/next", "--input",
                   self.path("sessions.csv"), "--sequence", "--sequence-col", "session")
        self.fails(2, "INVALID_ARGUMENT", "adapt", "acme/next", "--input",
                   self.path("cycle.csv"), "--passes", "0")
        self.assertEqual(self.ok("store", "get", "acme/flat")["examples"], 0)
        self.assertEqual(self.ok("store", "get", "acme/next")["examples"], 40)

        # fwpkm reads each message --passes times.
        self.ok("store", "create", "acme/pkm", "--kind", "fwpkm", "--set", "dim=4")
        self.assertEqual(self.ok("adapt", "acme/pkm", "--input", self.path("flat.csv"),
                                 "--passes", "3")["accepted"], 4)

    def test_vector_store_from_json_lines(self):
        rng = random.Random(3)
        in_dim, out_dim = 8, 2
        weights = [[rng.gauss(0.0, 1.0) for _ in range(in_dim)] for _ in range(out_dim)]

        def rows(n):
            out = []
            for i in range(n):
                x = [rng.gauss(0.0, 1.0) for _ in range(in_dim)]
                y = [sum(w * v for w, v in zip(weights[k], x)) for k in range(out_dim)]
                out.append({"id": "r%d" % i, "x": x, "y": y})
            return out

        train, test = rows(200), rows(50)
        for name, data in (("vec_train.jsonl", train), ("vec_test.jsonl", test)):
            with open(self.path(name), "w") as f:
                for row in data:
                    f.write(json.dumps(row) + "\n")

        self.ok("store", "create", "acme/vec", "--kind", "faast", "--output",
                "vector:%d" % out_dim)
        adapted = self.ok("adapt", "acme/vec", "--input", self.path("vec_train.jsonl"))
        self.assertEqual(adapted["accepted"], len(train))
        self.assertNotIn("accuracy", adapted)
        self.ok("compile", "acme/vec")
        predicted = self.ok("predict", "acme/vec", "--input", self.path("vec_test.jsonl"),
                            "--output", self.path("vec_pred.csv"))
        self.assertEqual(predicted["predicted"], len(test))
        predictions = read_csv(self.path("vec_pred.csv"))
        self.assertEqual(list(predictions[0]), ["id", "y0", "y1"])
        worst = max(abs(float(p["y%d" % k]) - row["y"][k])
                    for p, row in zip(predictions, test) for k in range(out_dim))
        self.assertLess(worst, 1e-2)


def main():
    global ADAPTCTL, ADAPTD
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--adaptctl", default=ADAPTCTL)
    parser.add_argument("--adaptd", default=ADAPTD)
    args, rest = parser.parse_known_args()
    ADAPTCTL, ADAPTD = args.adaptctl, args.adaptd
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
