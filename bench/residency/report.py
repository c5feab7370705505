#!/usr/bin/env python3
"""Markdown tables from residency_bench JSON lines, for bench/RESULTS.md, "Residency".

Usage: bench/residency/report.py RUN.jsonl [RUN.jsonl ...]   (one file per store count)

Prints the tables (memory and disk, the warm footprint with its projection to 10^6 warm stores,
restarts, Predict latency, first Predict after a restart, Adapt by tier) with one row per store
count and setting, then how the measured sizes stand against the issue's goals. It states only
what the files hold; the projection is labelled as one.
"""
import json
import sys

MIB = 1 << 20


def load(paths):
    runs = []
    for path in paths:
        with open(path) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        if not rows:
            sys.exit(f"{path}: no measurements")
        runs.append(rows)
    return runs


def pick(rows, measurement, **match):
    return [r for r in rows if r["measurement"] == measurement
            and all(r.get(k) == v for k, v in match.items())]


def one(rows, measurement, **match):
    found = pick(rows, measurement, **match)
    return found[0] if found else None


def mib(value):
    return f"{value / MIB:,.1f}"


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def rss(r):
    return f"{mib(r['rss_bytes'])} ({mib(r['rss_anon_bytes'])} / {mib(r['rss_file_bytes'])})"


def setting(r):
    if r["mode"] == "no_budget":
        return "no budget"
    return f"budget {mib(r['budget_bytes'])} MiB"


def memory_table(runs):
    rows = []
    for run in runs:
        setup = one(run, "setup")
        rows.append([f"{setup['stores']:,}", "after creating (all hot)", rss(setup),
                     mib(setup["memory_bytes"]), f"{setup['stores']:,} hot", "",
                     mib(setup["disk_bytes"])])
        for r in pick(run, "restart", after="SIGTERM") + pick(run, "memory"):
            what = {"restart": "restarted (SIGTERM), one Predict",
                    "read": "every store read once",
                    "whole": "every store loaded whole (ExportStore)"}[
                        r.get("state", r["measurement"])]
            rows.append([f"{r['stores']:,}", f"{setting(r)}: {what}", rss(r),
                         mib(r["memory_bytes"]),
                         f"{r['stores_hot']:,.0f} hot, {r['stores_warm']:,.0f} warm, "
                         f"{r['stores_cold']:,.0f} cold",
                         f"{r['evictions_total']:,.0f}", mib(r["disk_bytes"])])
    return table(["N", "state", "RSS MiB (anon / file)", "adaptd_memory_bytes MiB", "tiers",
                  "evictions", "data dir MiB (du)"], rows)


def kib(value):
    return f"{value / 1024:,.1f}"


def warm_table(runs):
    rows = []
    for run in runs:
        for r in pick(run, "warm"):
            reported = r.get("warm_memory_bytes")
            rows.append([f"{r['stores']:,}", setting(r),
                         f"{r['stores_warm']:,.0f} warm, {r['stores_hot']:,.0f} hot, "
                         f"{r['stores_cold']:,.0f} cold",
                         mib(r["rss_anon_bytes"]), mib(r["rss_file_bytes"]),
                         mib(r["held_hot_bytes"]),
                         kib(r["anon_less_hot_per_warm_bytes"]),
                         kib(r["anon_growth_per_warm_bytes"]),
                         f"{kib(reported['mean'])} ({reported['sampled']})" if reported else "",
                         mib(r["held_warm_bytes"])])
    return table(["N", "setting", "tiers", "heap (anon) MiB", "file-backed MiB",
                  "hot stores hold MiB", "heap less hot, per warm store KiB",
                  "heap growth per store made warm KiB",
                  "GetStore memory_bytes of a warm store KiB (sampled)",
                  "warm stores hold MiB (memory_bytes)"], rows)


def projection(runs):
    """10^6 warm stores at each measured rate: arithmetic on the measured N, not a measurement."""
    rows = []
    for run in runs:
        for r in pick(run, "warm"):
            rate = {k: r[k] for k in ("anon_less_hot_per_warm_bytes", "anon_growth_per_warm_bytes")}
            rows.append([f"{r['stores']:,}", setting(r)] + [
                f"{kib(v)} KiB → {v * 1e6 / (1 << 30):,.1f} GiB" for v in rate.values()])
    return table(["N", "setting", "heap less hot, per warm store, × 10^6",
                  "heap growth per store made warm, × 10^6"], rows)


def restart_table(runs):
    rows = []
    for run in runs:
        for r in pick(run, "restart"):
            rows.append([f"{r['stores']:,}", setting(r), r["after"],
                         f"{r['shutdown_s']:.2f}" if r["after"] == "SIGTERM" else "",
                         f"{r['ready_s']:.3f}", f"{r['first_predict_s']:.3f}",
                         f"{r['first_predict_ms']:.2f} ({r['first_predict_tier']})",
                         f"{r['stores_hot']:,.0f} / {r['stores_warm']:,.0f}",
                         f"{r['auto_compiles_total']:,.0f}"])
    return table(["N", "setting", "stopped by", "SIGTERM to exit s", "start to SERVING s",
                  "start to first Predict s", "that Predict ms (tier)", "hot / warm after it",
                  "auto compiles since start"], rows)


def latency_table(runs):
    rows = []
    for run in runs:
        for r in pick(run, "predict"):
            ping = one(run, "noop", mode=r["mode"], selection=r["selection"], rpc="Ping")
            get = one(run, "noop", mode=r["mode"], selection=r["selection"], rpc="GetStore")
            rows.append([f"{r['stores']:,}", setting(r), r["selection"], r["tier"],
                         f"{r['count']:,}", f"{r['p50_ms']:.3f}", f"{r['p99_ms']:.3f}",
                         f"{ping['p50_ms']:.3f} / {ping['p99_ms']:.3f}",
                         f"{get['p50_ms']:.3f} / {get['p99_ms']:.3f}",
                         f"{r['p50_to_ping']:.2f} / {r['p99_to_ping']:.2f}"])
    return table(["N", "setting", "stores chosen from", "tier found", "calls", "Predict p50 ms",
                  "Predict p99 ms", "Ping p50 / p99 ms", "GetStore p50 / p99 ms",
                  "Predict ÷ Ping p50 / p99"], rows)


def first_predict_table(runs):
    rows = []
    for run in runs:
        for r in pick(run, "first_predict"):
            became = ", ".join(f"{n} {t}" for t, n in sorted(r.get("tiers_after", {}).items()))
            rows.append([f"{r['stores']:,}", setting(r), r["after"], r["tier"], r["count"],
                         f"{r['p50_ms']:.2f}", f"{r['p99_ms']:.2f}", f"{r['max_ms']:.2f}",
                         f"{r['server_load_mean_ms']:.2f}", became])
    return table(["N", "setting", "after", "tier found", "stores", "p50 ms", "p99 ms", "max ms",
                  "server load mean ms", "those stores after"], rows)


def adapt_table(runs):
    rows = []
    for run in runs:
        for r in pick(run, "adapt"):
            when = {"loaded": "every store loaded", "restarted": "SIGKILL restart"}[r["when"]]
            rows.append([f"{r['stores']:,}", setting(r), when, r["tier"], r["count"],
                         f"{r['p50_ms']:.2f}", f"{r['p99_ms']:.2f}", f"{r['max_ms']:.2f}"])
    return table(["N", "setting", "after", "tier found", "Adapts", "p50 ms", "p99 ms", "max ms"],
                 rows)


def goals(runs):
    lines = []
    for run in runs:
        n = run[0]["stores"]
        ready = max(r["first_predict_s"] for r in pick(run, "restart"))
        cold = [r for r in pick(run, "first_predict", tier="cold")]
        cold_p99 = max(r["p99_ms"] for r in cold) if cold else None
        hot = {r["mode"]: r for r in pick(run, "predict", selection="loaded", tier="hot")}
        ratio = (hot["budget"]["p99_ms"] / hot["no_budget"]["p99_ms"]
                 if "budget" in hot and "no_budget" in hot else None)
        mix = {r["tier"]: r for r in pick(run, "predict", mode="budget", selection="any")}
        warm = (f"; warm Predict p99 {mix['warm']['p99_ms']:.3f} ms against hot "
                f"{mix['hot']['p99_ms']:.3f} ms in the same block"
                if "warm" in mix and "hot" in mix else "; no warm Predict in the mixed block")
        lines.append(
            f"- N = {n:,}: start to first Predict at most {ready:.2f} s (goal ≤ 5 s: "
            f"{'met' if ready <= 5 else 'not met'}); cold first Predict p99 at most "
            + (f"{cold_p99:.2f} ms (goal < 20 ms: {'met' if cold_p99 < 20 else 'not met'})"
               if cold_p99 is not None else "(no cold store met)")
            + "; hot Predict p99 under the budget "
            + (f"{ratio:.2f}× that without (goal within 10%: "
               f"{'met' if ratio <= 1.10 else 'not met'})" if ratio is not None else "(missing)")
            + warm)
    return "\n".join(lines)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    runs = load(sys.argv[1:])
    print("Memory and disk:\n")
    print(memory_table(runs))
    print("\nWith every store read once after a restart (reads load only the read-out):\n")
    print(warm_table(runs))
    print("\nProjection to 10^6 warm stores from the measured N (arithmetic, not a measurement):\n")
    print(projection(runs))
    print("\nRestart to ready:\n")
    print(restart_table(runs))
    print("\nPredict latency (one row, one client):\n")
    print(latency_table(runs))
    print("\nFirst Predict to each of a sample of stores after a restart:\n")
    print(first_predict_table(runs))
    print("\nAdapt of one call's examples, by the tier the store was in:\n")
    print(adapt_table(runs))
    print("\nAgainst the goals, at the sizes measured:\n")
    print(goals(runs))


if __name__ == "__main__":
    main()
