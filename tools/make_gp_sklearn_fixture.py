#!/usr/bin/env python3
"""Generate tests/fixtures/gp_sklearn.json: exact Gaussian-process posteriors
with FIXED hyperparameters (no fitting) computed by scikit-learn's
GaussianProcessRegressor, as an independent reference for dptune's Rust GP
module (src/gp/).

How to run (from the repository root):

    pip install scikit-learn==1.9.1 mpmath
    python3 tools/make_gp_sklearn_fixture.py

CI never runs this script: the JSON it writes is committed, and the Rust tests
only read that file. Re-run it only to regenerate the fixture on purpose; it
exits unless scikit-learn is exactly EXPECTED_SKLEARN.

Determinism: every case draws from its own numpy PCG64 stream,
np.random.default_rng([SEED, case_index]), and draws ALL its inputs (in the
order x, y-noise, lengthscales, signal variance, xs, duplicate indices) before
anything is computed. Running the script twice gives a byte-identical file
(same python/numpy/scipy/scikit-learn/mpmath).

Conventions (the Rust side must match them exactly)
---------------------------------------------------
Inputs are rows: x is n x d (n training points), xs is m x d (m test points).
ARD kernels with per-dimension lengthscales l_j and signal variance s2:
    r(a, b) = sqrt( sum_j ((a_j - b_j) / l_j)^2 )
    rbf:      k = s2 * exp(-r^2 / 2)
    matern32: k = s2 * (1 + sqrt(3) r) * exp(-sqrt(3) r)
    matern52: k = s2 * (1 + sqrt(5) r + 5 r^2 / 3) * exp(-sqrt(5) r)
In scikit-learn these are
    ConstantKernel(s2, constant_value_bounds="fixed")
        * RBF(length_scale=ls, length_scale_bounds="fixed")           (rbf)
        * Matern(length_scale=ls, nu=1.5 | 2.5, length_scale_bounds="fixed")
(sklearn forms the distance as ||a/l - b/l||, i.e. it divides first; that only
changes rounding.) The observation-noise variance sigma2 ("noise_variance") is
added to the TRAINING diagonal only:
    GaussianProcessRegressor(kernel, alpha=sigma2, optimizer=None,
                             normalize_y=False)
so K_y = K(x, x) + sigma2 I, prior mean is zero, and the predictive
mean/variance/covariance at xs are those of the LATENT f (no sigma2 added):
    mean     = K(xs, x) K_y^{-1} y
    cov      = K(xs, xs) - K(xs, x) K_y^{-1} K(x, xs)      (predict(return_cov=True))
    variance = diag(cov)  -- taken from the return_cov diagonal, NOT from
               return_std**2 (sklearn clips negative return_std variances to 0
               with a warning; the return_cov diagonal is never clipped). The
               script checks return_std**2 == diag(cov) to 1e-12 * s2 anyway.
    lml      = log p(y | x) = -1/2 y^T K_y^{-1} y - sum_i ln L_ii - n/2 ln(2 pi),
               L = chol(K_y) (so sigma2 IS included): sklearn's
               gpr.log_marginal_likelihood_value_, which fit() sets with
               optimizer=None by evaluating log_marginal_likelihood at the
               (empty) theta of the all-fixed kernel. The script checks it
               against gpr.log_marginal_likelihood(gpr.kernel_.theta) and
               against its own numpy Cholesky formula to 1e-10 * max(1, |lml|)
               and aborts on a mismatch.
    k_x_xs   = K(x, xs), n x m (kernel_(x, xs)), for checking kernel formulas
               in isolation (includes s2). The script checks it against its own
               numpy implementation of the formulas above to 1e-12 * s2.

Cases (18, in this order): kernel in (rbf, matern32, matern52) x d in (1, 2, 5)
x n in (5, 40), n fastest, kernel slowest; case_index 0..17.
    x      ~ U[0,1]^{n x d}
    y      = sin(3 * sum_j x_j) + 0.1 * N(0,1)
    lengthscales_j ~ U[0.2, 1.0] (one per dimension), signal_variance ~ U[0.5, 2.0]
    noise_variance = 1e-2 if (kernel_index + d_index + n_index) is even, else
               1e-6 (a checkerboard: alternates between neighbouring cases
               along every axis, so every kernel, every d and every n meets
               both values)
    xs     ~ U[0,1]^{m x d}, m = 7, then row dup_test_index (uniform in 0..m-1)
             is overwritten with a bit-exact copy of x row dup_train_index
             (uniform in 0..n-1).

JSON layout
-----------
Top level: {"conventions", "generator", "seed", "versions", "cases"} (header
keys first, sorted, one per line; then "cases", one case per line). "versions" = {"mpmath", "numpy", "python", "scikit_learn",
"scipy"}; "conventions" = the rules above as short strings. Every float is a
full-precision IEEE double (Python repr, round-trips); no NaN/Infinity/null.
Matrices are lists of rows (row-major). Each case (keys sorted, one per line):
    case_index int, name str ("<kernel>_d<d>_n<n>"), kernel str
    ("rbf" | "matern32" | "matern52"), d int, n int, m int,
    lengthscales [d], signal_variance float, noise_variance float,
    x [n][d], y [n], xs [m][d], dup_test_index int, dup_train_index int,
    mean [m], variance [m], cov [m][m], lml float, k_x_xs [n][m],
    cond_ky float   (2-norm condition number of K_y, numpy, 3 significant digits)
    sklearn_abs_err {"mean", "variance", "cov", "lml", "k_x_xs"}: max absolute
        difference between the stored sklearn values and a 50-digit mpmath
        evaluation of the same formulas on the same (double) inputs, 3
        significant digits. This is sklearn's own rounding error: use it to
        pick tolerances (ill-conditioned K_y with noise 1e-6 makes the
        near-zero variance at the duplicated training point lose relative
        accuracy, so compare variances with an absolute floor).

Accuracy and suggested tolerances
---------------------------------
Two cases are badly conditioned by design of the grid: rbf_d1_n40 and
matern52_d1_n40 (noise 1e-6, cond(K_y) ~ 3e7 and 5e7; their lml is ~ -1e5
because the model noise is far below the 0.1 data noise). There sklearn itself
is off from the 50-digit values by up to ~1e-9 relative in mean, ~4e-9 relative
in the (~2e-7) variances and ~3e-10 relative in lml; every other case is within
~1e-12. A plain independent numpy reimplementation (its own kernel arithmetic,
LU solves) lands within 2.3e-9 (mean), 7.1e-9 (variance), 6.0e-10 (lml) and
5.3e-15 (k_x_xs) relative of the stored values. Some cov entries are exactly 0
or ~1e-12, so compare cov (and variance) as
    |got - want| <= 1e-8 * |want| + 1e-12 * signal_variance
(the numpy reimplementation's worst absolute cov error is 1.5e-15 * s2).

scikit-learn behaviour relied on (1.9.1, sklearn/gaussian_process/_gpr.py)
------------------------------------------------------------------------
* fit() with optimizer=None sets log_marginal_likelihood_value_ =
  log_marginal_likelihood(kernel_.theta) (theta is the EMPTY array here, all
  hyperparameters being fixed) and this LML uses K + alpha I, i.e. the noise.
* predict(return_std=True) sets negative variances to 0 (with a "Predicted
  variances smaller than 0" warning); predict(return_cov=True) does not clip.
  No variance here is negative and no such warning was raised.
* return_std and return_cov cannot be requested in the same call.
* alpha is added to the diagonal of the training kernel matrix only, both in
  fit and in the LML; predictions are for the latent function (no alpha).
* RBF's K(x, x) gets its diagonal set to exactly 1 (times s2); Matern computes
  distances as ||a/l - b/l|| via scipy pdist/cdist.
"""

import json
import math
import os
import platform
import sys
import warnings

import numpy as np

from fixture_common import dump_sorted, finite_num, num, num_list, read_fixture_text, require_sklearn  # noqa: E402  (tools/ on sys.path)

import mpmath
import scipy
import sklearn
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern

SEED = 20261124
EXPECTED_SKLEARN = "1.9.1"
GENERATOR = "tools/make_gp_sklearn_fixture.py"

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_PATH = os.path.join(REPO_ROOT, "tests", "fixtures", "gp_sklearn.json")

KERNELS = ("rbf", "matern32", "matern52")
DIMS = (1, 2, 5)
NS = (5, 40)
M_TEST = 7
NOISES = (1e-2, 1e-6)
MP_DPS = 50

LML_TOL = 1e-10      # relative to max(1, |lml|)
KERNEL_TOL = 1e-12   # relative to s2
STD_TOL = 1e-12      # relative to s2

CONVENTIONS = {
    "inputs": "x is n x d and xs is m x d, one point per row; matrices are lists of rows",
    "distance": "r(a,b) = sqrt(sum_j ((a_j - b_j)/l_j)^2), l = lengthscales (ARD)",
    "rbf": "s2 * exp(-r^2/2)",
    "matern32": "s2 * (1 + sqrt(3) r) * exp(-sqrt(3) r)",
    "matern52": "s2 * (1 + sqrt(5) r + 5 r^2/3) * exp(-sqrt(5) r)",
    "sklearn_kernel": "ConstantKernel(s2, fixed) * RBF(ls, fixed) | Matern(ls, nu=1.5|2.5, fixed)",
    "sklearn_regressor": "GaussianProcessRegressor(kernel, alpha=noise_variance, optimizer=None, normalize_y=False)",
    "prior_mean": "zero",
    "noise": "K_y = K(x,x) + noise_variance * I; noise added to the training diagonal only",
    "mean": "K(xs,x) K_y^-1 y (latent f)",
    "cov": "K(xs,xs) - K(xs,x) K_y^-1 K(x,xs) (latent f, no noise added), from predict(return_cov=True)",
    "variance": "diag(cov) from predict(return_cov=True), never clipped (not return_std**2)",
    "lml": "-1/2 y^T K_y^-1 y - sum ln diag(chol(K_y)) - n/2 ln(2 pi), noise included; sklearn log_marginal_likelihood_value_",
    "k_x_xs": "K(x, xs), n x m, signal variance included",
    "noise_schedule": "noise_variance = 1e-2 if (kernel_index + d_index + n_index) even else 1e-6",
    "duplicate_point": "xs[dup_test_index] is a bit-exact copy of x[dup_train_index]",
    "sklearn_abs_err": "max |sklearn - 50-digit mpmath| per quantity, same double inputs, 3 significant digits",
}


def fmat(a):
    return [num_list(row) for row in np.asarray(a)]


def sig3(v):
    return float(f"{float(v):.3g}")


# --------------------------------------------------------------------------
# Kernels
def sk_kernel(kind, ls, s2):
    c = ConstantKernel(s2, constant_value_bounds="fixed")
    if kind == "rbf":
        return c * RBF(length_scale=ls, length_scale_bounds="fixed")
    nu = {"matern32": 1.5, "matern52": 2.5}[kind]
    return c * Matern(length_scale=ls, nu=nu, length_scale_bounds="fixed")


def np_kernel(kind, a, b, ls, s2):
    """The documented formulas in plain numpy (independent of sklearn's code)."""
    diff = (a[:, None, :] - b[None, :, :]) / ls
    r2 = np.sum(diff * diff, axis=2)
    r = np.sqrt(r2)
    if kind == "rbf":
        return s2 * np.exp(-r2 / 2.0)
    if kind == "matern32":
        t = math.sqrt(3.0) * r
        return s2 * (1.0 + t) * np.exp(-t)
    t = math.sqrt(5.0) * r
    return s2 * (1.0 + t + 5.0 * r2 / 3.0) * np.exp(-t)


def mp_kernel_entry(kind, a, b, ls, s2):
    r2 = mpmath.fsum(((mpmath.mpf(float(ai)) - mpmath.mpf(float(bi))) / mpmath.mpf(float(li))) ** 2
                     for ai, bi, li in zip(a, b, ls))
    r = mpmath.sqrt(r2)
    s2 = mpmath.mpf(float(s2))
    if kind == "rbf":
        return s2 * mpmath.exp(-r2 / 2)
    if kind == "matern32":
        t = mpmath.sqrt(3) * r
        return s2 * (1 + t) * mpmath.exp(-t)
    t = mpmath.sqrt(5) * r
    return s2 * (1 + t + 5 * r2 / 3) * mpmath.exp(-t)


def mp_matrix(kind, a, b, ls, s2):
    return mpmath.matrix([[mp_kernel_entry(kind, ai, bj, ls, s2) for bj in b] for ai in a])


# --------------------------------------------------------------------------
# Independent references
def np_lml(kxx, y, noise):
    """-1/2 y^T alpha - sum ln L_ii - n/2 ln 2pi via numpy's own Cholesky of
    K_y = kxx + noise I (alpha = K_y^-1 y by two triangular solves)."""
    ky = kxx + noise * np.eye(len(y))
    low = np.linalg.cholesky(ky)
    z = np.linalg.solve(low, y)          # L z = y
    alpha = np.linalg.solve(low.T, z)    # L^T alpha = z
    return float(-0.5 * y @ alpha - np.sum(np.log(np.diag(low))) - 0.5 * len(y) * math.log(2 * math.pi))


def mp_posterior(kind, x, y, xs, ls, s2, noise):
    """mean, cov, lml, K(x, xs) at MP_DPS digits for the given double inputs."""
    with mpmath.workdps(MP_DPS):
        n = len(y)
        ky = mp_matrix(kind, x, x, ls, s2)
        for i in range(n):
            ky[i, i] += mpmath.mpf(float(noise))
        kxs = mp_matrix(kind, x, xs, ls, s2)
        kss = mp_matrix(kind, xs, xs, ls, s2)
        low = mpmath.cholesky(ky)
        yv = mpmath.matrix([mpmath.mpf(float(v)) for v in y])

        def lower_solve(b):
            out = mpmath.matrix(b.rows, b.cols)
            for c in range(b.cols):
                for i in range(n):
                    s = b[i, c] - mpmath.fsum(low[i, k] * out[k, c] for k in range(i))
                    out[i, c] = s / low[i, i]
            return out

        z = lower_solve(yv)                   # L z = y
        v = lower_solve(kxs)                  # L V = K(x, xs)
        mean = v.T * z                        # K(xs,x) K_y^-1 y
        cov = kss - v.T * v
        lml = (-mpmath.fsum(zi * zi for zi in z) / 2
               - mpmath.fsum(mpmath.log(low[i, i]) for i in range(n))
               - mpmath.mpf(n) / 2 * mpmath.log(2 * mpmath.pi))
        to_np = lambda mat: np.array([[float(mat[i, j]) for j in range(mat.cols)]
                                      for i in range(mat.rows)])
        return (to_np(mean)[:, 0], to_np(cov), float(lml), to_np(kxs))


# --------------------------------------------------------------------------
def draw_case(case_index, d, n):
    rng = np.random.default_rng([SEED, case_index])
    x = rng.uniform(0.0, 1.0, size=(n, d))
    eps = rng.standard_normal(n)
    ls = rng.uniform(0.2, 1.0, size=d)
    s2 = float(rng.uniform(0.5, 2.0))
    xs = rng.uniform(0.0, 1.0, size=(M_TEST, d))
    dup_test = int(rng.integers(M_TEST))
    dup_train = int(rng.integers(n))
    xs[dup_test] = x[dup_train]
    y = np.sin(3.0 * np.sum(x, axis=1)) + 0.1 * eps
    return x, y, ls, s2, xs, dup_test, dup_train


def make_case(case_index, ki, di, ni):
    kind, d, n = KERNELS[ki], DIMS[di], NS[ni]
    noise = NOISES[(ki + di + ni) % 2]
    x, y, ls, s2, xs, dup_test, dup_train = draw_case(case_index, d, n)
    name = f"{kind}_d{d}_n{n}"

    gpr = GaussianProcessRegressor(sk_kernel(kind, ls, s2), alpha=noise,
                                   optimizer=None, normalize_y=False)
    gpr.fit(x, y)
    assert gpr.kernel_.theta.size == 0, (name, gpr.kernel_.theta)  # all fixed
    mean, cov = gpr.predict(xs, return_cov=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mean_s, std = gpr.predict(xs, return_std=True)
    clipped = [str(w.message) for w in caught]
    variance = np.diag(cov).copy()
    lml = float(gpr.log_marginal_likelihood_value_)
    kxs = gpr.kernel_(x, xs)
    assert mean.shape == (M_TEST,) and cov.shape == (M_TEST, M_TEST) and kxs.shape == (n, M_TEST)

    # ---- self-checks (abort on mismatch) ----
    def check(ok, what):
        if not ok:
            sys.exit(f"SELF-CHECK FAILED [{name}]: {what}")

    lml_theta = float(gpr.log_marginal_likelihood(gpr.kernel_.theta))
    # The LML-formula check uses sklearn's own K(x, x): for the ill-conditioned
    # cases (cond(K_y) ~ 5e7) the last-bit differences between sklearn's and our
    # kernel evaluation alone move the LML by ~1e-9 relative, which would hide
    # what this checks (the formula, and that alpha = noise sits on the diagonal).
    # The kernel formulas are checked separately below, and the whole chain is
    # compared with a 50-digit evaluation.
    lml_np = np_lml(gpr.kernel_(x), y, noise)
    lml_np_indep = np_lml(np_kernel(kind, x, x, ls, s2), y, noise)
    scale = max(1.0, abs(lml))
    check(abs(lml - lml_theta) <= LML_TOL * scale, f"lml {lml!r} vs log_marginal_likelihood(theta) {lml_theta!r}")
    check(abs(lml - lml_np) <= LML_TOL * scale, f"lml {lml!r} vs numpy Cholesky {lml_np!r}")
    kxs_np = np_kernel(kind, x, xs, ls, s2)
    check(np.max(np.abs(kxs - kxs_np)) <= KERNEL_TOL * s2, "k_x_xs vs numpy formulas")
    kxx_np = np_kernel(kind, x, x, ls, s2)
    check(np.max(np.abs(gpr.kernel_(x) - kxx_np)) <= KERNEL_TOL * s2, "K(x,x) vs numpy formulas")
    check(np.array_equal(mean, mean_s), "mean differs between return_cov and return_std")
    check(np.max(np.abs(std ** 2 - np.maximum(variance, 0.0))) <= STD_TOL * s2, "return_std**2 vs diag(cov)")
    check(np.all(variance > 0.0), f"non-positive posterior variance {variance}")
    check(np.array_equal(xs[dup_test], x[dup_train]), "duplicate point not bit-exact")

    # ---- 50-digit reference ----
    mp_mean, mp_cov, mp_lml, mp_kxs = mp_posterior(kind, x, y, xs, ls, s2, noise)
    err = {
        "mean": sig3(np.max(np.abs(mean - mp_mean))),
        "variance": sig3(np.max(np.abs(variance - np.diag(mp_cov)))),
        "cov": sig3(np.max(np.abs(cov - mp_cov))),
        "lml": sig3(abs(lml - mp_lml)),
        "k_x_xs": sig3(np.max(np.abs(kxs - mp_kxs))),
    }
    # gross sanity: sklearn must agree with the exact values far beyond 1e-6
    check(err["mean"] <= 1e-6 * max(1.0, np.max(np.abs(mp_mean))), f"mean vs mpmath {err}")
    check(err["cov"] <= 1e-6 * s2, f"cov vs mpmath {err}")
    check(err["lml"] <= 1e-6 * scale, f"lml vs mpmath {err}")
    rel_var = np.abs(variance - np.diag(mp_cov)) / np.abs(np.diag(mp_cov))
    rel_mean = np.abs(mean - mp_mean) / np.maximum(np.abs(mp_mean), 1e-300)

    case = {
        "case_index": case_index,
        "name": name,
        "kernel": kind,
        "d": d,
        "n": n,
        "m": M_TEST,
        "lengthscales": num_list(ls),
        "signal_variance": finite_num(s2),
        "noise_variance": finite_num(noise),
        "x": fmat(x),
        "y": num_list(y),
        "xs": fmat(xs),
        "dup_test_index": dup_test,
        "dup_train_index": dup_train,
        "mean": num_list(mean),
        "variance": num_list(variance),
        "cov": fmat(cov),
        "lml": finite_num(lml),
        "k_x_xs": fmat(kxs),
        "cond_ky": sig3(np.linalg.cond(kxx_np + noise * np.eye(n))),
        "sklearn_abs_err": err,
    }
    diag = {
        "name": name,
        "noise": noise,
        "cond": case["cond_ky"],
        "err": err,
        "max_rel_mean": float(np.max(rel_mean)),
        "max_rel_var": float(np.max(rel_var)),
        "rel_var_dup": float(rel_var[dup_test]),
        "var_dup": float(variance[dup_test]),
        "lml_rel_np": abs(lml - lml_np) / scale,
        "lml_rel_np_indep": abs(lml - lml_np_indep) / scale,
        "lml_rel_mp": abs(lml - mp_lml) / scale,
        "clip_warnings": clipped,
    }
    return case, diag


def sanity_check(path, cases):
    doc = json.loads(read_fixture_text(path))
    assert doc["cases"] == cases  # floats round-trip exactly
    assert len(doc["cases"]) == len(KERNELS) * len(DIMS) * len(NS)
    combos = {(c["kernel"], c["d"], c["n"]) for c in doc["cases"]}
    assert len(combos) == 18
    for kind in KERNELS:
        assert {c["noise_variance"] for c in doc["cases"] if c["kernel"] == kind} == set(NOISES)
    for c in doc["cases"]:
        n, d, m = c["n"], c["d"], c["m"]
        assert len(c["x"]) == n and all(len(r) == d for r in c["x"])
        assert len(c["xs"]) == m and all(len(r) == d for r in c["xs"])
        assert len(c["y"]) == n and len(c["mean"]) == m and len(c["variance"]) == m
        assert len(c["cov"]) == m and all(len(r) == m for r in c["cov"])
        assert len(c["k_x_xs"]) == n and all(len(r) == m for r in c["k_x_xs"])
        assert len(c["lengthscales"]) == d
        assert c["variance"] == [c["cov"][i][i] for i in range(m)]
    return os.path.getsize(path)


def main():
    require_sklearn(EXPECTED_SKLEARN)
    cases, diags = [], []
    idx = 0
    for ki in range(len(KERNELS)):
        for di in range(len(DIMS)):
            for ni in range(len(NS)):
                case, diag = make_case(idx, ki, di, ni)
                cases.append(case)
                diags.append(diag)
                idx += 1

    doc = {
        "generator": GENERATOR,
        "seed": SEED,
        "versions": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "scipy": scipy.__version__,
            "scikit_learn": sklearn.__version__,
            "mpmath": mpmath.__version__,
        },
        "conventions": CONVENTIONS,
        "cases": cases,
    }
    dump_sorted(doc, OUT_PATH)
    size = sanity_check(OUT_PATH, cases)

    print(f"wrote {os.path.relpath(OUT_PATH, REPO_ROOT)} ({size} bytes, {len(cases)} cases)")
    print(f"  versions: {doc['versions']}")
    print("  name              noise   cond(K_y)  |err| mean / var / cov / lml / kxs (vs mpmath)"
          "   max rel mean, rel var, rel var@dup, var@dup")
    for g in diags:
        e = g["err"]
        print(f"  {g['name']:16s} {g['noise']:7.0e} {g['cond']:10.3g}  "
              f"{e['mean']:.1e} {e['variance']:.1e} {e['cov']:.1e} {e['lml']:.1e} {e['k_x_xs']:.1e}"
              f"   {g['max_rel_mean']:.1e} {g['max_rel_var']:.1e} {g['rel_var_dup']:.1e} {g['var_dup']:.3e}")
    for key, what in (("lml_rel_np", "numpy Cholesky on sklearn's K(x,x)"),
                      ("lml_rel_np_indep", "numpy Cholesky on numpy-formula K(x,x)"),
                      ("lml_rel_mp", "50-digit mpmath")):
        worst = max(diags, key=lambda g: g[key])
        print(f"  worst |lml - {what}| / max(1,|lml|): {worst[key]:.2e} ({worst['name']})")
    clips = [(g["name"], g["clip_warnings"]) for g in diags if g["clip_warnings"]]
    print(f"  return_std variance-clipping warnings: {clips if clips else 'none'}")


if __name__ == "__main__":
    main()
