"""Writes the three small real data sets dptune ships under data/ (developer-only; CI never runs it).

    python3 tools/export_datasets.py

Source: the copies bundled with scikit-learn (checked version below), written as plain CSV:
one header row (feature names, then `target`), one example per row, floats in Python's
shortest round-trip form, so the Rust loaders read exactly scikit-learn's arrays.
Classification targets are written as class names (breast-cancer: malignant/benign; digits:
0..9), regression targets as numbers. Re-running gives byte-identical files; the SHA-256 of
each file is printed for data/README.md.
"""

import csv
import hashlib
import os

import sklearn
import sklearn.datasets as ds

EXPECTED_SKLEARN = "1.9.1"
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")


def number(v):
    f = float(v)
    return str(int(f)) if f.is_integer() else repr(f)


def write(name, features, x, target):
    path = os.path.join(OUT, name + ".csv")
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow([f.replace(" ", "_") for f in features] + ["target"])
        for row, t in zip(x, target):
            w.writerow([number(v) for v in row] + [t])
    digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
    print(f"{name}.csv  {len(x)} rows x {len(features)} features  sha256 {digest}")


def main():
    if sklearn.__version__ != EXPECTED_SKLEARN:
        print(f"warning: scikit-learn {sklearn.__version__}, the files were made with {EXPECTED_SKLEARN}")
    b = ds.load_breast_cancer()
    write("breast-cancer", list(b.feature_names), b.data, [b.target_names[t] for t in b.target])
    d = ds.load_digits()
    write("digits", [f"pixel_{r}_{c}" for r in range(8) for c in range(8)], d.data, [str(t) for t in d.target])
    r = ds.load_diabetes(scaled=False)
    write("diabetes", list(r.feature_names), r.data, [number(t) for t in r.target])


if __name__ == "__main__":
    main()
