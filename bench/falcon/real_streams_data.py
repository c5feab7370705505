#!/usr/bin/env python3
"""Real labelled streams for the Falcon default study (bench/falcon/real_streams_peers.py).

Usage: real_streams_data.py DIR [--seed=7] [--only=NAME,NAME]

Writes DIR/NAME.npz for each data set below (x: n x (d+1) float32, the last column the bias 1;
y: n label strings) and DIR/manifest.json (source package and version, n, d, classes, seed).
Nothing is downloaded: every set ships inside an installed package.

| NAME          | source (package, version when this study ran)         | n     | classes |
|---------------|-------------------------------------------------------|-------|---------|
| letter        | Debian r-cran-mlbench 2.1-3 (R 4.2.2): LetterRecognition | 20000 | 26   |
| shuttle       | r-cran-mlbench: Shuttle (Statlog shuttle)             | 58000 | 7       |
| satellite     | r-cran-mlbench: Satellite (Statlog Landsat)           | 6435  | 6       |
| dna           | r-cran-mlbench: DNA (StatLog splice junctions)        | 3186  | 3       |
| vehicle       | r-cran-mlbench: Vehicle                               | 846   | 4       |
| vowel         | r-cran-mlbench: Vowel (V1, the speaker, one-hot)       | 990   | 11      |
| glass         | r-cran-mlbench: Glass                                 | 214   | 6       |
| soybean       | r-cran-mlbench: Soybean (NA = no category set)        | 683   | 19      |
| segment       | PyPI river 0.26.1: datasets.ImageSegments             | 2310  | 7       |
| digits        | PyPI scikit-learn 1.9.1: load_digits                  | 1797  | 10      |
| wine          | scikit-learn: load_wine                               | 178   | 3       |
| iris          | scikit-learn: load_iris                               | 150   | 3       |
| breast_cancer | scikit-learn: load_breast_cancer                      | 569   | 2       |

The manifest records the versions actually used. The mlbench sets need Rscript with mlbench
(`apt-get install -y --no-install-recommends r-cran-mlbench`); the segment set needs river.

Preparation, the same for every set:
- categorical features (R factors; a two-level factor counts as one 0/1 column) one-hot, a
  missing value setting no column;
- every feature column min-max scaled to [-1, 1] with the minimum and maximum of the WHOLE set
  (not of a prefix: a streaming user would not know them, but the study compares learners, all
  of which see the same features); a constant column becomes 0;
- a constant bias column 1 appended;
- rows shuffled with numpy.random.default_rng(seed).permutation (many sets are sorted by
  class), the same seed for every set.
"""
import csv
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

# name -> (R data set, label column)
MLBENCH = {
    "letter": ("LetterRecognition", "lettr"),
    "shuttle": ("Shuttle", "Class"),
    "satellite": ("Satellite", "classes"),
    "dna": ("DNA", "Class"),
    "vehicle": ("Vehicle", "Class"),
    "vowel": ("Vowel", "Class"),
    "glass": ("Glass", "Type"),
    "soybean": ("Soybean", "Class"),
}
SKLEARN = {
    "digits": "load_digits",
    "wine": "load_wine",
    "iris": "load_iris",
    "breast_cancer": "load_breast_cancer",
}
RIVER = {"segment": "ImageSegments"}
ORDER = ["letter", "shuttle", "satellite", "dna", "segment", "digits", "vehicle", "vowel",
         "soybean", "glass", "wine", "breast_cancer", "iris"]

# Exports one mlbench data set: NAME.csv (values, factors as their level names, NA empty) and
# NAME.kinds (one line per column: "factor" or "numeric").
R_EXPORT = r"""
args <- commandArgs(trailingOnly = TRUE)
suppressPackageStartupMessages(library(mlbench))
e <- new.env()
data(list = args[1], package = "mlbench", envir = e)
x <- get(args[1], envir = e)
kinds <- vapply(x, function(c) if (is.factor(c)) "factor" else "numeric", "")
writeLines(kinds, file.path(args[2], paste0(args[1], ".kinds")))
for (i in seq_along(x)) if (is.factor(x[[i]])) x[[i]] <- as.character(x[[i]])
write.csv(x, file.path(args[2], paste0(args[1], ".csv")), row.names = FALSE, na = "")
cat(as.character(packageVersion("mlbench")), R.version.string, sep = "\n")
"""


def encode(columns, kinds):
    """Feature columns (lists of strings) and their kinds -> n x d float64 matrix."""
    out = []
    for values, kind in zip(columns, kinds):
        if kind == "numeric":
            out.append(np.array([float(v) if v not in ("", "NA") else np.nan for v in values]))
            continue
        levels = sorted({v for v in values if v not in ("", "NA")})
        if len(levels) <= 2:  # one 0/1 column (a missing value: 0)
            out.append(np.array([1.0 if v == levels[-1] else 0.0 for v in values]))
            continue
        for level in levels:
            out.append(np.array([1.0 if v == level else 0.0 for v in values]))
    x = np.stack(out, axis=1)
    if np.isnan(x).any():  # numeric NA: the column's mean (none of the chosen sets has any)
        means = np.nanmean(x, axis=0)
        x = np.where(np.isnan(x), means[None, :], x)
    return x


def finish(name, x, y, seed, source, version, out):
    """Scale to [-1, 1], add the bias, shuffle, save; returns the manifest entry."""
    x = np.asarray(x, dtype=np.float64)
    lo, hi = x.min(axis=0), x.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    scaled = np.where(hi > lo, 2.0 * (x - lo) / span - 1.0, 0.0)
    x = np.concatenate([scaled, np.ones((x.shape[0], 1))], axis=1).astype(np.float32)
    y = np.asarray([str(v) for v in y])
    order = np.random.default_rng(seed).permutation(len(y))
    x, y = x[order], y[order]
    np.savez(os.path.join(out, f"{name}.npz"), x=x, y=y)
    entry = {"name": name, "source": source, "version": version, "n": int(x.shape[0]),
             "d": int(x.shape[1] - 1), "d_with_bias": int(x.shape[1]),
             "classes": int(len(set(y.tolist()))), "seed": seed}
    print(json.dumps({"bench": "falcon_real_data", **entry}), flush=True)
    return entry


def load_mlbench(name, tmp):
    dataset, label = MLBENCH[name]
    proc = subprocess.run(["Rscript", "-e", R_EXPORT, dataset, tmp], check=True,
                          capture_output=True, text=True)
    mlbench_version, r_version = proc.stdout.strip().splitlines()[:2]
    kinds = open(os.path.join(tmp, f"{dataset}.kinds")).read().split()
    with open(os.path.join(tmp, f"{dataset}.csv"), newline="") as f:
        rows = list(csv.reader(f))
    header, rows = rows[0], rows[1:]
    columns = list(zip(*rows))
    at = header.index(label)
    feats = [c for i, c in enumerate(columns) if i != at]
    fkinds = [k for i, k in enumerate(kinds) if i != at]
    return (encode(feats, fkinds), list(columns[at]),
            f"r-cran-mlbench::{dataset}", f"mlbench {mlbench_version}; {r_version}")


def load_sklearn(name):
    import sklearn
    from sklearn import datasets
    bunch = getattr(datasets, SKLEARN[name])()
    y = np.asarray(bunch.target_names)[bunch.target] if hasattr(bunch, "target_names") \
        else bunch.target
    return (bunch.data, list(y), f"scikit-learn::{SKLEARN[name]}",
            f"scikit-learn {sklearn.__version__}")


def load_river(name):
    import river
    from river import datasets
    rows = list(getattr(datasets, RIVER[name])())
    keys = sorted(rows[0][0])
    x = np.array([[float(r[0][k]) for k in keys] for r in rows])
    return x, [r[1] for r in rows], f"river::datasets.{RIVER[name]}", f"river {river.__version__}"


def main(argv):
    if len(argv) < 2 or argv[1].startswith("--"):
        sys.stderr.write(__doc__)
        return 2
    out = argv[1]
    opts = dict(a[2:].split("=", 1) for a in argv[2:] if a.startswith("--") and "=" in a)
    seed = int(opts.get("seed", 7))
    names = opts["only"].split(",") if "only" in opts else ORDER
    os.makedirs(out, exist_ok=True)
    manifest_path = os.path.join(out, "manifest.json")
    manifest = json.load(open(manifest_path)) if os.path.exists(manifest_path) else {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            if name in MLBENCH:
                x, y, source, version = load_mlbench(name, tmp)
            elif name in SKLEARN:
                x, y, source, version = load_sklearn(name)
            elif name in RIVER:
                x, y, source, version = load_river(name)
            else:
                raise SystemExit(f"unknown data set {name}")
            manifest[name] = finish(name, x, y, seed, source, version, out)
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
