#!/usr/bin/env python3
"""Generate tests/fixtures/gp_lengthscales_sklearn.json: the posterior means and per-user
losses of the `gp-lengthscales` workload's tuned model (spec 004 §4.2(c)) on a small data set,
computed by scikit-learn's GaussianProcessRegressor, as an independent reference for
src/workloads/per_user/gp_lengthscales.rs.

How to run (from the repository root):

    python3 tools/make_gp_lengthscales_fixture.py

CI never runs this script; it exits unless scikit-learn is exactly EXPECTED_SKLEARN.

The model at log-lengthscales theta (one per input dimension):
    kernel = ConstantKernel(1.0, "fixed") * RBF(exp(theta), "fixed")
    GaussianProcessRegressor(kernel, alpha=0.01, optimizer=None, normalize_y=False)
fitted on (train_x, train_y); mean = predict(validation_x); user v's loss is
0.5 * (validation_y[v] - mean[v])**2. The script checks sklearn's mean against its own numpy
Cholesky formula k(xs, X) (K + 0.01 I)^{-1} y to 1e-10 and aborts on a mismatch.

Data: numpy PCG64 stream default_rng(SEED); p = 3, 30 training and 12 validation rows,
x ~ N(0, I), y = sin(x_1) + 0.5 x_2 x_3 + 0.1 N(0, 1) (any smooth function serves: the fixture
tests the posterior mean, not the data law). Cases: five theta vectors in [-2, 2]^3, fixed
below. Re-running gives a byte-identical file.
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from fixture_common import finite_num, require_sklearn  # noqa: E402

EXPECTED_SKLEARN = "1.9.1"
SEED = 20261122
OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures",
                   "gp_lengthscales_sklearn.json")
THETAS = [
    [0.0, 0.0, 0.0],
    [-1.0, 0.5, 1.5],
    [2.0, -2.0, 0.3],
    [-2.0, -2.0, -2.0],
    [1.2, 0.7, -0.4],
]


def numpy_mean(x, y, xs, lengthscales):
    def k(a, b):
        d = (a[:, None, :] - b[None, :, :]) / lengthscales
        return np.exp(-0.5 * (d * d).sum(-1))
    ky = k(x, x) + 0.01 * np.eye(len(x))
    chol = np.linalg.cholesky(ky)
    alpha = np.linalg.solve(chol.T, np.linalg.solve(chol, y))
    return k(xs, x) @ alpha


def main():
    require_sklearn(EXPECTED_SKLEARN)
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel

    rng = np.random.default_rng(SEED)
    x = rng.standard_normal((42, 3))
    y = np.sin(x[:, 0]) + 0.5 * x[:, 1] * x[:, 2] + 0.1 * rng.standard_normal(42)
    train_x, train_y, val_x, val_y = x[:30], y[:30], x[30:], y[30:]
    cases = []
    for theta in THETAS:
        ls = np.exp(np.array(theta))
        kernel = ConstantKernel(1.0, constant_value_bounds="fixed") * RBF(
            length_scale=ls, length_scale_bounds="fixed")
        gpr = GaussianProcessRegressor(kernel, alpha=0.01, optimizer=None, normalize_y=False)
        gpr.fit(train_x, train_y)
        mean = gpr.predict(val_x)
        ref = numpy_mean(train_x, train_y, val_x, ls)
        if not np.allclose(mean, ref, rtol=0, atol=1e-10):
            sys.exit(f"sklearn and numpy disagree at theta={theta}: {np.abs(mean - ref).max()}")
        losses = 0.5 * (val_y - mean) ** 2
        cases.append({
            "theta": theta,
            "mean": [finite_num(v) for v in mean],
            "losses": [finite_num(v) for v in losses],
        })

    def rows(a):
        return [[finite_num(v) for v in r] for r in a]

    doc = {
        "generator": "tools/make_gp_lengthscales_fixture.py",
        "sklearn_version": EXPECTED_SKLEARN,
        "model": "ConstantKernel(1, fixed) * RBF(exp(theta), fixed), alpha = 0.01",
        "train_x": rows(train_x),
        "train_y": [finite_num(v) for v in train_y],
        "validation_x": rows(val_x),
        "validation_y": [finite_num(v) for v in val_y],
        "cases": cases,
    }
    text = json.dumps(doc, indent=1, allow_nan=False) + "\n"
    with open(OUT, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    print(f"wrote {os.path.normpath(OUT)} ({len(cases)} cases)")


if __name__ == "__main__":
    main()
