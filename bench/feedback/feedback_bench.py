#!/usr/bin/env python3
"""Feedback against Adapt with the same examples (docs/FEEDBACK.md; issue 42's figures).

For each case, two faast label stores of the same spec on one fresh adaptd: `fb` has a
feedback window, `ad` none. Each round draws n new inputs and their labels; `fb` predicts
them (untimed) to get the prediction ids; then, in the round's order (alternated, so neither
side always runs first), the same n examples go to `fb` as Feedback calls of `batch` items
(id and label) and to `ad` as Adapt calls of `batch` examples (input, label and an example
id, as the Python client sends by default). Timed from the first call to the last answer,
requests built beforehand (so client-side conversion is not timed); each call is durable
before it answers, as always.

Bytes on the wire: the serialized request messages plus gRPC's 5-byte message prefix, per
example (HTTP/2 frame headers and the headers of each call come on top, the same on both
sides per call).

Cases: text inputs through a sentence_bert encoder (all-MiniLM-L6-v2, d = 384; Feedback skips
the encoder, Adapt runs it), short (6-13 words) and long (40-79 words, half as many per
round), and vector inputs at d = 1,024 (identity encoder).

Usage: /usr/bin/python3 bench/feedback/feedback_bench.py --adaptd build/server/adaptd \
         --model build/models/all-MiniLM-L6-v2 [--rounds 5]
with PYTHONPATH=build/client/python:client/python (the generated stubs and the client).
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from adaptd_client import Client
from adaptd_client._stubs import pb

TENANT = "bench"
LABELS = ["billing", "shipping", "refund", "account", "technical"]
WORDS = ("my order parcel refund invoice charge password login app crash late missing card "
         "account email address delivery broken screen update payment twice help please "
         "where when why cannot still again week today number tracking box wrong").split()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(binary, work, model):
    config = os.path.join(work, "encoders.json")
    with open(config, "w") as f:
        json.dump({"encoders": [{"name": "identity", "type": "identity"},
                                {"name": "minilm", "type": "sentence_bert",
                                 "model_path": os.path.abspath(model)}]}, f)
    address = "127.0.0.1:%d" % free_port()
    log = open(os.path.join(work, "adaptd.log"), "wb")
    process = subprocess.Popen([binary, "--listen", address, "--metrics-listen", "off",
                                "--data-dir", os.path.join(work, "data"), "--config", config],
                               stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit("adaptd exited: " + open(log.name, errors="replace").read())
        with Client(address, timeout=1.0) as probe:
            try:
                if probe.health() == "SERVING":
                    return process, address
            except Exception:  # not serving yet
                pass
        time.sleep(0.2)
    process.kill()
    sys.exit("adaptd did not serve within 60 s")


def texts(rng, n, words=(6, 14)):
    """n texts of words[0] to words[1]-1 words (about 6 characters each)."""
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(*words)))) for _ in range(n)]


def vectors(rng, n, dim):
    return rng.normal(size=(n, dim)).astype(np.float32)


def to_input(value):
    if isinstance(value, str):
        return pb.Input(text=value)
    return pb.Input(vector=pb.FloatVector(values=value.tolist()))


def wire_bytes(requests):
    return sum(r.ByteSize() + 5 for r in requests)


def run_case(client, name, encoder, make_inputs, n, batch, rounds, rng):
    stub = client._stub
    for store, window in (("fb", n), ("ad", 0)):
        client.create_store(TENANT, "%s-%s" % (name, store), kind="faast", encoder=encoder,
                            output="labels", feedback_window=window, ridge=1.0,
                            auto_compile_every=0, auto_compile_delay_ms=0)
        seed = make_inputs(rng, 2 * len(LABELS))
        client.adapt(TENANT, "%s-%s" % (name, store), seed, labels=LABELS * 2)
        client.compile(TENANT, "%s-%s" % (name, store))
    rows = []
    for r in range(rounds):
        inputs = make_inputs(rng, n)
        labels = [LABELS[int(i)] for i in rng.integers(0, len(LABELS), size=n)]
        ids = []
        for start in range(0, n, batch):
            _, chunk = client.predict_with_ids(TENANT, name + "-fb", inputs[start:start + batch])
            ids.extend(chunk)
        feedback = [pb.FeedbackRequest(tenant=TENANT, store=name + "-fb", items=[
            pb.FeedbackItem(prediction_id=ids[i], label=labels[i])
            for i in range(start, min(n, start + batch))]) for start in range(0, n, batch)]
        adapt = [pb.AdaptRequest(tenant=TENANT, store=name + "-ad", examples=[
            pb.Example(input=to_input(inputs[i]), label=labels[i], id="r%d-%d" % (r, i))
            for i in range(start, min(n, start + batch))]) for start in range(0, n, batch)]

        def time_feedback():
            begin = time.perf_counter()
            for request in feedback:
                answer = stub.Feedback(request, timeout=600)
                assert answer.accepted == len(request.items) and answer.duplicates == 0
            return time.perf_counter() - begin

        def time_adapt():
            begin = time.perf_counter()
            for request in adapt:
                answer = stub.Adapt(iter([request]), timeout=600)
                assert answer.accepted == len(request.examples)
            return time.perf_counter() - begin

        if r % 2 == 0:
            fb_s, ad_s = time_feedback(), time_adapt()
        else:
            ad_s, fb_s = time_adapt(), time_feedback()
        rows.append({"feedback_per_s": n / fb_s, "adapt_per_s": n / ad_s,
                     "feedback_bytes": wire_bytes(feedback) / n,
                     "adapt_bytes": wire_bytes(adapt) / n})
        print("  %s round %d: Feedback %.0f ex/s (%.1f B/ex), Adapt %.0f ex/s (%.1f B/ex), "
              "%.2fx" % (name, r + 1, rows[-1]["feedback_per_s"], rows[-1]["feedback_bytes"],
                         rows[-1]["adapt_per_s"], rows[-1]["adapt_bytes"],
                         rows[-1]["feedback_per_s"] / rows[-1]["adapt_per_s"]), flush=True)
    info = [client.get_store(TENANT, "%s-%s" % (name, s))["examples"] for s in ("fb", "ad")]
    assert info[0] == info[1], "both stores learned the same number of examples: %s" % info
    return rows


def summary(name, rows):
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    ratios = [r["feedback_per_s"] / r["adapt_per_s"] for r in rows]
    return ("| %s | %.1f | %.1f | %.1fx | %.0f | %.0f | **%.2fx** | %s |" % (
        name, med["feedback_bytes"], med["adapt_bytes"],
        med["adapt_bytes"] / med["feedback_bytes"], med["feedback_per_s"], med["adapt_per_s"],
        statistics.median(ratios), ", ".join("%.2f" % x for x in ratios)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--adaptd", required=True)
    parser.add_argument("--model", required=True, help="the all-MiniLM-L6-v2 folder")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--texts", type=int, default=1000, help="texts per round")
    parser.add_argument("--vectors", type=int, default=4000, help="d=1024 vectors per round")
    parser.add_argument("--batch", type=int, default=500, help="items or examples per call")
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory(prefix="adaptd-feedback-bench-") as work:
        process, address = start_server(args.adaptd, work, args.model)
        try:
            with Client(address, timeout=600) as client:
                text = run_case(client, "text", "minilm", texts, args.texts, args.batch,
                                args.rounds, rng)
                long_text = run_case(client, "text-long", "minilm",
                                     lambda g, n: texts(g, n, (40, 80)), args.texts // 2,
                                     args.batch, args.rounds, rng)
                vec = run_case(client, "d1024", "identity", lambda g, n: vectors(g, n, 1024),
                               args.vectors, args.batch, args.rounds, rng)
        finally:
            process.terminate()
            process.wait()
    print()
    print("| inputs | Feedback B/example | Adapt B/example | Adapt / Feedback bytes | "
          "Feedback ex/s | Adapt ex/s | Feedback / Adapt ex/s | each round |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    print(summary("texts of 6-13 words, sentence_bert (d = 384)", text))
    print(summary("texts of 40-79 words, sentence_bert", long_text))
    print(summary("vectors, d = 1,024", vec))


if __name__ == "__main__":
    main()
