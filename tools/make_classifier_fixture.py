#!/usr/bin/env python3
"""Generate tests/fixtures/classifiers_sklearn.json: scikit-learn classifiers on
breast-cancer, as references for dptune's kernel SVM (src/learn/smo.rs, tested by
tests/smo.rs) and for the linear models of src/learn/.

How to run (from the repository root):

    pip install scikit-learn==1.9.1
    python3 tools/make_classifier_fixture.py

CI never runs this script: the JSON it writes is committed, and the Rust tests
only read it. It exits unless scikit-learn is exactly EXPECTED_SKLEARN.
Deterministic: re-running gives a byte-identical file (same numpy/scikit-learn).

Data and preprocessing (the Rust side must do exactly this)
-----------------------------------------------------------
data/breast-cancer.csv, parsed with the csv module: a header row, then one row
per example: 30 feature columns, last column `target` (malignant -> class 0,
benign -> class 1). Row indices below are 0-based in data-row order (header
excluded).
Split: sklearn.model_selection.train_test_split(arange(n), test_size=0.3,
stratify=labels, random_state=SEED); both index lists are then SORTED, and
every model is fitted on the training rows in that sorted order.
Standardisation: x' = (x - mean) / sd, column by column, with mean and sd
fitted on the training rows only (population sd, ddof = 0; a column with sd 0
would get sd 1 -- none has). Every model below sees standardised features.

Models
------
svc cases (one per line in "cases"):
    SVC(kernel='rbf', C, gamma, tol=1e-3) for C in {0.1, 1, 10, 100} and
    gamma in {0.001, 0.01, 0.1}; then SVC(kernel='linear', C=1, tol=1e-3).
    shrinking=True (the default), cache_size default, no class weights.
    Kernel: rbf k(a, b) = exp(-gamma |a - b|^2), linear k(a, b) = a . b.
    Class 1 (benign) is the positive class: decision > 0 -> class 1.
    Each case also holds a "tight" solution: the same SVC with tol=1e-10, as
    the exact optimum to compare a tightly converged solver against.
linear_models (header key): accuracies (and fitted coefficients, for reference)
    of models other modules implement:
    logistic_regression: LogisticRegression(C=1.0, max_iter=10000), i.e. lbfgs
        minimising C * sum_i log(1 + exp(-y_i (w.x_i + b))) + |w|^2 / 2
        (intercept not penalised); test and train accuracy, coef, intercept.
    linear_svc: LinearSVC(C=1.0, max_iter=100000), i.e. sklearn's defaults:
        SQUARED hinge loss, l2 penalty, and the intercept IS penalised
        (intercept_scaling=1: b is an extra weight on a constant feature 1);
        test accuracy, coef, intercept.
    sgd_hinge: SGDClassifier(loss='hinge', random_state=SEED), defaults
        otherwise (alpha=1e-4, max_iter=1000, tol=1e-3, shuffled epochs);
        test accuracy only -- it depends on sklearn's own shuffling, so it is
        a ballpark figure, not a value to match.

JSON layout
-----------
Top level: header keys sorted, one per line, then "cases", one per line, keys
sorted. Full-precision doubles; no NaN/Infinity/null.
Header:
    conventions: a short statement of the above,
    csv: "data/breast-cancer.csv", n_rows, n_features, seed,
    train, test: sorted row-index lists,
    mean, sd: the standardisation (length n_features),
    linear_models: as above,
    versions: python, numpy, scikit-learn.
Each case:
    name, kernel ("rbf" | "linear"), c, gamma (null-free: 0.0 for linear),
    tol, train_accuracy, test_accuracy, n_support (total), n_iter (sklearn's),
    dual_objective: W(alpha) = sum_i alpha_i - 1/2 sum_ij alpha_i alpha_j y_i
        y_j k(x_i, x_j) (the maximised dual, >= 0), from dual_coef_ (= y_i
        alpha_i on the support vectors) and this script's numpy kernel matrix,
    intercept: b in decision(x) = sum_s dual_coef_s k(sv_s, x) + b,
    decision_test20: decision values on the first 20 test rows (sorted order),
    tight: {tol, n_support, dual_objective, intercept, decision_test20,
        test_accuracy} for the tol=1e-10 fit.
Self-checks before writing: decision_function equals the numpy formula above
to 1e-10 (absolute, times max(1, |value|)); classes_ == [0, 1]; the tight
dual objective is >= the default one minus 1e-9 relative.
"""

import csv
import json
import platform
import sys

import numpy as np

sys.path.insert(0, "tools")
from fixture_common import dump_sorted, finite_num, require_sklearn  # noqa: E402

EXPECTED_SKLEARN = "1.9.1"
SEED = 20261122
CSV_PATH = "data/breast-cancer.csv"
OUT = "tests/fixtures/classifiers_sklearn.json"
C_GRID = [0.1, 1.0, 10.0, 100.0]
GAMMA_GRID = [0.001, 0.01, 0.1]
TOL = 1e-3
TIGHT_TOL = 1e-10
N_DECISION = 20
CLASS_OF = {"malignant": 0, "benign": 1}


def load_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    assert header[-1] == "target", header[-1]
    x = np.array([[float(v) for v in r[:-1]] for r in body])
    y = np.array([CLASS_OF[r[-1]] for r in body])
    return x, y


def kernel_matrix(kind, gamma, a, b):
    if kind == "linear":
        return a @ b.T
    sq = ((a[:, None, :] - b[None, :, :]) ** 2).sum(axis=2)
    return np.exp(-gamma * sq)


def fit_svc(kind, c, gamma, tol, xtr, ytr, xte, yte):
    from sklearn.svm import SVC

    args = dict(kernel=kind, C=c, tol=tol)
    if kind == "rbf":
        args["gamma"] = gamma
    m = SVC(**args).fit(xtr, ytr)
    assert list(m.classes_) == [0, 1]
    coef = m.dual_coef_[0]
    sv = m.support_vectors_
    k_sv = kernel_matrix(kind, gamma, sv, sv)
    dual = float(np.abs(coef).sum() - 0.5 * coef @ k_sv @ coef)
    b = float(m.intercept_[0])
    dec = m.decision_function(xte)
    mine = kernel_matrix(kind, gamma, xte, sv) @ coef + b
    err = np.max(np.abs(dec - mine) / np.maximum(1.0, np.abs(dec)))
    assert err <= 1e-10, f"decision_function differs from the formula by {err}"
    return m, dual, b, dec


def main():
    require_sklearn(EXPECTED_SKLEARN)
    import sklearn
    from sklearn.linear_model import LogisticRegression, SGDClassifier
    from sklearn.model_selection import train_test_split
    from sklearn.svm import LinearSVC

    x, y = load_csv(CSV_PATH)
    n, d = x.shape
    train, test = train_test_split(np.arange(n), test_size=0.3, stratify=y, random_state=SEED)
    train, test = np.sort(train), np.sort(test)
    mean = x[train].mean(axis=0)
    sd = x[train].std(axis=0, ddof=0)
    sd[sd == 0.0] = 1.0
    xtr, xte = (x[train] - mean) / sd, (x[test] - mean) / sd
    ytr, yte = y[train], y[test]

    cases = []
    settings = [("rbf", c, g) for c in C_GRID for g in GAMMA_GRID] + [("linear", 1.0, 0.0)]
    for kind, c, g in settings:
        m, dual, b, dec = fit_svc(kind, c, g, TOL, xtr, ytr, xte, yte)
        mt, dual_t, b_t, dec_t = fit_svc(kind, c, g, TIGHT_TOL, xtr, ytr, xte, yte)
        assert dual_t >= dual - 1e-9 * abs(dual), (kind, c, g, dual, dual_t)
        name = f"{kind}_C{c:g}" + (f"_gamma{g:g}" if kind == "rbf" else "")
        cases.append({
            "name": name,
            "kernel": kind,
            "c": c,
            "gamma": g,
            "tol": TOL,
            "train_accuracy": finite_num(m.score(xtr, ytr)),
            "test_accuracy": finite_num(m.score(xte, yte)),
            "n_support": int(m.n_support_.sum()),
            "n_iter": int(m.n_iter_[0]),
            "dual_objective": finite_num(dual),
            "intercept": finite_num(b),
            "decision_test20": [finite_num(v) for v in dec[:N_DECISION]],
            "tight": {
                "tol": TIGHT_TOL,
                "n_support": int(mt.n_support_.sum()),
                "dual_objective": finite_num(dual_t),
                "intercept": finite_num(b_t),
                "decision_test20": [finite_num(v) for v in dec_t[:N_DECISION]],
                "test_accuracy": finite_num(mt.score(xte, yte)),
            },
        })
        print(f"  {name:24s} test {cases[-1]['test_accuracy']:.4f} "
              f"nSV {cases[-1]['n_support']:4d} dual {dual:.6f} (tight {dual_t:.6f}) "
              f"iters {int(m.n_iter_[0])}")

    lr = LogisticRegression(C=1.0, max_iter=10000).fit(xtr, ytr)
    lsvc = LinearSVC(C=1.0, max_iter=100000).fit(xtr, ytr)
    sgd = SGDClassifier(loss="hinge", random_state=SEED).fit(xtr, ytr)
    linear_models = {
        "logistic_regression": {
            "C": 1.0,
            "test_accuracy": finite_num(lr.score(xte, yte)),
            "train_accuracy": finite_num(lr.score(xtr, ytr)),
            "coef": [finite_num(v) for v in lr.coef_[0]],
            "intercept": finite_num(lr.intercept_[0]),
        },
        "linear_svc": {
            "C": 1.0,
            "loss": "squared_hinge, intercept penalised (intercept_scaling=1)",
            "test_accuracy": finite_num(lsvc.score(xte, yte)),
            "coef": [finite_num(v) for v in lsvc.coef_[0]],
            "intercept": finite_num(lsvc.intercept_[0]),
        },
        "sgd_hinge": {
            "alpha": 1e-4,
            "random_state": SEED,
            "test_accuracy": finite_num(sgd.score(xte, yte)),
        },
    }
    for k, v in linear_models.items():
        print(f"  {k:24s} test {v['test_accuracy']:.4f}")

    doc = {
        "generator": "tools/make_classifier_fixture.py",
        "conventions": (
            "breast-cancer: malignant -> 0, benign -> 1 (positive class, decision > 0); "
            "split = sklearn train_test_split(arange(n), test_size=0.3, stratify=labels, "
            "random_state=seed), index lists sorted; features standardised with the train "
            "mean and population sd (ddof 0); rbf k = exp(-gamma |a-b|^2); dual_objective = "
            "sum alpha - 1/2 alpha^T Q alpha (maximised form); decision = sum_s dual_coef_s "
            "k(sv_s, x) + intercept"
        ),
        "csv": CSV_PATH,
        "n_rows": n,
        "n_features": d,
        "seed": SEED,
        "train": [int(i) for i in train],
        "test": [int(i) for i in test],
        "mean": [finite_num(v) for v in mean],
        "sd": [finite_num(v) for v in sd],
        "linear_models": linear_models,
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
    print(f"wrote {OUT}: {len(cases)} SVC cases, train {len(train)}, test {len(test)}")


if __name__ == "__main__":
    main()
