"""Reference minimisers for the exact regularised logistic regression of Algorithm 3
(src/workloads/regularised_erm.rs), from scikit-learn (developer-only; CI never runs it).

    python3 tools/make_erm_fixture.py

Our objective is (λ/2)‖w‖² + (1/n) Σ ln(1 + exp(−y_i wᵀx_i)) with no separate intercept;
scikit-learn's LogisticRegression(C, fit_intercept=False) minimises ½‖w‖² + C Σ ln(1 + …),
the same problem scaled by 1/λ when C = 1/(λ n). Rows are random points of the unit ball
(as unit_ball_features guarantees), labels from a noisy linear rule. Deterministic (numpy
seed 20261122); writes tests/fixtures/erm_sklearn.json.
"""

import json
import os

import numpy as np
import sklearn
from sklearn.linear_model import LogisticRegression

from fixture_common import num_list

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "erm_sklearn.json")


def main():
    rng = np.random.default_rng(20261122)
    cases = []
    for n, d in [(60, 5), (200, 12)]:
        x = rng.normal(size=(n, d))
        x /= np.maximum(1.0, np.linalg.norm(x, axis=1, keepdims=True) * rng.uniform(1.0, 3.0, size=(n, 1)))
        truth = rng.normal(size=d)
        y = np.where(x @ truth + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
        fits = []
        for lam in [0.01, 0.1, 1.0, 10.0]:
            model = LogisticRegression(
                C=1.0 / (lam * n), fit_intercept=False, tol=1e-14, max_iter=100000, solver="newton-cg"
            ).fit(x, y)
            w = model.coef_.ravel()
            margins = y * (x @ w)
            grad = lam * w - (x.T @ (y / (1.0 + np.exp(margins)))) / n
            fits.append({"lambda": lam, "w": num_list(w), "grad_norm": float(np.linalg.norm(grad))})
        cases.append({"x": [num_list(r) for r in x], "y": num_list(y), "fits": fits})
    doc = {"generator": "tools/make_erm_fixture.py", "sklearn_version": sklearn.__version__, "cases": cases}
    with open(OUT, "w") as fh:
        json.dump(doc, fh, allow_nan=False)
        fh.write("\n")
    print(OUT, len(cases), "data sets; max reference gradient norm", max(f["grad_norm"] for c in cases for f in c["fits"]))


if __name__ == "__main__":
    main()
