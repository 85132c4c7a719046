"""DP-SGD in numpy (logistic regression on data/breast-cancer.csv), its learning rate and
clipping norm tuned privately by Papernot–Steinke repeat-and-select through dptune.

Each run trains on the training part by DP-SGD (Poisson lots, per-example clipping, Gaussian
noise) and releases its validation accuracy with Gaussian noise; the tuner's guarantee covers
the release of the chosen hyperparameters and their score, counting both the training and
the score release of every run. Usage: python examples/python/dpsgd_numpy.py [seed]
"""

import os
import sys

import numpy as np

from dptune.accounting import (ComposedDpEvent, GaussianDpEvent, PoissonSampledDpEvent, RdpAccountant,
                               SelfComposedDpEvent)
from dptune.tuners import papernot_steinke

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "data", "breast-cancer.csv")


def load(seed):
    with open(DATA) as f:
        header = f.readline().strip().split(",")
        rows = [line.strip().split(",") for line in f if line.strip()]
    y = np.array([1.0 if r[-1] == "malignant" else 0.0 for r in rows])
    x = np.array([[float(v) for v in r[:-1]] for r in rows])
    rng = np.random.default_rng(seed)  # a public split
    idx = rng.permutation(len(y))
    n_val = 114
    val, train = idx[:n_val], idx[n_val:]
    mu, sd = x[train].mean(0), x[train].std(0) + 1e-12  # (a public standardisation, for brevity)
    x = (x - mu) / sd
    x = np.hstack([x, np.ones((len(y), 1))])
    return (x[train], y[train]), (x[val], y[val]), header


# DP-SGD's fixed settings: expected lot 32 of n, 10 epochs, noise multiplier 1.5.
LOT, EPOCHS, SIGMA = 32, 10, 1.5
# Each run's validation accuracy (sensitivity 1/n_val) is released with N(0, SCORE_SD²).
SCORE_SD = 0.05


def dpsgd(x, y, lr, clip, rng):
    n, d = x.shape
    q = LOT / n
    steps = int(EPOCHS / q)
    w = np.zeros(d)
    for _ in range(steps):
        lot = rng.random(n) < q                                   # Poisson sampling
        xb, yb = x[lot], y[lot]
        p = 1.0 / (1.0 + np.exp(-xb @ w))
        g = (p - yb)[:, None] * xb                                # per-example gradients
        norms = np.linalg.norm(g, axis=1, keepdims=True)
        g = g / np.maximum(1.0, norms / clip)                     # clip each to norm `clip`
        noisy = g.sum(0) + rng.normal(0.0, SIGMA * clip, size=d)  # Gaussian noise, std σ·C
        w -= lr * noisy / LOT
    return w, q, steps


def main(seed=1):
    (xt, yt), (xv, yv), _ = load(seed)
    n, n_val = len(yt), len(yv)
    q, steps = LOT / n, int(EPOCHS / (LOT / n))
    # One run's privacy: `steps` DP-SGD steps, then the score release (a Gaussian of
    # sensitivity 1/n_val with std SCORE_SD: noise multiplier SCORE_SD·n_val).
    run = ComposedDpEvent([
        SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(SIGMA)), steps),
        GaussianDpEvent(SCORE_SD * n_val),
    ])
    one = RdpAccountant().compose(run)
    print(f"one run: {one.statement(1e-5)}")
    tuner = papernot_steinke(run=run, space={"lr": (0.01, 10.0, "log"), "clip": (0.05, 5.0, "log")},
                             mean=6, dist="logarithmic", delta=1e-5, seed=seed)
    print(f"tuner, before any run: {tuner.statement}")
    rng = np.random.default_rng([seed, 7])  # the runs' own randomness
    for trial in tuner:
        w, _, _ = dpsgd(xt, yt, trial.params["lr"], trial.params["clip"], rng)
        acc = float(np.mean(((xv @ w) > 0) == (yv > 0.5)))
        score = acc + rng.normal(0.0, SCORE_SD)
        # Only the trial's hyperparameters (the tuner's data-independent draws) are printed: the
        # guarantee covers releasing the best run alone, not every run's score. These lines are
        # your log, private: how many there are is K, which must stay secret.
        print(f"  trial {trial.number}: lr {trial.params['lr']:.3g}, clip {trial.params['clip']:.3g}")
        trial.report(score)
    r = tuner.release()
    if r.params is None:
        print(f"released: nothing, the data-independent default; {r.statement}")
    else:
        # Not the number of runs: Papernot–Steinke's K must stay secret (r.runs is None).
        print(f"released: lr {r.params['lr']:.3g}, clip {r.params['clip']:.3g}, accuracy {r.score:.3f}")
    print(f"privacy: {r.statement}")
    return r


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
