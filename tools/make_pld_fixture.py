#!/usr/bin/env python3
"""Generate tests/fixtures/pld_dp_accounting_0.6.0.json: privacy-loss-distribution (PLD)
reference values from Google's dp-accounting 0.6.0, for the checks of issue 40 (dptune's PLD
accountant: epsilon within 1e-3 relative of dp-accounting's pessimistic estimate at the same
discretisation, and never below its optimistic estimate).

How to run (from the repository root):

    pip install dp-accounting==0.6.0
    python3 tools/make_pld_fixture.py

CI never runs this script: the JSON it writes is committed, and the Rust tests only read it.

The output is deterministic: every random parameter comes from numpy's PCG64 generator seeded
with [SEED, kind_index] (one stream per case kind), all of a case's parameters are drawn before
anything is computed, and the two DP-SGD cases of spec 000 come first.

Every case is one mechanism self-composed `count` times, built with dp-accounting's
privacy_loss_distribution.from_*(..., pessimistic_estimate=P, value_discretization_interval=
interval, use_connect_dots=P) and .self_compose(count) (what PLDAccountant does for a
SelfComposedDpEvent), once with P = True (connect the dots, pessimistic) and once with P = False
(privacy buckets, optimistic; dp-accounting has no optimistic connect-the-dots). Randomized
response has one discretisation in dp-accounting (no use_connect_dots flag). Fields:
  kind:       "gaussian" | "laplace" | "randomized-response" | "poisson-gaussian"
  gaussian:   sigma (standard deviation, sensitivity 1), relation "add-or-remove"
  laplace:    b (scale, sensitivity 1), relation "add-or-remove"
  randomized-response: noise (the probability of answering uniformly at random),
              buckets (the number of answers), relation "replace-one"
  poisson-gaussian: q (Poisson sampling rate), sigma (noise multiplier), relation
              "add-or-remove" (both directions; epsilon is the larger)
  count:      self-compositions (DP-SGD's steps)
  interval:   value_discretization_interval
  delta:      the delta epsilon is asked at
  epsilon_pessimistic, epsilon_optimistic: get_epsilon_for_delta(delta)
  epsilon_query: an epsilon at which delta is asked (the pessimistic epsilon at 10*delta)
  delta_pessimistic, delta_optimistic: get_delta_for_epsilon(epsilon_query)
Numbers are full-precision doubles; JSON null is +infinity (never written for these cases).
"""

import importlib.metadata
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from fixture_common import dump_sorted, log_uniform, log_uniform_int, num  # noqa: E402

from dp_accounting.pld import privacy_loss_distribution as pld  # noqa: E402

SEED = 20261128
OUT = "tests/fixtures/pld_dp_accounting_0.6.0.json"
KINDS = ["gaussian", "laplace", "randomized-response", "poisson-gaussian"]
PER_KIND = 12


def build(case, pessimistic):
    interval = case["interval"]
    kind = case["kind"]
    # dp-accounting's connect-the-dots discretisation is pessimistic only; its optimistic
    # estimate is the privacy-buckets one (use_connect_dots=False), named here to say so.
    dots = {"use_connect_dots": pessimistic}
    if kind == "gaussian":
        one = pld.from_gaussian_mechanism(
            case["sigma"], pessimistic_estimate=pessimistic,
            value_discretization_interval=interval, **dots)
    elif kind == "laplace":
        one = pld.from_laplace_mechanism(
            case["b"], pessimistic_estimate=pessimistic,
            value_discretization_interval=interval, **dots)
    elif kind == "randomized-response":
        one = pld.from_randomized_response(
            case["noise"], case["buckets"], pessimistic_estimate=pessimistic,
            value_discretization_interval=interval)
    elif kind == "poisson-gaussian":
        one = pld.from_gaussian_mechanism(
            case["sigma"], pessimistic_estimate=pessimistic,
            value_discretization_interval=interval, sampling_prob=case["q"], **dots)
    else:
        raise ValueError(kind)
    return one.self_compose(case["count"]) if case["count"] > 1 else one


def draw(kind, rng):
    """A case's parameters (all drawn before anything is computed)."""
    delta = float(10.0 ** -rng.integers(4, 9))
    if kind == "gaussian":
        # sigma from the composition's GDP mu = sqrt(count)/sigma in [0.1, 5]: epsilons of
        # use, not hundreds.
        count = log_uniform_int(rng, 1, 1000)
        mu = log_uniform(rng, 0.1, 5.0)
        return {"kind": kind, "sigma": math.sqrt(count) / mu, "count": count,
                "interval": 1e-4, "relation": "add-or-remove", "delta": delta}
    if kind == "laplace":
        return {"kind": kind, "b": log_uniform(rng, 1.0, 30.0),
                "count": log_uniform_int(rng, 1, 200), "interval": 1e-4,
                "relation": "add-or-remove", "delta": delta}
    if kind == "randomized-response":
        return {"kind": kind, "noise": float(rng.uniform(0.5, 0.98)),
                "buckets": int(rng.integers(2, 11)),
                "count": log_uniform_int(rng, 1, 50), "interval": 1e-4,
                "relation": "replace-one", "delta": delta}
    return {"kind": kind, "q": log_uniform(rng, 1e-3, 0.2),
            "sigma": log_uniform(rng, 0.6, 4.0),
            "count": log_uniform_int(rng, 1, 3000), "interval": 1e-3,
            "relation": "add-or-remove", "delta": delta}


def fixed():
    """Spec 000's DP-SGD runs (MNIST: q = 256/60000, sigma = 1.1, 14063 steps; and q = 0.01,
    sigma = 1.1, 1000 steps) at delta = 1e-5, at two discretisations."""
    out = []
    for q, steps in [(256 / 60000, 14063), (0.01, 1000)]:
        for interval in [1e-3, 1e-4]:
            out.append({"kind": "poisson-gaussian", "q": q, "sigma": 1.1, "count": steps,
                        "interval": interval, "relation": "add-or-remove", "delta": 1e-5})
    return out


def evaluate(case):
    start = time.time()
    pess, opt = build(case, True), build(case, False)
    delta = case["delta"]
    case["epsilon_pessimistic"] = num(pess.get_epsilon_for_delta(delta))
    case["epsilon_optimistic"] = num(opt.get_epsilon_for_delta(delta))
    query = pess.get_epsilon_for_delta(10 * delta)
    case["epsilon_query"] = num(query)
    case["delta_pessimistic"] = num(pess.get_delta_for_epsilon(query))
    case["delta_optimistic"] = num(opt.get_delta_for_epsilon(query))
    if not case["epsilon_optimistic"] <= case["epsilon_pessimistic"]:
        raise ValueError(f"optimistic above pessimistic: {case}")
    print(f"{case['kind']:>20} count={case['count']:>5}  eps={case['epsilon_pessimistic']:.6g}"
          f"  ({time.time() - start:.1f} s)", file=sys.stderr)
    return case


def main():
    cases = fixed()
    for k, kind in enumerate(KINDS):
        rng = np.random.Generator(np.random.PCG64([SEED, k]))
        cases.extend(draw(kind, rng) for _ in range(PER_KIND))
    doc = {
        "generator": "tools/make_pld_fixture.py",
        "dp_accounting_version": importlib.metadata.version("dp-accounting"),
        "seed": SEED,
        "cases": [evaluate(c) for c in cases],
    }
    dump_sorted(doc, OUT)
    print(f"wrote {len(cases)} cases to {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
