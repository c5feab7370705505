#!/usr/bin/env python3
"""Renders durable_log_bench.py's JSON as the markdown tables of bench/RESULTS.md's section
"The durable log in etcd against the local log".

Usage: /usr/bin/python3 bench/durable_log/render.py RESULTS.json
"""

import json
import statistics
import sys

SIDES = ("local", "etcd")
NAMES = {"local": "local WAL, fsync on (default)", "etcd": "etcd (3 members) + SeaweedFS"}


def load(values):
    return " ".join("%.2f" % v for v in values)


def mib(n):
    return "%.1f" % (n / 2**20)


def ack(rows, lines):
    lines += ["| round | durability | Adapt p50 ms | Adapt p99 ms | examples/s | errors | "
              "load before | load after |", "|---:|---|---:|---:|---:|---:|---|---|"]
    for r in rows:
        lines.append("| %d | %s | %.1f | %.1f | %.0f | %d | %s | %s |" % (
            r["round"], r["mode"], r["adapt_p50_ms"], r["adapt_p99_ms"],
            r["adapt_examples_per_s"], r["adapt_errors"], load(r["load_before"]),
            load(r["load_after"])))
    med = {m: {k: statistics.median(r[k] for r in rows if r["mode"] == m)
               for k in ("adapt_p50_ms", "adapt_p99_ms", "adapt_examples_per_s")} for m in SIDES}
    lines += ["", "| figure | local (median) | etcd (median) | etcd / local | each round's "
              "etcd / local |", "|---|---:|---:|---:|---|"]
    rounds = sorted({r["round"] for r in rows})
    for key, name, f in (("adapt_p50_ms", "Adapt p50 ms", "%.1f"),
                         ("adapt_p99_ms", "Adapt p99 ms", "%.1f"),
                         ("adapt_examples_per_s", "examples/s", "%.0f")):
        each = []
        for n in rounds:
            x = {r["mode"]: r[key] for r in rows if r["round"] == n}
            if x.get("local"):
                each.append("%.2f" % (x["etcd"] / x["local"]))
        lines.append("| %s | %s | %s | %.2f | %s |" % (
            name, f % med["local"][key], f % med["etcd"][key],
            med["etcd"][key] / med["local"][key], ", ".join(each)))


def restore(part, lines):
    setup = part["setup"]
    lines += ["| durability | filling the stores (s) | keys in etcd | objects |",
              "|---|---:|---:|---:|"]
    for m in SIDES:
        s = setup[m]
        lines.append("| %s | %.1f | %s | %s |" % (m, s["populate_s"], s.get("etcd_keys", "-"),
                                                 s.get("objects", "-")))
    lines += ["", "| round | stopped by | durability | data directory | SERVING after (s) | "
              "first Predict answered after (s) | store | then SIGTERM took (s) | load before |",
              "|---:|---|---|---|---:|---:|---|---:|---|"]
    for r in part["rounds"]:
        lines.append("| %d | %s | %s | %s | %.2f | %.2f | %s | %.2f | %s |" % (
            r["round"], r["after"], r["mode"], "its own" if r["mode"] == "local" else "empty",
            r["serving_s"], r["predict_s"], r["store"], r["stop_s"], load(r["load_before"])))


def steady(part, lines):
    lines += ["| t (s) | Adapt calls | errors | etcd dbSize MiB (max of 3) | dbSizeInUse MiB | "
              "revision | keys under the prefix | of them log records | objects | object MiB | "
              "load |", "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for s in part["samples"]:
        lines.append("| %.0f | %d | %d | %s | %s | %d | %d | %d | %d | %s | %s |" % (
            s["t_s"], s["calls"], s["errors"], mib(max(s["db_size"])), mib(max(s["db_in_use"])),
            s["revision"], s["keys"], s["log_keys"], s["objects"], mib(s["object_bytes"]),
            load(s["load"])))
    a = part["after_stop_and_compaction"]
    lines += ["", "Adapt calls acknowledged: %d (p50 %.1f ms, p99 %.1f ms), errors %d%s. After "
              "adaptd's SIGTERM and a compaction of etcd's history to revision %d (by the "
              "benchmark): dbSize %s MiB, dbSizeInUse %s MiB (max of 3), %d keys, %d objects." % (
                  part["calls"], part["p50_ms"], part["p99_ms"], part["errors"],
                  (" (first: %s)" % part["first_error"]) if part["first_error"] else "",
                  a["revision"], mib(max(a["db_size"])), mib(max(a["db_in_use"])), a["keys"],
                  a["objects"])]


def main():
    results = json.load(open(sys.argv[1]))
    lines = ["Run %s to %s on %s (%d cores); adaptd built %s, the tree at %s." % (
        results["started"], results.get("finished", "?"), results["cpu"], results["cores"],
        results.get("adaptd_built", "?"), results.get("commit", "?")), ""]
    if "ack" in results:
        lines += ["### 1. Adapt acknowledgment latency at %d clients" % results["args"]["clients"],
                  ""]
        ack(results["ack"], lines)
        lines.append("")
    if "restore" in results:
        lines += ["### 2. Restore at %d stores" % results["args"]["stores"], ""]
        restore(results["restore"], lines)
        lines.append("")
    if "steady" in results:
        lines += ["### 3. etcd and the bucket under a steady load", ""]
        steady(results["steady"], lines)
        lines.append("")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
