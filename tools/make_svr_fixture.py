#!/usr/bin/env python3
"""Generate tests/fixtures/svr_sklearn.json: scikit-learn's epsilon-SVR on the
built-in diabetes set with per-feature (ARD) lengthscales, as the reference for
dptune's SVR (src/learn/svr.rs, tested by tests/suite/svr.rs).

How to run (from the repository root):

    pip install scikit-learn==1.9.1
    python3 tools/make_svr_fixture.py

CI never runs this script: the JSON it writes is committed, and the Rust tests
only read it. It exits unless scikit-learn is exactly EXPECTED_SKLEARN.
Deterministic: re-running gives a byte-identical file (same numpy/scikit-learn).

Data and preprocessing (the Rust side must do exactly this)
-----------------------------------------------------------
data/diabetes.csv, parsed with the csv module: a header row, then one row per
example: 10 feature columns, last column `target` (a number). Row indices below
are 0-based in data-row order (header excluded).
Split: sklearn.model_selection.train_test_split(arange(n), train_size=300,
random_state=SEED); both index lists are then SORTED, and every model is
fitted on the training rows in that sorted order.
Standardisation: x' = (x - mean) / sd column by column and z = (y - mean_y) /
sd_y, all fitted on the training rows only (population sd, ddof = 0).

Models
------
One case per (C, epsilon, gamma) in C_GRID x EPSILON_GRID x GAMMA_GRID (C
slowest, gamma fastest), each with its own lengthscales l_j = exp(u_j), u_j ~
U(-1, 1) drawn from numpy.random.default_rng(SEED) in case order (10 per case).
Kernel: k(a, b) = exp(-gamma * sum_j ((a_j - b_j) / l_j)^2), i.e.
SVR(kernel='rbf', C, epsilon, gamma, tol=1e-3) fitted on x' / l (shrinking on,
the default; cache_size default). Each case also holds a "tight" solution: the
same SVR with tol=1e-10, as the exact optimum to compare against.

JSON layout
-----------
Top level: header keys sorted, one per line, then "cases", one per line, keys
sorted. Full-precision doubles; no NaN/Infinity/null.
Header:
    conventions: a short statement of the above,
    csv: "data/diabetes.csv", n_rows, n_features, seed,
    train, test: sorted row-index lists,
    mean, sd: the feature standardisation; y_mean, y_sd: the target's,
    versions: python, numpy, scikit-learn.
Each case:
    name, c, epsilon, gamma, lengthscales, tol, n_iter (sklearn's),
    n_support, support (sklearn's support_, increasing training positions),
    dual_coef (beta_s = alpha_s - alpha*_s on the support vectors),
    intercept (b in f(x) = sum_s beta_s k(sv_s, x) + b),
    dual_objective: W = z.beta - epsilon sum|beta| - 1/2 beta' K beta (the
        maximised dual; sum|beta| = sum(alpha + alpha*) as LIBSVM never leaves
        both alpha_i and alpha*_i positive at epsilon > 0 -- checked below on
        the tight solution through W <= P),
    primal_objective: P = 1/2 beta' K beta + C sum_i max(0, |z_i - f(x_i)| - eps),
    predict_test: predictions on every test row (sorted order), in
        standardised target units,
    tight: {tol, n_support, dual_objective, primal_objective, intercept,
        predict_test} for the tol=1e-10 fit.
Self-checks before writing: predict equals the numpy formula above to 1e-10
(absolute, times max(1, |value|)); 0 <= P - W for every fit; the tight dual
objective is >= the default one minus 1e-9 relative; the tight gap P - W is
below 1e-6 (relative to max(1, P)).
"""

import csv
import platform
import sys

import numpy as np

sys.path.insert(0, "tools")
from fixture_common import dump_sorted, finite_num, require_sklearn  # noqa: E402

EXPECTED_SKLEARN = "1.9.1"
SEED = 20261123
CSV_PATH = "data/diabetes.csv"
OUT = "tests/fixtures/svr_sklearn.json"
N_TRAIN = 300
C_GRID = [0.1, 1.0, 3.0]
EPSILON_GRID = [0.01, 0.1, 0.5]
GAMMA_GRID = [0.01, 0.3, 5.0]
TOL = 1e-3
TIGHT_TOL = 1e-10


def load_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    assert header[-1] == "target", header[-1]
    x = np.array([[float(v) for v in r[:-1]] for r in body])
    y = np.array([float(r[-1]) for r in body])
    return x, y


def kernel_matrix(gamma, a, b):
    sq = ((a[:, None, :] - b[None, :, :]) ** 2).sum(axis=2)
    return np.exp(-gamma * sq)


def fit_svr(c, eps, gamma, tol, xtr, ztr, xte):
    """xtr, xte already divided by the lengthscales."""
    from sklearn.svm import SVR

    m = SVR(kernel="rbf", C=c, epsilon=eps, gamma=gamma, tol=tol).fit(xtr, ztr)
    beta = m.dual_coef_[0]
    sv = m.support_
    b = float(m.intercept_[0])
    k_tr = kernel_matrix(gamma, xtr, xtr[sv])
    f_tr = k_tr @ beta + b
    quad = float(beta @ k_tr[sv] @ beta)
    dual = float(ztr[sv] @ beta - eps * np.abs(beta).sum() - 0.5 * quad)
    primal = float(0.5 * quad + c * np.maximum(0.0, np.abs(ztr - f_tr) - eps).sum())
    assert primal - dual >= -1e-9 * max(1.0, abs(primal)), (c, eps, gamma, tol, primal, dual)
    pred = m.predict(xte)
    mine = kernel_matrix(gamma, xte, xtr[sv]) @ beta + b
    err = np.max(np.abs(pred - mine) / np.maximum(1.0, np.abs(pred)))
    assert err <= 1e-10, f"predict differs from the formula by {err}"
    return m, dual, primal, b, pred


def main():
    require_sklearn(EXPECTED_SKLEARN)
    import sklearn
    from sklearn.model_selection import train_test_split

    x, y = load_csv(CSV_PATH)
    n, d = x.shape
    train, test = train_test_split(np.arange(n), train_size=N_TRAIN, random_state=SEED)
    train, test = np.sort(train), np.sort(test)
    mean, sd = x[train].mean(axis=0), x[train].std(axis=0, ddof=0)
    assert (sd > 0).all()
    y_mean, y_sd = y[train].mean(), y[train].std(ddof=0)
    xtr, xte = (x[train] - mean) / sd, (x[test] - mean) / sd
    ztr = (y[train] - y_mean) / y_sd

    rng = np.random.default_rng(SEED)
    cases = []
    for c in C_GRID:
        for eps in EPSILON_GRID:
            for gamma in GAMMA_GRID:
                ls = np.exp(rng.uniform(-1.0, 1.0, size=d))
                a, b_ = xtr / ls, xte / ls
                m, dual, primal, b, pred = fit_svr(c, eps, gamma, TOL, a, ztr, b_)
                mt, dual_t, primal_t, b_t, pred_t = fit_svr(c, eps, gamma, TIGHT_TOL, a, ztr, b_)
                assert dual_t >= dual - 1e-9 * abs(dual), (c, eps, gamma, dual, dual_t)
                assert primal_t - dual_t <= 1e-6 * max(1.0, primal_t), (c, eps, gamma)
                name = f"C{c:g}_eps{eps:g}_gamma{gamma:g}"
                cases.append({
                    "name": name,
                    "c": c,
                    "epsilon": eps,
                    "gamma": gamma,
                    "lengthscales": [finite_num(v) for v in ls],
                    "tol": TOL,
                    "n_iter": int(np.ravel(m.n_iter_)[0]),
                    "n_support": int(len(m.support_)),
                    "support": [int(i) for i in m.support_],
                    "dual_coef": [finite_num(v) for v in m.dual_coef_[0]],
                    "intercept": finite_num(b),
                    "dual_objective": finite_num(dual),
                    "primal_objective": finite_num(primal),
                    "predict_test": [finite_num(v) for v in pred],
                    "tight": {
                        "tol": TIGHT_TOL,
                        "n_support": int(len(mt.support_)),
                        "dual_objective": finite_num(dual_t),
                        "primal_objective": finite_num(primal_t),
                        "intercept": finite_num(b_t),
                        "predict_test": [finite_num(v) for v in pred_t],
                    },
                })
                print(f"  {name:26s} nSV {len(m.support_):4d} dual {dual:.6f} gap "
                      f"{primal - dual:.2e} (tight {dual_t:.6f}, gap {primal_t - dual_t:.1e}) "
                      f"iters {int(np.ravel(m.n_iter_)[0])} max|dpred| {np.abs(pred - pred_t).max():.2e}")

    doc = {
        "generator": "tools/make_svr_fixture.py",
        "conventions": (
            "diabetes: split = sklearn train_test_split(arange(n), train_size=300, "
            "random_state=seed), index lists sorted; features and target standardised with "
            "the train mean and population sd (ddof 0); kernel exp(-gamma sum_j ((a_j - "
            "b_j)/l_j)^2) = SVR(kernel='rbf') on x/l; predictions f(x) = sum_s dual_coef_s "
            "k(sv_s, x) + intercept in standardised units; dual_objective = z.beta - eps "
            "sum|beta| - 1/2 beta'K beta (maximised form); primal_objective = 1/2 beta'K beta "
            "+ C sum max(0, |z - f| - eps)"
        ),
        "csv": CSV_PATH,
        "n_rows": n,
        "n_features": d,
        "seed": SEED,
        "train": [int(i) for i in train],
        "test": [int(i) for i in test],
        "mean": [finite_num(v) for v in mean],
        "sd": [finite_num(v) for v in sd],
        "y_mean": finite_num(y_mean),
        "y_sd": finite_num(y_sd),
        "versions": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "scikit-learn": sklearn.__version__,
        },
        "cases": cases,
    }
    dump_sorted(doc, OUT)
    with open(OUT, encoding="utf-8") as f:
        text = f.read()
    assert "NaN" not in text and "Infinity" not in text and "null" not in text
    print(f"wrote {OUT}: {len(cases)} SVR cases, train {len(train)}, test {len(test)}")


if __name__ == "__main__":
    main()
