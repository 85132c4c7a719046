#!/usr/bin/env python3
"""One DP-SGD training run of a logistic regression on UCI Adult, for `dptune tune` (numpy only).

dptune runs this once per candidate and hands it, in its environment:
  DPTUNE_HP_LEARNING_RATE, DPTUNE_HP_CLIP   the hyperparameters searched ([space] of search.toml)
  DPTUNE_NOISE_MULTIPLIER                   DP-SGD's sigma (calibrated by dptune to the budget)
  DPTUNE_SAMPLING_RATE, DPTUNE_STEPS        Poisson lots: each record joins each lot with this rate
  DPTUNE_SEED, DPTUNE_OUTPUT_DIR            this run's seed and its fresh output directory
(the same in the JSON file $DPTUNE_RUN_FILE). It prints its score as the last line, one JSON
object: {"score": <accuracy on the validation half of adult.test>}. dptune adds the noise that
makes that score private ([score] in search.toml) and accounts for it.

Privacy: the training records (adult.data) are protected by DP-SGD; the validation records by
dptune's noise on the score. The features are scaled by public constants and one-hot encoded with
the category lists of adult.names (public documentation), never with statistics of the data.
"""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.environ.get("DPTUNE_DATA") or os.path.join(HERE, "..", "..", "data", "cache")
NUMERIC = {"age": 100.0, "education-num": 16.0, "hours-per-week": 100.0}  # public scales
LOG_NUMERIC = {"capital-gain": 12.0, "capital-loss": 9.0}  # log1p, public scales
COLUMNS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
           "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
           "hours-per-week", "native-country"]


def categories():
    """The category list of each discrete attribute, from adult.names."""
    out = {}
    with open(os.path.join(DATA, "adult", "adult.names")) as f:
        for line in f:
            name, sep, rest = line.partition(":")
            if sep and name in COLUMNS and "continuous" not in rest:
                out[name] = [c.strip() for c in rest.strip().rstrip(".").split(",")]
    return out


def load(name, cats):
    """Features (with a constant 1) and 0/1 labels of adult.data or adult.test."""
    rows, labels = [], []
    with open(os.path.join(DATA, "adult", name)) as f:
        for line in f:
            parts = [p.strip() for p in line.strip().rstrip(".").split(",")]
            if len(parts) != 15:
                continue  # the test file's first line, blank lines
            rec = dict(zip(COLUMNS, parts[:14]))
            x = [1.0]
            x += [float(rec[c]) / s for c, s in NUMERIC.items()]
            x += [np.log1p(float(rec[c])) / s for c, s in LOG_NUMERIC.items()]
            for c, values in cats.items():
                x += [1.0 if rec[c] == v else 0.0 for v in values]  # "?" is all zeros
            rows.append(x)
            labels.append(1.0 if parts[14].startswith(">50K") else 0.0)
    return np.array(rows), np.array(labels)


def main():
    env = os.environ
    lr = float(env["DPTUNE_HP_LEARNING_RATE"])
    clip = float(env["DPTUNE_HP_CLIP"])
    sigma = float(env["DPTUNE_NOISE_MULTIPLIER"])
    q = float(env["DPTUNE_SAMPLING_RATE"])
    steps = int(env["DPTUNE_STEPS"])
    rng = np.random.default_rng(int(env["DPTUNE_SEED"]))

    cats = categories()
    x, y = load("adult.data", cats)
    x_test, y_test = load("adult.test", cats)
    half = len(y_test) // 2
    x_val, y_val = x_test[:half], y_test[:half]  # the validation records dptune's score noise protects

    n, d = x.shape
    w = np.zeros(d)
    expected_lot = q * n
    for _ in range(steps):
        lot = rng.random(n) < q  # Poisson sampling
        xb, yb = x[lot], y[lot]
        p = 1.0 / (1.0 + np.exp(-(xb @ w)))
        g = (p - yb)[:, None] * xb  # per-example gradients of the logistic loss
        norms = np.linalg.norm(g, axis=1)
        g *= np.minimum(1.0, clip / np.maximum(norms, 1e-12))[:, None]
        noisy = g.sum(axis=0) + rng.normal(0.0, sigma * clip, size=d)
        w -= lr * noisy / expected_lot
    np.save(os.path.join(env["DPTUNE_OUTPUT_DIR"], "weights.npy"), w)
    accuracy = float(np.mean(((x_val @ w) > 0) == (y_val == 1)))
    print(json.dumps({"score": accuracy}))


if __name__ == "__main__":
    sys.exit(main())
