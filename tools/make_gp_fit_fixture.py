#!/usr/bin/env python3
"""Generate tests/fixtures/gp_fit_sklearn.json: Gaussian-process HYPERPARAMETER
FITS (maximum log marginal likelihood, multi-start L-BFGS-B) by scikit-learn's
GaussianProcessRegressor, as a reference for dptune's non-private fit
(src/gp/fit.rs, `fit_hyperparameters`).

How to run (from the repository root):

    pip install scikit-learn==1.9.1
    python3 tools/make_gp_fit_fixture.py

CI never runs this script: the JSON it writes is committed, and the Rust test
(tests/suite/gp_fit.rs) only reads that file. It exits unless scikit-learn is exactly
EXPECTED_SKLEARN.

Determinism: case i draws its data from its own numpy PCG64 stream,
np.random.default_rng([SEED, i]) (x first, then the noise), and sklearn's
restarts come from random_state=SEED + i. Running the script twice gives a
byte-identical file (same python/numpy/scipy/scikit-learn).

Model and parameter mapping (the Rust side must match it exactly)
----------------------------------------------------------------
dptune's GP: prior mean 0, kernel k(a, b) = s2 * phi(r), with
    r(a, b) = sqrt( sum_j ((a_j - b_j) / l_j)^2 )        (ARD lengthscales l_j)
    rbf:      phi = exp(-r^2 / 2)
    matern52: phi = (1 + sqrt(5) r + 5 r^2 / 3) * exp(-sqrt(5) r)
and observations y = f(x) + N(0, sigma2), so K_y = K(x, x) + sigma2 I and
    lml = -1/2 y^T K_y^{-1} y - sum_i ln L_ii - n/2 ln(2 pi),  L = chol(K_y).
In scikit-learn this model is
    ConstantKernel(s2) * RBF(l)                 (rbf)
    ConstantKernel(s2) * Matern(l, nu=2.5)      (matern52)
      + WhiteKernel(sigma2)
    GaussianProcessRegressor(kernel, alpha=0.0, normalize_y=False,
                             n_restarts_optimizer=10, random_state=SEED + i)
so, parameter by parameter:
    signal_variance  s2      = kernel_.k1.k1.constant_value
    lengthscales     l_j     = kernel_.k1.k2.length_scale[j]
    noise_variance   sigma2  = kernel_.k2.noise_level
alpha = 0.0 matters: sklearn's default alpha = 1e-10 would add a second,
fixed noise term on the training diagonal, which dptune's model does not have.
(WhiteKernel adds sigma2 only to K(x, x), never to cross-covariances, exactly
as dptune's noise variance.) normalize_y=False: y is used as is, prior mean 0.
sklearn's log-parameter vector theta is (ln s2, ln l_1..ln l_d, ln sigma2);
dptune's is (ln l_1..ln l_d, ln s2, ln sigma2). Everything stored below uses
dptune's order and natural (not log) units, except "gradient", which is the
lml gradient in dptune's theta order (reordered from sklearn's).

Bounds: every parameter in [1e-5, 1e5] -- sklearn's defaults for
ConstantKernel, RBF/Matern and WhiteKernel, and dptune's defaults
(HyperparameterBounds::default()). sklearn's optimizer is scipy's L-BFGS-B in
theta = ln(params) within ln(bounds); its first start is the kernel's initial
value ("initial" below: all lengthscales 1, s2 = 1, sigma2 = 0.1), then 10
starts drawn uniformly in ln(bounds); it keeps the highest lml.

Cases (6, in this order): x ~ U[0,1]^{n x d}, y = g(x) + noise_sd * N(0,1):
    rbf_d1_n20        g = sin(6 x0)                                noise_sd 0.1
    matern52_d1_n40   g = sin(6 x0) + 0.5 x0                       noise_sd 0.2
    rbf_d2_n30        g = sin(3 x0) cos(2 x1)                      noise_sd 0.05
    matern52_d2_n50   g = 2 + 3 exp(-((x0-.5)^2 + (x1-.3)^2) / 0.1) noise_sd 0.1
                      (an offset the zero-mean prior must absorb into s2)
    rbf_d3_n60        g = sin(3 x0) + 0.5 x1^2     (x2 irrelevant)  noise_sd 0.1
    matern52_d3_n40   g = sin(2 (x0 + x1 + x2))                    noise_sd 1e-3
                      (noise variance 1e-6 < 1e-5: the fitted sigma2 sits on
                      its lower bound)

JSON layout
-----------
Top level: header keys sorted, one per line ("bounds", "conventions",
"generator", "initial", "restarts", "seed", "versions"), then "cases", one
case per line with sorted keys. Full-precision doubles, no NaN/Infinity/null.
Each case:
    case_index, name, kernel ("rbf" | "matern52"), d, n, noise_sd,
    x [n][d], y [n],
    fitted {"lengthscales" [d], "signal_variance", "noise_variance"}:
        sklearn's fitted hyperparameters (mapping above),
    lml: sklearn's log_marginal_likelihood_value_ at the fit,
    gradient [d + 2]: sklearn's lml gradient at the fit, dptune's theta order,
    at_bound [d + 2] (bool): fitted theta within 1e-6 of a bound, dptune's order,
    lml_numpy: this script's own numpy-Cholesky lml at the fitted values
        (self-check: |lml - lml_numpy| <= 1e-10 * max(1, |lml|)),
    lml_50_restarts: the lml of a second sklearn fit with 50 restarts
        (random_state SEED + 1000 + i), for information: whether 10 restarts
        already found the best optimum known,
    convergence_warnings: number of sklearn ConvergenceWarnings (lbfgs hitting
        its iteration limit, or a parameter close to a bound) in the 10-restart fit.
"""

import json
import math
import os
import platform
import sys
import warnings

import numpy as np

from fixture_common import dump_sorted, finite_num, num, num_list, read_fixture_text, require_sklearn  # noqa: E402  (tools/ on sys.path)

import scipy
import sklearn
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, WhiteKernel

SEED = 20261125
EXPECTED_SKLEARN = "1.9.1"
GENERATOR = "tools/make_gp_fit_fixture.py"

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_PATH = os.path.join(REPO_ROOT, "tests", "fixtures", "gp_fit_sklearn.json")

BOUNDS = (1e-5, 1e5)
INITIAL_LENGTHSCALE = 1.0
INITIAL_SIGNAL = 1.0
INITIAL_NOISE = 0.1
RESTARTS = 10
LML_TOL = 1e-10  # relative to max(1, |lml|)

# (name, kernel, d, n, noise_sd, g)
CASES = (
    ("rbf_d1_n20", "rbf", 1, 20, 0.1, lambda x: np.sin(6 * x[:, 0])),
    ("matern52_d1_n40", "matern52", 1, 40, 0.2, lambda x: np.sin(6 * x[:, 0]) + 0.5 * x[:, 0]),
    ("rbf_d2_n30", "rbf", 2, 30, 0.05, lambda x: np.sin(3 * x[:, 0]) * np.cos(2 * x[:, 1])),
    ("matern52_d2_n50", "matern52", 2, 50, 0.1,
     lambda x: 2 + 3 * np.exp(-((x[:, 0] - 0.5) ** 2 + (x[:, 1] - 0.3) ** 2) / 0.1)),
    ("rbf_d3_n60", "rbf", 3, 60, 0.1, lambda x: np.sin(3 * x[:, 0]) + 0.5 * x[:, 1] ** 2),
    ("matern52_d3_n40", "matern52", 3, 40, 1e-3, lambda x: np.sin(2 * np.sum(x, axis=1))),
)

CONVENTIONS = {
    "model": "y = f(x) + N(0, noise_variance), f ~ GP(0, k), k = signal_variance * phi(r), "
             "r = sqrt(sum_j ((a_j - b_j)/lengthscale_j)^2)",
    "rbf": "phi = exp(-r^2/2)",
    "matern52": "phi = (1 + sqrt(5) r + 5 r^2/3) exp(-sqrt(5) r)",
    "sklearn_kernel": "ConstantKernel(s2) * RBF(l) | Matern(l, nu=2.5) + WhiteKernel(noise)",
    "sklearn_regressor": "GaussianProcessRegressor(kernel, alpha=0.0, normalize_y=False, "
                         "n_restarts_optimizer=10, random_state=seed + case_index)",
    "mapping": "signal_variance = k1.k1.constant_value, lengthscales = k1.k2.length_scale, "
               "noise_variance = k2.noise_level",
    "theta_order": "dptune (ln l_1..ln l_d, ln s2, ln noise); sklearn (ln s2, ln l_1..ln l_d, ln noise)",
    "lml": "-1/2 y^T K_y^-1 y - sum ln diag(chol(K_y)) - n/2 ln(2 pi), K_y = K(x,x) + noise I",
    "gradient": "d lml / d theta at the fit, dptune's theta order",
    "bounds": "every parameter (each lengthscale, s2, noise) in [1e-5, 1e5]",
}


def sk_kernel(kind, d):
    c = ConstantKernel(INITIAL_SIGNAL, constant_value_bounds=BOUNDS)
    ls = np.full(d, INITIAL_LENGTHSCALE)
    if kind == "rbf":
        base = RBF(length_scale=ls, length_scale_bounds=BOUNDS)
    else:
        base = Matern(length_scale=ls, nu=2.5, length_scale_bounds=BOUNDS)
    return c * base + WhiteKernel(noise_level=INITIAL_NOISE, noise_level_bounds=BOUNDS)


def np_kernel(kind, a, b, ls, s2):
    """The documented formulas in plain numpy (independent of sklearn's code)."""
    diff = (a[:, None, :] - b[None, :, :]) / ls
    r2 = np.sum(diff * diff, axis=2)
    if kind == "rbf":
        return s2 * np.exp(-r2 / 2.0)
    t = math.sqrt(5.0) * np.sqrt(r2)
    return s2 * (1.0 + t + 5.0 * r2 / 3.0) * np.exp(-t)


def np_lml(kind, x, y, ls, s2, noise):
    ky = np_kernel(kind, x, x, ls, s2) + noise * np.eye(len(y))
    low = np.linalg.cholesky(ky)
    z = np.linalg.solve(low, y)
    alpha = np.linalg.solve(low.T, z)
    return float(-0.5 * y @ alpha - np.sum(np.log(np.diag(low)))
                 - 0.5 * len(y) * math.log(2 * math.pi))


def to_dptune_order(theta_sk, d):
    """sklearn (ln s2, ln l.., ln noise) -> dptune (ln l.., ln s2, ln noise)."""
    t = np.asarray(theta_sk)
    return np.concatenate([t[1:1 + d], t[:1], t[1 + d:]])


def fit(kind, d, x, y, restarts, random_state):
    gpr = GaussianProcessRegressor(sk_kernel(kind, d), alpha=0.0, normalize_y=False,
                                   n_restarts_optimizer=restarts, random_state=random_state)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gpr.fit(x, y)
    n_conv = sum(issubclass(w.category, ConvergenceWarning) for w in caught)
    return gpr, n_conv


def make_case(i, spec):
    name, kind, d, n, noise_sd, g = spec
    rng = np.random.default_rng([SEED, i])
    x = rng.uniform(0.0, 1.0, size=(n, d))
    y = g(x) + noise_sd * rng.standard_normal(n)

    def check(ok, what):
        if not ok:
            sys.exit(f"SELF-CHECK FAILED [{name}]: {what}")

    gpr, n_conv = fit(kind, d, x, y, RESTARTS, SEED + i)
    k = gpr.kernel_
    s2 = float(k.k1.k1.constant_value)
    ls = np.atleast_1d(np.asarray(k.k1.k2.length_scale, dtype=float))
    noise = float(k.k2.noise_level)
    check(ls.shape == (d,), f"lengthscales {ls}")
    # The mapping: sklearn's theta is (ln s2, ln l.., ln noise).
    check(np.allclose(k.theta, np.log(np.concatenate([[s2], ls, [noise]])), rtol=0, atol=1e-12),
          f"theta order {k.theta}")
    lml = float(gpr.log_marginal_likelihood_value_)
    lml_again, grad_sk = gpr.log_marginal_likelihood(k.theta, eval_gradient=True)
    scale = max(1.0, abs(lml))
    check(abs(lml - lml_again) <= LML_TOL * scale, f"lml {lml} vs recomputed {lml_again}")
    lml_numpy = np_lml(kind, x, y, ls, s2, noise)
    check(abs(lml - lml_numpy) <= LML_TOL * scale, f"lml {lml} vs numpy {lml_numpy}")
    theta = to_dptune_order(k.theta, d)
    grad = to_dptune_order(grad_sk, d)
    lo, hi = math.log(BOUNDS[0]), math.log(BOUNDS[1])
    at_bound = [bool(t - lo <= 1e-6 or hi - t <= 1e-6) for t in theta]
    # A bounded optimum: the gradient is small where the parameter is free.
    free_grad = max([abs(gv) for gv, b in zip(grad, at_bound) if not b] or [0.0])
    check(free_grad <= 1e-3 * scale, f"gradient at the fit {grad} (at bound {at_bound})")

    gpr50, _ = fit(kind, d, x, y, 50, SEED + 1000 + i)
    lml50 = float(gpr50.log_marginal_likelihood_value_)

    case = {
        "case_index": i,
        "name": name,
        "kernel": kind,
        "d": d,
        "n": n,
        "noise_sd": finite_num(noise_sd),
        "x": [num_list(row) for row in x],
        "y": num_list(y),
        "fitted": {
            "lengthscales": num_list(ls),
            "signal_variance": finite_num(s2),
            "noise_variance": finite_num(noise),
        },
        "lml": finite_num(lml),
        "gradient": num_list(grad),
        "at_bound": at_bound,
        "lml_numpy": finite_num(lml_numpy),
        "lml_50_restarts": finite_num(lml50),
        "convergence_warnings": n_conv,
    }
    return case


def sanity_check(path, cases):
    doc = json.loads(read_fixture_text(path))
    assert doc["cases"] == cases  # floats round-trip exactly
    assert len(cases) == len(CASES)
    for c in cases:
        n, d = c["n"], c["d"]
        assert len(c["x"]) == n and all(len(r) == d for r in c["x"]) and len(c["y"]) == n
        assert len(c["fitted"]["lengthscales"]) == d
        assert len(c["gradient"]) == d + 2 and len(c["at_bound"]) == d + 2
    return os.path.getsize(path)


def main():
    require_sklearn(EXPECTED_SKLEARN)
    cases = [make_case(i, spec) for i, spec in enumerate(CASES)]
    doc = {
        "generator": GENERATOR,
        "seed": SEED,
        "versions": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "scipy": scipy.__version__,
            "scikit_learn": sklearn.__version__,
        },
        "bounds": {"lengthscale": list(BOUNDS), "signal_variance": list(BOUNDS),
                   "noise_variance": list(BOUNDS)},
        "initial": {"lengthscale": INITIAL_LENGTHSCALE, "signal_variance": INITIAL_SIGNAL,
                    "noise_variance": INITIAL_NOISE},
        "restarts": RESTARTS,
        "conventions": CONVENTIONS,
        "cases": cases,
    }
    dump_sorted(doc, OUT_PATH)
    size = sanity_check(OUT_PATH, cases)
    print(f"wrote {os.path.relpath(OUT_PATH, REPO_ROOT)} ({size} bytes, {len(cases)} cases)")
    print(f"  versions: {doc['versions']}")
    print("  name              lml              lml(50 restarts)  lengthscales / s2 / noise"
          "   at bound   conv. warnings")
    for c in cases:
        f = c["fitted"]
        ls = ", ".join(f"{v:.4g}" for v in f["lengthscales"])
        print(f"  {c['name']:16s} {c['lml']:16.10f} {c['lml_50_restarts']:16.10f}  "
              f"[{ls}] / {f['signal_variance']:.4g} / {f['noise_variance']:.4g}"
              f"   {[int(b) for b in c['at_bound']]}   {c['convergence_warnings']}")


if __name__ == "__main__":
    main()
