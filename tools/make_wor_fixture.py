#!/usr/bin/env python3
"""Generate tests/fixtures/wor_autodp_0.2.3.1.json: reference values from autodp 0.2.3.1 for the
Gaussian mechanism on lots drawn uniformly WITHOUT replacement (Wang-Balle-Kasiviswanathan
2019, Theorem 9), which dptune implements in src/accounting/subsampled_wor.rs (spec 001 §6.1).

How to run (from the repository root):

    pip install autodp==0.2.3.1
    python3 tools/make_wor_fixture.py

CI never runs this script: the JSON it writes is committed, and tests/suite/accounting_wor.rs only
reads it. There is nothing random: the cases are listed below, and re-running gives a
byte-identical file (same autodp/numpy/scipy).

What autodp computes
--------------------
rdp_acct.anaRDPacct().compose_subsampled_mechanism(func, q, coeff, improved_bound_flag=False),
with func(alpha) = rdp_bank.RDP_gaussian({'sigma': sigma}, alpha) = alpha/(2 sigma^2): autodp's
implementation of Theorem 9 (the default, improved_bound_flag=False). At an integer order it is
min((a-1) eps(a), logsumexp([0, moments_two] + moments))/(a-1), i.e. the spec's formula; at a
fractional order x it is min(eps(x), ((x-xf) cgf(xc) + (1-(x-xf)) cgf(xf))/(x-1)) (linear
interpolation of the CGF between the neighbouring integers), and RDP(2) on [1, 2].
Note autodp's logsumexp does not use log1p, so where ln S = ln(1 + tiny) its values carry an
absolute error of about 1e-16/(a-1); compare with an absolute tolerance there.

JSON layout
-----------
{"generator", "autodp_version", "conventions", "rdp_cases", "epsilon_cases"}; one case per line.
  rdp_cases:     sampling_rate, noise_multiplier, orders (list), rdp (list, one per order):
                 acct.get_rdp(orders) for one step (coeff = 1).
  epsilon_cases: data_size, lot_size, epochs, noise_multiplier, sampling_rate, steps, delta,
                 epsilon: acct.get_eps(delta) with coeff = steps = epochs*round(n/m) (half up),
                 autodp's own conversion (Mironov, the best integer order refined by
                 scipy's bounded minimize_scalar over the interpolated curve).
Every number is a full-precision double (Python repr); no NaN, no infinity, no null.
"""

import json
import os
import sys
from importlib.metadata import version

EXPECTED = "0.2.3.1"
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures",
                   "wor_autodp_0.2.3.1.json")

# (q, sigma): the spec 001 §6.1 vectors' steps, then edge cases: large q, small sigma, and
# (0.05, 16), where Theorem 9's values dip slightly as the order grows (near 97).
RDP_PAIRS = [
    (256 / 30956, 1.0), (64 / 30956, 4.0), (512 / 30956, 0.8), (8 / 30956, 16.0),
    (600 / 60000, 4.0), (256 / 60000, 1.1), (4000 / 60000, 16.0), (16 / 60000, 0.5),
    (0.5, 0.7), (0.9, 2.0), (0.05, 16.0), (0.001, 0.3), (0.1, 0.1),
]
ORDERS = [2, 3, 4, 5, 6, 8, 10, 11, 16, 32, 64, 96, 97, 98, 100, 128, 256, 512, 610, 1024,
          1.5, 2.5, 3.3, 7.7, 12.5, 63.2, 96.5]

# spec 001 §6.1: (n, m, T, sigma), delta = 1e-5.
EPSILON_CASES = [
    (30956, 256, 10, 1.0), (30956, 64, 4, 4.0), (30956, 512, 64, 0.8), (30956, 8, 1, 16.0),
    (60000, 600, 100, 4.0), (60000, 256, 10, 1.1), (60000, 4000, 400, 16.0),
    (60000, 16, 1, 0.5),
]
DELTA = 1e-5


def finite(x):
    x = float(x)
    if x != x or x in (float("inf"), float("-inf")):
        raise ValueError(f"non-finite value {x}")
    return x


def steps(n, m, t):
    return t * ((2 * n + m) // (2 * m))


def accountant(q, sigma, coeff):
    from autodp import rdp_acct, rdp_bank
    acct = rdp_acct.anaRDPacct()
    func = lambda x: rdp_bank.RDP_gaussian({"sigma": sigma}, x)
    acct.compose_subsampled_mechanism(func, q, coeff=coeff)
    return acct


def main():
    found = version("autodp")
    if found != EXPECTED:
        sys.exit(f"need autodp=={EXPECTED}, found {found}")
    rdp_cases = []
    for q, sigma in RDP_PAIRS:
        acct = accountant(q, sigma, 1.0)
        rdp = [finite(v) for v in acct.get_rdp([float(o) for o in ORDERS])]
        rdp_cases.append({"sampling_rate": q, "noise_multiplier": sigma,
                          "orders": [float(o) for o in ORDERS], "rdp": rdp})
    epsilon_cases = []
    for n, m, t, sigma in EPSILON_CASES:
        k = steps(n, m, t)
        acct = accountant(m / n, sigma, float(k))
        epsilon_cases.append({"data_size": n, "lot_size": m, "epochs": t,
                              "noise_multiplier": sigma, "sampling_rate": m / n, "steps": k,
                              "delta": DELTA, "epsilon": finite(acct.get_eps(DELTA))})
    doc = {"generator": "tools/make_wor_fixture.py", "autodp_version": found,
           "conventions": "sampling without replacement, replace-one neighbours, "
                          "Gaussian eps(a) = a/(2 sigma^2); autodp Theorem 9 "
                          "(improved_bound_flag=False)",
           "rdp_cases": rdp_cases, "epsilon_cases": epsilon_cases}
    head = [f"  {json.dumps(k)}: {json.dumps(doc[k])}"
            for k in ("generator", "autodp_version", "conventions")]
    blocks = []
    for key in ("rdp_cases", "epsilon_cases"):
        lines = ",\n".join("    " + json.dumps(c, allow_nan=False) for c in doc[key])
        blocks.append(f'  "{key}": [\n{lines}\n  ]')
    text = "{\n" + ",\n".join(head + blocks) + "\n}\n"
    json.loads(text)
    with open(OUT, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    for c in epsilon_cases:
        print(f"n={c['data_size']} m={c['lot_size']} T={c['epochs']} sigma={c['noise_multiplier']}"
              f" k={c['steps']} eps={c['epsilon']:.6f}")
    print(f"wrote {OUT}: {len(rdp_cases)} rdp cases x {len(ORDERS)} orders, "
          f"{len(epsilon_cases)} epsilon cases")


if __name__ == "__main__":
    main()
