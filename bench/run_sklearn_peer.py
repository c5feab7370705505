#!/usr/bin/python3
"""adaptd's faast store against scikit-learn's RidgeClassifier on the same data.

Writes one seeded data set (bench/sklearn_peer.py gen), then runs, in alternating order for
each round, sklearn's fit + predict (bench/sklearn_peer.py fit) and the adaptd side
(faast_sklearn_bench: adapt + compile + predict) with the ridge solver (ridge = alpha, the same
problem) and the spectral solver. Every process gets the same OpenBLAS thread count. Prints the
median times, the median per-round speed-ups (sklearn time / adaptd time; goal ≥ 2) and the
rate at which the predicted labels agree (argmax of ridge on {0,1} targets equals argmax on
sklearn's {-1,1} targets); exits 1 when the ridge agreement is below --min-agreement.
Run with Debian's Python: /usr/bin/python3 bench/run_sklearn_peer.py --build-dir build-bench
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import sklearn_peer  # noqa: E402


def run_json(cmd, env):
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def agreement(a_path, b_path):
    a, b = np.fromfile(a_path, dtype=np.int32), np.fromfile(b_path, dtype=np.int32)
    if a.shape != b.shape:
        raise SystemExit(f"prediction files differ in length: {a_path} {b_path}")
    return float(np.mean(a == b))


def main():
    args = parse_args()
    if args.work:
        return compare(args, args.work)
    with tempfile.TemporaryDirectory(prefix="adaptd-sklearn-") as work:
        return compare(args, work)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build-dir", default=os.path.join(os.path.dirname(HERE), "build-bench"))
    p.add_argument("--work", default="", help="data folder kept afterwards (default: a temporary "
                   "one, removed)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--rows", type=int, default=16000)
    p.add_argument("--test-rows", type=int, default=4000)
    p.add_argument("--dim", type=int, default=2048)
    p.add_argument("--labels", type=int, default=26)
    p.add_argument("--alpha", type=float, default=1.0)
    p.add_argument("--batch", type=int, default=1024, help="rows per adaptd transaction")
    p.add_argument("--min-agreement", type=float, default=0.999)
    p.add_argument("--json", default="", help="write the results here")
    return p.parse_args()


def compare(args, work):
    meta = sklearn_peer.generate(work, args.rows, args.test_rows, args.dim, args.labels, seed=7,
                                 separation=0.08)
    env = dict(os.environ)
    env["OPENBLAS_NUM_THREADS"] = str(args.threads)
    env["OMP_NUM_THREADS"] = str(args.threads)
    bench = os.path.join(args.build_dir, "bench", "faast_sklearn_bench")
    sides = {
        "sklearn": [sys.executable, os.path.join(HERE, "sklearn_peer.py"), "fit", "--data", work,
                    "--alpha", str(args.alpha), "--update-rows", str(args.batch),
                    "--out", os.path.join(work, "sklearn_")],
        "ridge": [bench, "--data", work, "--solver", "ridge", "--ridge", str(args.alpha),
                  "--batch", str(args.batch), "--threads", str(args.threads),
                  "--out", os.path.join(work, "ridge_"), "--floor"],
        "spectral": [bench, "--data", work, "--solver", "spectral", "--batch", str(args.batch),
                     "--threads", str(args.threads), "--out", os.path.join(work, "spectral_")],
    }
    runs = {name: [] for name in sides}
    for r in range(args.rounds):
        order = list(sides) if r % 2 == 0 else list(reversed(list(sides)))
        for name in order:
            runs[name].append(run_json(sides[name], env))

    def med(name, key):
        return statistics.median(run[key] for run in runs[name])

    def speedup(name, key, sk_key):
        """Median over rounds of sklearn time / adaptd time (each round's runs are adjacent)."""
        return statistics.median(s[sk_key] / a[key] for s, a in zip(runs["sklearn"], runs[name]))

    agree = {s: {part: agreement(os.path.join(work, f"{s}_{part}.i32"),
                                 os.path.join(work, f"sklearn_{part}.i32"))
                 for part in ("train", "test")} for s in ("ridge", "spectral")}
    sk, ad = runs["sklearn"][-1], runs["ridge"][-1]
    sk_blas = sk["blas"][0] if sk["blas"] else {}
    print(f"# adaptd faast vs scikit-learn RidgeClassifier(alpha={args.alpha}, "
          f"fit_intercept=False)\n")
    print(f"data: {meta['rows']} training + {meta['test_rows']} held-out rows, "
          f"{meta['dim']} float32 features, {meta['labels']} labels (seed {meta['seed']}); "
          f"median of {args.rounds} rounds\n")
    print(f"- sklearn {sk['sklearn']} / numpy {sk['numpy']} ({sk['dtype']}): OpenBLAS "
          f"{sk_blas.get('version')} kernel {sk_blas.get('architecture')}, "
          f"{sk_blas.get('num_threads')} threads, OPENBLAS_CORETYPE={sk['openblas_coretype_env']}")
    m = ad["machine"]
    print(f"- adaptd (float64): OpenBLAS kernel {m['openblas_kernel']}, {m['openblas_threads']} "
          f"threads, OPENBLAS_CORETYPE={m['openblas_coretype_env']}; cpu {m['cpu']}, "
          f"{m['cores']} cores, {m['date']}\n")
    print("| step | sklearn s | adaptd ridge s | speed-up | adaptd spectral s | speed-up |")
    print("|---|---|---|---|---|---|")
    rows = [("fit (adapt + compile)", "fit_s", "fit_s"),
            ("  adapt: Txn Add + Commit", None, "adapt_s"),
            ("  compile", None, "compile_s"),
            (f"predict {meta['rows']} training rows", "predict_train_s", "predict_train_s"),
            (f"predict {meta['test_rows']} held-out rows", "predict_test_s", "predict_test_s"),
            (f"update: {args.batch} more rows (adapt + compile vs refit)", "update_s",
             "update_s")]
    table = []
    for label, sk_key, ad_key in rows:
        s = med("sklearn", sk_key) if sk_key else None
        a, b = med("ridge", ad_key), med("spectral", ad_key)
        ua = speedup("ridge", ad_key, sk_key) if sk_key else None
        ub = speedup("spectral", ad_key, sk_key) if sk_key else None
        cells = [label, f"{s:.3f}" if s else "", f"{a:.3f}", f"{ua:.2f}×" if ua else "",
                 f"{b:.3f}", f"{ub:.2f}×" if ub else ""]
        print("| " + " | ".join(cells) + " |")
        table.append({"step": label, "sklearn_s": s, "ridge_s": a, "spectral_s": b,
                      "ridge_speedup": ua, "spectral_speedup": ub})
    print("\n| labels compared with sklearn's | training rows | held-out rows |")
    print("|---|---|---|")
    for s in ("ridge", "spectral"):
        print(f"| adaptd {s} | {100 * agree[s]['train']:.2f}% | {100 * agree[s]['test']:.2f}% |")
    print(f"\nheld-out accuracy: sklearn {100 * med('sklearn', 'accuracy_test'):.2f}%, adaptd ridge "
          f"{100 * med('ridge', 'accuracy_test'):.2f}%, adaptd spectral "
          f"{100 * med('spectral', 'accuracy_test'):.2f}%")
    floor = {k: statistics.median(run["floor"][k] for run in runs["ridge"])
             for k in ("ssyrk_s", "dsyrk_s", "sgemm_s", "dgemm_s")}
    print(f"bare BLAS on the training matrix (same process as adaptd): Gram XᵀX ssyrk (float32, "
          f"as sklearn) {floor['ssyrk_s']:.3f} s, dsyrk (float64, as the store) "
          f"{floor['dsyrk_s']:.3f} s; scoring X·S sgemm {floor['sgemm_s']:.3f} s, dgemm "
          f"{floor['dgemm_s']:.3f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"benchmark": "faast_vs_sklearn", "meta": meta, "table": table,
                       "agreement": agree, "floor": floor, "runs": runs}, f, indent=2)
    worst = min(agree["ridge"].values())
    if worst < args.min_agreement:
        print(f"FAIL: ridge label agreement {worst:.4f} < {args.min_agreement}")
        return 1
    print(f"ridge label agreement {worst:.4f} >= {args.min_agreement}: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
