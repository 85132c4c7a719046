#!/usr/bin/env python3
"""Generate tests/fixtures/dp_accounting_0.6.0.json: reference values from
Google's dp-accounting 0.6.0 (RDP accountant) plus an independent scipy
computation of the exact mu-GDP trade-off, for dptune's Rust tests to read.

How to run (from the repository root):

    pip install dp-accounting==0.6.0 scipy
    python3 tools/make_dp_accounting_fixture.py

CI never runs this script: the JSON it writes is committed, and the Rust tests
only read that file. Re-run it only to regenerate the fixture on purpose.

The output is deterministic: all random parameters come from numpy's PCG64
generator seeded from SEED (one child stream per case kind, seeded with
[SEED, kind_index]), and every parameter of a candidate case is drawn before
anything is computed, so the set of draws never depends on results. Running the
script twice gives byte-identical output (same dp-accounting/numpy/scipy).

JSON layout
-----------
Top level: {"generator", "dp_accounting_version", "default_orders", "cases"}.
"default_orders" is dp_accounting.rdp.rdp_privacy_accountant.DEFAULT_RDP_ORDERS
as floats (156 values). Every number is a full-precision IEEE double (Python
repr, which round-trips). **JSON null means +infinity** (e.g. an RDP order for
which dp-accounting's _compute_log_a_frac failed to converge and returned inf).
No NaN is ever written.

Every "epsilon"/"delta" below comes from dp_accounting.rdp.RdpAccountant() with
its default orders: get_epsilon_and_optimal_order(delta) -> (epsilon, order) and
get_delta_and_optimal_order(epsilon_for_delta_query) -> (delta_at_epsilon,
delta_order). "rdp" is the accountant's composed RDP vector (acc._rdp), one value
per default order.

Case kinds and their fields:
  dpsgd:   sampling_rate, noise_multiplier, steps, delta, epsilon, order,
           epsilon_for_delta_query, delta_at_epsilon, delta_order, rdp
           Event: SelfComposedDpEvent(PoissonSampledDpEvent(sampling_rate,
           GaussianDpEvent(noise_multiplier)), steps). The first two cases are
           fixed (q=256/60000, sigma=1.1, T=14063, delta=1e-5) and (q=0.01,
           sigma=1.1, T=1000, delta=1e-5); then 3 cases with sampling_rate=1.0;
           then random ones: q log-uniform [1e-4, 0.5], sigma uniform [0.5, 8],
           steps log-uniform integer [1, 100000], delta log-uniform
           [1e-10, 1e-3]. epsilon_for_delta_query = epsilon * U[0.5, 1.5],
           rounded to 6 significant digits. Cases whose RDP computation hit
           dp-accounting's "_compute_log_a_frac failed to converge" warning are
           kept (their rdp holds null at those orders); enough random cases are
           drawn that at least MIN_CLEAN_DPSGD cases have no null.
  gaussian: sensitivity, sigma, delta, epsilon, order, epsilon_for_delta_query,
           delta_at_epsilon, delta_order, rdp
           Event: GaussianDpEvent(sigma / sensitivity), composed once.
           sensitivity uniform [0.1, 5], sigma/sensitivity uniform [0.3, 20]
           (sigma is stored; the noise multiplier is the double sigma/sensitivity).
  zcdp:    rho, delta, epsilon, order, epsilon_for_delta_query,
           delta_at_epsilon, delta_order, rdp
           Event: ZCDpEvent(rho), rho log-uniform [1e-4, 10].
  laplace: noise_multiplier, delta, epsilon, order, rdp
           Event: LaplaceDpEvent(noise_multiplier), b uniform [0.3, 10]
           (pure epsilon 1/b).
  randomized_response: epsilon_pure, noise_parameter, delta, epsilon, order, rdp
           Event: RandomizedResponseDpEvent(noise_parameter=2/(1+exp(eps_pure)),
           num_buckets=2) with RdpAccountant(neighboring_relation=REPLACE_ONE);
           eps_pure uniform [0.1, 5].
  gdp_exact: mu, epsilon, delta_at_epsilon, delta, epsilon_at_delta
           NOT from dp-accounting: exact (eps, delta) curve of mu-GDP,
           delta(eps) = Phi(-eps/mu + mu/2) - exp(eps) Phi(-eps/mu - mu/2),
           computed as exp(logPhi(a)) * (-expm1(eps + logPhi(b) - logPhi(a)))
           with scipy.stats.norm.logcdf (a = -eps/mu + mu/2, b = -eps/mu - mu/2).
           mu uniform [0.1, 8], epsilon uniform [0, 10], delta log-uniform
           [1e-10, 1e-2]. epsilon_at_delta solves delta(eps) = delta with
           scipy.optimize.brentq(xtol=1e-14, rtol=1e-14) applied to the
           equivalent, better-conditioned log(delta(eps)) - log(delta); it is 0
           when delta(0) <= delta. delta_at_epsilon may be exactly 0.0 when the
           true value underflows double precision (< ~5e-324).
  calibrate_dpsgd: sampling_rate, steps, target_epsilon, target_delta,
           noise_multiplier, epsilon_at_noise_multiplier
           noise_multiplier = dp_accounting.calibrate_dp_mechanism(
               RdpAccountant, lambda s: <dpsgd event with sigma=s>,
               target_epsilon, target_delta,
               bracket_interval=LowerEndpointAndGuess(0, 1), discrete=False,
               tol=1e-6);
           epsilon_at_noise_multiplier = RdpAccountant epsilon of that event at
           target_delta. q, steps, target_delta drawn as for dpsgd;
           target_epsilon uniform [0.5, 10]. Candidates whose calibration hit the
           _compute_log_a_frac non-convergence warning are skipped (the answer
           would then depend on which orders dp-accounting silently dropped).
"""

import json
import math
import os
import sys

import numpy as np

from fixture_common import (  # noqa: E402  (tools/ is on sys.path when run as a script)
    _nonconvergence_count,
    dump,
    log_uniform,
    log_uniform_int,
    num,
    num_list,
    print_warning_summary,
    read_fixture_text,
    require_dp_accounting,
)
from scipy import optimize
from scipy.stats import norm

import dp_accounting
from dp_accounting import rdp as dp_rdp
from dp_accounting.rdp import rdp_privacy_accountant as rdp_mod

SEED = 20261122
EXPECTED_VERSION = "0.6.0"
GENERATOR = "tools/make_dp_accounting_fixture.py"

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_PATH = os.path.join(REPO_ROOT, "tests", "fixtures", "dp_accounting_0.6.0.json")

MIN_CLEAN_DPSGD = 40   # dpsgd cases (all, fixed included) with no null in rdp
MIN_RANDOM_DPSGD = 45  # random dpsgd cases drawn at the least
N_GAUSSIAN = 12
N_ZCDP = 12
N_LAPLACE = 8
N_RR = 8
N_GDP = 16
N_CALIBRATE = 8

KIND_INDEX = {
    "dpsgd": 1,
    "gaussian": 2,
    "zcdp": 3,
    "laplace": 4,
    "randomized_response": 5,
    "gdp_exact": 6,
    "calibrate_dpsgd": 7,
}


# --------------------------------------------------------------------------
# Counting dp-accounting's absl warnings (absl logs through the "absl" logger).






# --------------------------------------------------------------------------
# Helpers
def rng_for(kind):
    return np.random.default_rng([SEED, KIND_INDEX[kind]])






def round_sig(x, digits=6):
    if not math.isfinite(x) or x == 0:
        return float(x)
    return float(f"{x:.{digits}g}")






def dpsgd_event(q, sigma, steps):
    return dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)),
        steps,
    )


def eps_delta_fields(acc, delta, factor):
    """epsilon/order at delta, then delta/order at a perturbed epsilon."""
    eps, order = acc.get_epsilon_and_optimal_order(delta)
    out = {"delta": num(delta), "epsilon": num(eps), "order": num(order)}
    if factor is not None:
        if math.isfinite(eps):
            eq = round_sig(float(eps) * factor)
            d, dorder = acc.get_delta_and_optimal_order(eq)
            out["epsilon_for_delta_query"] = num(eq)
            out["delta_at_epsilon"] = num(d)
            out["delta_order"] = num(dorder)
        else:
            out["epsilon_for_delta_query"] = None
            out["delta_at_epsilon"] = None
            out["delta_order"] = None
    return out


# --------------------------------------------------------------------------
# Case builders
def dpsgd_case(q, sigma, steps, delta, factor):
    before = _nonconvergence_count()
    acc = dp_rdp.RdpAccountant()
    acc.compose(dpsgd_event(q, sigma, steps))
    case = {
        "kind": "dpsgd",
        "sampling_rate": num(q),
        "noise_multiplier": num(sigma),
        "steps": int(steps),
    }
    case.update(eps_delta_fields(acc, delta, factor))
    case["rdp"] = num_list(acc._rdp)
    return case, _nonconvergence_count() - before


def make_dpsgd(stats):
    rng = rng_for("dpsgd")
    cases = []
    warned = []

    def add(q, sigma, steps, delta, factor):
        case, nw = dpsgd_case(q, sigma, steps, delta, factor)
        if nw:
            warned.append(len(cases))
        cases.append(case)

    # Fixed cases (factor still drawn from the stream, so they are deterministic).
    add(256 / 60000, 1.1, 14063, 1e-5, float(rng.uniform(0.5, 1.5)))
    add(0.01, 1.1, 1000, 1e-5, float(rng.uniform(0.5, 1.5)))
    # Three non-subsampled cases (sampling_rate exactly 1.0).
    for _ in range(3):
        sigma = float(rng.uniform(0.5, 8.0))
        steps = log_uniform_int(rng, 1, 100000)
        delta = log_uniform(rng, 1e-10, 1e-3)
        factor = float(rng.uniform(0.5, 1.5))
        add(1.0, sigma, steps, delta, factor)
    # Random cases.
    n_random = 0
    while True:
        clean = sum(1 for c in cases if None not in c["rdp"])
        if n_random >= MIN_RANDOM_DPSGD and clean >= MIN_CLEAN_DPSGD:
            break
        q = log_uniform(rng, 1e-4, 0.5)
        sigma = float(rng.uniform(0.5, 8.0))
        steps = log_uniform_int(rng, 1, 100000)
        delta = log_uniform(rng, 1e-10, 1e-3)
        factor = float(rng.uniform(0.5, 1.5))
        add(q, sigma, steps, delta, factor)
        n_random += 1
    stats["dpsgd_warned_case_indices"] = warned
    return cases


def make_gaussian(stats):
    rng = rng_for("gaussian")
    cases = []
    for _ in range(N_GAUSSIAN):
        sensitivity = float(rng.uniform(0.1, 5.0))
        ratio = float(rng.uniform(0.3, 20.0))
        sigma = ratio * sensitivity
        delta = log_uniform(rng, 1e-10, 1e-3)
        factor = float(rng.uniform(0.5, 1.5))
        acc = dp_rdp.RdpAccountant()
        acc.compose(dp_accounting.GaussianDpEvent(sigma / sensitivity))
        case = {"kind": "gaussian", "sensitivity": num(sensitivity), "sigma": num(sigma)}
        case.update(eps_delta_fields(acc, delta, factor))
        case["rdp"] = num_list(acc._rdp)
        cases.append(case)
    return cases


def make_zcdp(stats):
    rng = rng_for("zcdp")
    cases = []
    for _ in range(N_ZCDP):
        rho = log_uniform(rng, 1e-4, 10.0)
        delta = log_uniform(rng, 1e-10, 1e-3)
        factor = float(rng.uniform(0.5, 1.5))
        acc = dp_rdp.RdpAccountant()
        acc.compose(dp_accounting.ZCDpEvent(rho))
        case = {"kind": "zcdp", "rho": num(rho)}
        case.update(eps_delta_fields(acc, delta, factor))
        case["rdp"] = num_list(acc._rdp)
        cases.append(case)
    return cases


def make_laplace(stats):
    rng = rng_for("laplace")
    cases = []
    for _ in range(N_LAPLACE):
        b = float(rng.uniform(0.3, 10.0))
        delta = log_uniform(rng, 1e-10, 1e-3)
        acc = dp_rdp.RdpAccountant()
        acc.compose(dp_accounting.LaplaceDpEvent(noise_multiplier=b))
        case = {"kind": "laplace", "noise_multiplier": num(b)}
        case.update(eps_delta_fields(acc, delta, None))
        case["rdp"] = num_list(acc._rdp)
        cases.append(case)
    return cases


def make_rr(stats):
    rng = rng_for("randomized_response")
    cases = []
    rel = dp_accounting.NeighboringRelation.REPLACE_ONE
    for _ in range(N_RR):
        eps_pure = float(rng.uniform(0.1, 5.0))
        p = 2.0 / (1.0 + math.exp(eps_pure))
        delta = log_uniform(rng, 1e-10, 1e-3)
        acc = dp_rdp.RdpAccountant(neighboring_relation=rel)
        acc.compose(dp_accounting.RandomizedResponseDpEvent(noise_parameter=p, num_buckets=2))
        case = {"kind": "randomized_response", "epsilon_pure": num(eps_pure),
                "noise_parameter": num(p)}
        case.update(eps_delta_fields(acc, delta, None))
        case["rdp"] = num_list(acc._rdp)
        cases.append(case)
    return cases


# ---- exact mu-GDP -----------------------------------------------------------
def gdp_log_delta(eps, mu):
    """log of delta(eps) for mu-GDP (finite for all eps >= 0, mu > 0)."""
    a = -eps / mu + mu / 2.0
    b = -eps / mu - mu / 2.0
    la = float(norm.logcdf(a))
    lb = float(norm.logcdf(b))
    return la + math.log(-math.expm1(eps + lb - la))


def gdp_delta(eps, mu):
    a = -eps / mu + mu / 2.0
    b = -eps / mu - mu / 2.0
    la = float(norm.logcdf(a))
    lb = float(norm.logcdf(b))
    return math.exp(la) * (-math.expm1(eps + lb - la))


def gdp_epsilon(delta, mu):
    if gdp_delta(0.0, mu) <= delta:
        return 0.0
    target = math.log(delta)
    f = lambda e: gdp_log_delta(e, mu) - target
    lo, hi = 0.0, 1.0
    while f(hi) > 0:
        lo, hi = hi, 2.0 * hi
    return float(optimize.brentq(f, lo, hi, xtol=1e-14, rtol=1e-14, maxiter=1000))


def make_gdp(stats):
    rng = rng_for("gdp_exact")
    cases = []
    for _ in range(N_GDP):
        mu = float(rng.uniform(0.1, 8.0))
        eps = float(rng.uniform(0.0, 10.0))
        delta = log_uniform(rng, 1e-10, 1e-2)
        cases.append({
            "kind": "gdp_exact",
            "mu": num(mu),
            "epsilon": num(eps),
            "delta_at_epsilon": num(gdp_delta(eps, mu)),
            "delta": num(delta),
            "epsilon_at_delta": num(gdp_epsilon(delta, mu)),
        })
    return cases


# ---- calibration --------------------------------------------------------------
def make_calibrate(stats):
    rng = rng_for("calibrate_dpsgd")
    cases = []
    skipped = []
    while len(cases) < N_CALIBRATE:
        q = log_uniform(rng, 1e-4, 0.5)
        steps = log_uniform_int(rng, 1, 100000)
        target_delta = log_uniform(rng, 1e-10, 1e-3)
        target_epsilon = float(rng.uniform(0.5, 10.0))
        before = _nonconvergence_count()
        sigma = dp_accounting.calibrate_dp_mechanism(
            dp_rdp.RdpAccountant,
            lambda s, q=q, steps=steps: dpsgd_event(q, s, steps),
            target_epsilon,
            target_delta,
            bracket_interval=dp_accounting.LowerEndpointAndGuess(0, 1),
            discrete=False,
            tol=1e-6,
        )
        eps_at = dp_rdp.RdpAccountant().compose(dpsgd_event(q, sigma, steps)).get_epsilon(target_delta)
        if _nonconvergence_count() != before:
            skipped.append({"sampling_rate": q, "steps": steps,
                            "target_epsilon": target_epsilon,
                            "target_delta": target_delta, "noise_multiplier": float(sigma)})
            continue
        cases.append({
            "kind": "calibrate_dpsgd",
            "sampling_rate": num(q),
            "steps": int(steps),
            "target_epsilon": num(target_epsilon),
            "target_delta": num(target_delta),
            "noise_multiplier": num(sigma),
            "epsilon_at_noise_multiplier": num(eps_at),
        })
    stats["calibrate_skipped"] = skipped
    return cases


# --------------------------------------------------------------------------


def sanity_check(path, stats):
    doc = json.loads(read_fixture_text(path))
    assert doc["dp_accounting_version"] == EXPECTED_VERSION
    orders = doc["default_orders"]
    assert len(orders) == 156 and orders == [float(o) for o in rdp_mod.DEFAULT_RDP_ORDERS]

    def walk(x):
        if isinstance(x, float):
            assert not math.isnan(x)
        elif isinstance(x, list):
            for y in x:
                walk(y)
        elif isinstance(x, dict):
            for y in x.values():
                walk(y)
    walk(doc)

    counts = {}
    for c in doc["cases"]:
        counts[c["kind"]] = counts.get(c["kind"], 0) + 1
        if "rdp" in c:
            assert len(c["rdp"]) == 156
    minimum = {"dpsgd": 40, "gaussian": 10, "zcdp": 10, "laplace": 6,
               "randomized_response": 6, "gdp_exact": 10, "calibrate_dpsgd": 6}
    for k, m in minimum.items():
        assert counts.get(k, 0) >= m, (k, counts.get(k, 0))
    dpsgd = [c for c in doc["cases"] if c["kind"] == "dpsgd"]
    clean = sum(1 for c in dpsgd if None not in c["rdp"])
    assert clean >= 40, clean
    assert sum(1 for c in dpsgd if c["sampling_rate"] == 1.0) == 3

    # Published golden values (TF-Privacy MNIST example).
    first = dpsgd[0]
    assert (first["sampling_rate"], first["noise_multiplier"], first["steps"], first["delta"]) == (
        256 / 60000, 1.1, 14063, 1e-5)
    golden_ok = True
    if round(first["epsilon"], 6) != 2.596656:
        golden_ok = False
        print(f"GOLDEN MISMATCH epsilon: {first['epsilon']!r} vs 2.596656")
    for o, want in ((2.0, 0.329014798), (4.0, 0.668461534), (8.0, 1.382970352)):
        got = first["rdp"][orders.index(o)]
        if round(got, 9) != want:
            golden_ok = False
            print(f"GOLDEN MISMATCH rdp@{o}: {got!r} vs {want}")

    # Independent checks of the gdp_exact cases.
    worst_rel = 0.0
    try:
        import mpmath
        mpmath.mp.dps = 60
        for c in doc["cases"]:
            if c["kind"] != "gdp_exact":
                continue
            mu = mpmath.mpf(c["mu"])

            def d(e):
                e = mpmath.mpf(e)
                return mpmath.ncdf(-e / mu + mu / 2) - mpmath.exp(e) * mpmath.ncdf(-e / mu - mu / 2)
            exact = d(c["epsilon"])
            if exact > mpmath.mpf("1e-300"):
                worst_rel = max(worst_rel, float(abs(c["delta_at_epsilon"] / exact - 1)))
            else:
                assert c["delta_at_epsilon"] < 1e-290
            worst_rel = max(worst_rel, float(abs(d(c["epsilon_at_delta"]) / c["delta"] - 1)))
        stats["gdp_mpmath_worst_rel_err"] = worst_rel
    except ImportError:
        stats["gdp_mpmath_worst_rel_err"] = "mpmath not installed; skipped"

    return counts, golden_ok, clean


def main():
    require_dp_accounting(EXPECTED_VERSION)

    stats = {}
    cases = []
    cases += make_dpsgd(stats)
    cases += make_gaussian(stats)
    cases += make_zcdp(stats)
    cases += make_laplace(stats)
    cases += make_rr(stats)
    cases += make_gdp(stats)
    cases += make_calibrate(stats)

    doc = {
        "generator": GENERATOR,
        "dp_accounting_version": EXPECTED_VERSION,
        "default_orders": [float(o) for o in rdp_mod.DEFAULT_RDP_ORDERS],
        "cases": cases,
    }
    dump(doc, OUT_PATH)
    counts, golden_ok, clean = sanity_check(OUT_PATH, stats)

    print(f"wrote {os.path.relpath(OUT_PATH, REPO_ROOT)}")
    for k, n in counts.items():
        print(f"  {k:20s} {n}")
    print(f"  dpsgd cases without null rdp: {clean}")
    print(f"  dpsgd cases that hit the _compute_log_a_frac warning (index within dpsgd): "
          f"{stats['dpsgd_warned_case_indices']}")
    print(f"  calibrate candidates skipped for that warning: {len(stats['calibrate_skipped'])}")
    for s in stats["calibrate_skipped"]:
        print(f"    {s}")
    print_warning_summary()
    print(f"  gdp_exact worst relative error vs mpmath: {stats['gdp_mpmath_worst_rel_err']}")
    inf_fields = []
    for i, c in enumerate(cases):
        for k, v in c.items():
            if v is None:
                inf_fields.append((i, c["kind"], k))
    print(f"  scalar fields that are +inf (null): {inf_fields}")
    print(f"  golden values (2.596656; rdp@2,4,8): {'OK' if golden_ok else 'MISMATCH'}")
    if not golden_ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
