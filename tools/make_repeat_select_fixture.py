#!/usr/bin/env python3
"""Generate tests/fixtures/repeat_select_dp_accounting_0.6.0.json: reference
values from Google's dp-accounting 0.6.0 RDP accountant for "repeat and select
the best run" (Papernot & Steinke, https://arxiv.org/abs/2110.03620), i.e.
dp_accounting.dp_event.RepeatAndSelectDpEvent, for dptune's Rust tests to read.

How to run (from the repository root):

    pip install dp-accounting==0.6.0 scipy
    python3 tools/make_repeat_select_fixture.py

CI never runs this script: the JSON it writes is committed, and the Rust tests
only read that file. Re-run it only to regenerate the fixture on purpose.

The output is deterministic: all random parameters come from numpy's PCG64
generator seeded from SEED (one child stream per base kind, seeded with
[SEED, kind_index]), every parameter of a candidate case is drawn before
anything is computed, and the shape (and the means fixed at 10/100) are assigned
by the case's position, not drawn. Running the script twice gives byte-identical
output (same dp-accounting/numpy).

What dp-accounting 0.6.0 does (rdp_privacy_accountant.py)
-------------------------------------------------------
RepeatAndSelectDpEvent(event, mean, shape) is not exported at the package top
level; it lives in dp_accounting.dp_event. RdpAccountant._maybe_compose handles
it by saving the RDP composed so far, zeroing the accumulator, composing the
inner event ONCE (count 1; any event the accountant supports is accepted,
including LaplaceDpEvent and nested SelfComposed/PoissonSampled events), and
then setting rdp = count * _compute_rdp_repeat_and_select(orders, inner_rdp,
mean, shape) + saved_rdp. _compute_rdp_repeat_and_select raises ValueError for
shape < 0 or NaN and for mean < 1 (or NaN). With shape == inf (Poisson number
of repetitions, Theorem 6 of the paper):
    rdp_out[i] = rdp[i] + mean * deltahat_i + log(mean) / (order_i - 1),
    deltahat_i = compute_delta(orders, rdp, log1p(1 / (order_i - 1)))[0]
(no monotonicity pass; compute_delta is the same Proposition-12 conversion used
by get_delta, clamped to <= 1). Otherwise (truncated negative binomial with
shape eta; eta = 0 logarithmic, eta = 1 geometric; Theorem 2):
    gamma = _gamma_truncated_negative_binomial(eta, mean)   (1/mean for eta=1,
            else bisection on the TNB mean, relative tolerance 1e-9, returning
            the lower end of the bracket)
    c = (1 + eta) * min_j ((1 - 1/order_j) * rdp[j] - log(gamma) / order_j)
    rdp_out[i] = rdp[i] + log(mean) / (order_i - 1) + c
followed by rdp_out[i] = min_{j: order_j >= order_i} rdp_out[j] (monotonicity).
All default orders are > 1, so no order is skipped.

JSON layout
-----------
Top level: {"generator", "dp_accounting_version", "default_orders", "cases"}.
"default_orders" is dp_accounting.rdp.rdp_privacy_accountant.DEFAULT_RDP_ORDERS
as floats (156 values). Every number is a full-precision IEEE double (Python
repr, which round-trips), except "steps" (an integer). **JSON null means
+infinity** (in "rdp"; and "shape": null is the Poisson distribution, shape =
float('inf')). No NaN is ever written.

Each case:
  {"base": {"kind": "zcdp", "rho": R}
         | {"kind": "laplace", "noise_multiplier": B}
         | {"kind": "dpsgd", "sampling_rate": Q, "noise_multiplier": S, "steps": T},
   "shape": eta (float) or null (Poisson),
   "mean": M, "delta": D, "epsilon": E, "order": O, "base_epsilon": E0,
   "rdp": [156 values]}
Base events: ZCDpEvent(R); LaplaceDpEvent(B) (pure epsilon 1/B);
SelfComposedDpEvent(PoissonSampledDpEvent(Q, GaussianDpEvent(S)), T).
(E, O) = RdpAccountant() (default orders), compose
RepeatAndSelectDpEvent(base, M, shape) once, get_epsilon_and_optimal_order(D);
"rdp" is that accountant's acc._rdp. E0 = RdpAccountant() with the base event
alone composed once, get_epsilon(D).

Cases, in this order:
  1. 15 fixed: zcdp rho=0.1, delta=1e-6, shape in (0, 0.5, 1, 5, Poisson) x
     mean in (10, 100, 1000) (shape-major).
  2. 8 fixed: dpsgd q=256/60000, sigma=1.1, T=14063, delta=1e-5,
     shape in (0, 0.5, 1, Poisson) x mean in (10, 100).
  3. N_ZCDP random zcdp (rho log-uniform [1e-3, 2]), then N_LAPLACE random laplace
     (B uniform [1, 20]), then N_DPSGD random dpsgd (q log-uniform [1e-3, 0.05],
     sigma uniform [0.7, 3], T log-uniform integer [10, 5000]). Within each kind
     the i-th accepted case gets shape SHAPES[i % 6], SHAPES = (0, 0.5, 1, 2, 5,
     Poisson); mean is log-uniform [1.5, 1e4] except i % 10 == 4 -> 10 and
     i % 10 == 9 -> 100 (the log-uniform mean is still drawn, then replaced);
     delta log-uniform [1e-9, 1e-4].
Random dpsgd candidates whose base RDP hit dp-accounting's "_compute_log_a_frac
failed to converge" warning (inf at some orders, which a reimplementation cannot
reproduce) are skipped and redrawn; any candidate for which dp-accounting raises
is skipped too. Both are counted and printed (the stdout summary).
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

import dp_accounting
from dp_accounting import dp_event
from dp_accounting import rdp as dp_rdp
from dp_accounting.rdp import rdp_privacy_accountant as rdp_mod

SEED = 20261123
EXPECTED_VERSION = "0.6.0"
GENERATOR = "tools/make_repeat_select_fixture.py"

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_PATH = os.path.join(REPO_ROOT, "tests", "fixtures",
                        "repeat_select_dp_accounting_0.6.0.json")

POISSON = float("inf")
SHAPES = (0.0, 0.5, 1.0, 2.0, 5.0, POISSON)
N_ZCDP = 30
N_LAPLACE = 12
N_DPSGD = 24
MAX_CANDIDATES = 1000  # per kind; guards against an endless redraw loop

KIND_INDEX = {"zcdp": 1, "laplace": 2, "dpsgd": 3}

# Spec golden epsilons (rounded to 6 decimals), keyed by (base tag, shape, mean).
GOLDEN = {
    ("zcdp0.1", 0.0, 10.0): 3.451878, ("zcdp0.1", 0.0, 100.0): 4.049188,
    ("zcdp0.1", 0.0, 1000.0): 4.526788,
    ("zcdp0.1", 0.5, 10.0): 3.779081, ("zcdp0.1", 0.5, 100.0): 4.558951,
    ("zcdp0.1", 0.5, 1000.0): 5.178630,
    ("zcdp0.1", 1.0, 10.0): 4.068797, ("zcdp0.1", 1.0, 100.0): 5.054325,
    ("zcdp0.1", 1.0, 1000.0): 5.841504,
    ("zcdp0.1", 5.0, 10.0): 5.721798, ("zcdp0.1", 5.0, 100.0): 8.561160,
    ("zcdp0.1", 5.0, 1000.0): 10.855866,
    ("zcdp0.1", POISSON, 10.0): 4.607412, ("zcdp0.1", POISSON, 100.0): 18.760367,
    ("zcdp0.1", POISSON, 1000.0): 42.826779,
    ("mnist", 0.0, 10.0): 4.294510, ("mnist", 0.0, 100.0): 5.113852,
    ("mnist", 0.5, 10.0): 4.695845, ("mnist", 0.5, 100.0): 5.752975,
    ("mnist", 1.0, 10.0): 5.049005, ("mnist", 1.0, 100.0): 6.373923,
    ("mnist", POISSON, 10.0): 5.748903, ("mnist", POISSON, 100.0): 24.094852,
}
MNIST = (256 / 60000, 1.1, 14063, 1e-5)


# --------------------------------------------------------------------------
# Counting dp-accounting's absl warnings (absl logs through the "absl" logger).






# --------------------------------------------------------------------------
# Helpers
def rng_for(kind):
    return np.random.default_rng([SEED, KIND_INDEX[kind]])










def shape_json(shape):
    return None if math.isinf(shape) else float(shape)


def shape_name(shape):
    return "poisson" if shape is None or math.isinf(shape) else repr(float(shape))


def base_event(base):
    kind = base["kind"]
    if kind == "zcdp":
        return dp_accounting.ZCDpEvent(base["rho"])
    if kind == "laplace":
        return dp_accounting.LaplaceDpEvent(noise_multiplier=base["noise_multiplier"])
    if kind == "dpsgd":
        return dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(
                base["sampling_rate"],
                dp_accounting.GaussianDpEvent(base["noise_multiplier"])),
            base["steps"],
        )
    raise ValueError(kind)


def make_case(base, shape, mean, delta):
    """Returns (case, number of non-convergence warnings raised while computing)."""
    before = _nonconvergence_count()
    acc = dp_rdp.RdpAccountant()
    acc.compose(dp_event.RepeatAndSelectDpEvent(base_event(base), float(mean), float(shape)))
    eps, order = acc.get_epsilon_and_optimal_order(delta)
    rdp = num_list(acc._rdp)
    base_eps = dp_rdp.RdpAccountant().compose(base_event(base)).get_epsilon(delta)
    case = {
        "base": base,
        "shape": shape_json(shape),
        "mean": num(mean),
        "delta": num(delta),
        "epsilon": num(eps),
        "order": num(order),
        "base_epsilon": num(base_eps),
        "rdp": rdp,
    }
    return case, _nonconvergence_count() - before


# --------------------------------------------------------------------------
# Case builders
def make_fixed(stats):
    cases = []
    for shape in (0.0, 0.5, 1.0, 5.0, POISSON):
        for mean in (10.0, 100.0, 1000.0):
            case, nw = make_case({"kind": "zcdp", "rho": 0.1}, shape, mean, 1e-6)
            assert nw == 0
            cases.append(case)
    q, sigma, steps, delta = MNIST
    for shape in (0.0, 0.5, 1.0, POISSON):
        for mean in (10.0, 100.0):
            base = {"kind": "dpsgd", "sampling_rate": q, "noise_multiplier": sigma,
                    "steps": steps}
            case, nw = make_case(base, shape, mean, delta)
            assert nw == 0
            cases.append(case)
    return cases


def draw_base(kind, rng):
    if kind == "zcdp":
        return {"kind": "zcdp", "rho": log_uniform(rng, 1e-3, 2.0)}
    if kind == "laplace":
        return {"kind": "laplace", "noise_multiplier": float(rng.uniform(1.0, 20.0))}
    q = log_uniform(rng, 1e-3, 0.05)
    sigma = float(rng.uniform(0.7, 3.0))
    steps = log_uniform_int(rng, 10, 5000)
    return {"kind": "dpsgd", "sampling_rate": q, "noise_multiplier": sigma, "steps": steps}


def make_random(kind, n, stats):
    rng = rng_for(kind)
    cases = []
    candidates = 0
    while len(cases) < n:
        candidates += 1
        if candidates > MAX_CANDIDATES:
            sys.exit(f"too many rejected {kind} candidates")
        i = len(cases)
        base = draw_base(kind, rng)
        mean = log_uniform(rng, 1.5, 1e4)
        delta = log_uniform(rng, 1e-9, 1e-4)
        if i % 10 == 4:
            mean = 10.0
        elif i % 10 == 9:
            mean = 100.0
        shape = SHAPES[i % len(SHAPES)]
        desc = {"base": base, "shape": shape_name(shape), "mean": mean, "delta": delta}
        try:
            case, nw = make_case(base, shape, mean, delta)
        except Exception as e:  # noqa: BLE001 - report whatever dp-accounting raises
            stats["raised"].append((desc, f"{type(e).__name__}: {e}"))
            continue
        if nw:
            stats["nonconvergent"].append(desc)
            continue
        cases.append(case)
    return cases


# --------------------------------------------------------------------------


def golden_key(c):
    b = c["base"]
    shape = POISSON if c["shape"] is None else c["shape"]
    if b == {"kind": "zcdp", "rho": 0.1} and c["delta"] == 1e-6:
        return ("zcdp0.1", shape, c["mean"])
    if (b["kind"] == "dpsgd" and (b["sampling_rate"], b["noise_multiplier"], b["steps"],
                                  c["delta"]) == MNIST):
        return ("mnist", shape, c["mean"])
    return None


def sanity_check(path, stats):
    doc = json.loads(read_fixture_text(path))
    assert doc["dp_accounting_version"] == EXPECTED_VERSION
    orders = doc["default_orders"]
    assert len(orders) == 156 and orders == [float(o) for o in rdp_mod.DEFAULT_RDP_ORDERS]

    by_kind, by_shape = {}, {}
    for c in doc["cases"]:
        assert set(c) == {"base", "shape", "mean", "delta", "epsilon", "order",
                          "base_epsilon", "rdp"}, sorted(c)
        assert len(c["rdp"]) == 156
        k = c["base"]["kind"]
        by_kind[k] = by_kind.get(k, 0) + 1
        s = shape_name(c["shape"])
        by_shape[s] = by_shape.get(s, 0) + 1
        assert c["mean"] >= 1.5 or c["mean"] in (10.0, 100.0, 1000.0)
        # The stored epsilon is what dp-accounting's conversion gives on the
        # stored RDP vector (null -> inf).
        rdp = [math.inf if r is None else r for r in c["rdp"]]
        e, o = rdp_mod.compute_epsilon(np.array(orders), rdp, c["delta"])
        assert (float(e), float(o)) == (c["epsilon"], c["order"])
        # Repeat-and-select never helps.
        assert c["epsilon"] >= c["base_epsilon"], c
        if c["shape"] is not None:
            # The TNB branch ends with a monotonicity pass.
            assert all(a <= b for a, b in zip(rdp, rdp[1:])), "TNB rdp not monotone"
    assert len(doc["cases"]) >= 60
    for k, m in (("zcdp", 25), ("laplace", 10), ("dpsgd", 20)):
        assert by_kind.get(k, 0) >= m, (k, by_kind.get(k, 0))
    for s in SHAPES:
        assert by_shape.get(shape_name(s), 0) >= 8, (s, by_shape)

    n_mean_10 = sum(1 for c in doc["cases"] if c["mean"] == 10.0)
    n_mean_100 = sum(1 for c in doc["cases"] if c["mean"] == 100.0)

    golden_ok = True
    seen = set()
    for c in doc["cases"]:
        key = golden_key(c)
        if key is None or key not in GOLDEN:
            continue
        seen.add(key)
        got = round(c["epsilon"], 6)
        if got != GOLDEN[key]:
            golden_ok = False
            print(f"GOLDEN MISMATCH {key}: {c['epsilon']!r} (rounded {got}) vs {GOLDEN[key]}")
    if seen != set(GOLDEN):
        golden_ok = False
        print(f"GOLDEN cases missing: {sorted(set(GOLDEN) - seen, key=repr)}")

    non_monotone_poisson = sum(
        1 for c in doc["cases"] if c["shape"] is None
        and any(a > b for a, b in zip(c["rdp"], c["rdp"][1:])
                if a is not None and b is not None))
    stats["non_monotone_poisson"] = non_monotone_poisson
    stats["order_at_max"] = sum(1 for c in doc["cases"] if c["order"] == orders[-1])
    stats["n_mean_10"], stats["n_mean_100"] = n_mean_10, n_mean_100
    stats["cases_with_null_rdp"] = sum(1 for c in doc["cases"] if None in c["rdp"])
    return by_kind, by_shape, golden_ok


def main():
    require_dp_accounting(EXPECTED_VERSION)

    stats = {"raised": [], "nonconvergent": []}
    cases = []
    cases += make_fixed(stats)
    cases += make_random("zcdp", N_ZCDP, stats)
    cases += make_random("laplace", N_LAPLACE, stats)
    cases += make_random("dpsgd", N_DPSGD, stats)

    doc = {
        "generator": GENERATOR,
        "dp_accounting_version": EXPECTED_VERSION,
        "default_orders": [float(o) for o in rdp_mod.DEFAULT_RDP_ORDERS],
        "cases": cases,
    }
    dump(doc, OUT_PATH)
    by_kind, by_shape, golden_ok = sanity_check(OUT_PATH, stats)

    print(f"wrote {os.path.relpath(OUT_PATH, REPO_ROOT)}: {len(cases)} cases")
    print("  by base kind: " + ", ".join(f"{k} {n}" for k, n in by_kind.items()))
    print("  by shape:     " + ", ".join(f"{k} {n}" for k, n in by_shape.items()))
    print(f"  cases with mean exactly 10: {stats['n_mean_10']}, exactly 100: "
          f"{stats['n_mean_100']}")
    print(f"  candidates skipped because dp-accounting raised: {len(stats['raised'])}")
    for desc, err in stats["raised"]:
        print(f"    {desc}: {err}")
    print(f"  dpsgd candidates skipped for the _compute_log_a_frac warning: "
          f"{len(stats['nonconvergent'])}")
    for desc in stats["nonconvergent"]:
        print(f"    {desc}")
    print_warning_summary()
    print(f"  cases with null (+inf) in rdp: {stats['cases_with_null_rdp']}")
    print(f"  Poisson cases whose rdp is not non-decreasing in the order: "
          f"{stats['non_monotone_poisson']}")
    print(f"  cases whose optimal order is the largest default order (1024): "
          f"{stats['order_at_max']}")
    print(f"  golden values ({len(GOLDEN)} spec epsilons): "
          f"{'OK' if golden_ok else 'MISMATCH'}")
    if not golden_ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
