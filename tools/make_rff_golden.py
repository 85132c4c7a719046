#!/usr/bin/env python3
"""Generate tests/fixtures/per_user_rff_golden.json: the first draws and some values of the
synthetic per-user GP objective of spec 004 §4.2(a) (src/workloads/per_user/rff.rs) for seed 0,
re-implemented independently in Python from the spec's draw order and dptune's stream
definition (tools/dptune_rng.py re-implements ChaCha20, rand_core's seeding and dptune's
Box-Muller).

How to run (from the repository root; needs numpy only, ~5 s):

    python3 tools/make_rff_golden.py

CI never runs this script: the JSON it writes is committed and read by the Rust tests.

The objective (defaults of §4.2(a)): d = 5, M = 2048 features, n = 1000 users, rho = 0.9,
s = 1, objective index 0, one stream `stream(seed, [d, index, RFF_TAG])`, RFF_TAG = 0x726666,
drawn in this order:
    u_j (d uniforms)            l_j = 2*lbar*0.7 + (2*lbar*1.3 - 2*lbar*0.7) * u_j,
                                lbar = 0.1 * delta(d) / delta(2),
                                delta(k) = sqrt(k/6) * sqrt((1 + 2 sqrt(1 - 3/(5k))) / 3)
    omega (M x d normals, feature-major)   omega[m, j] = z / l_j
    b (M uniforms)              b_m = 2 pi u
    c (M normals)
    xi (n x M normals, user-major)         w[i, m] = sqrt(rho) c_m + sqrt(1 - rho) xi[i, m]
User i's loss L_i(t) = s sqrt(2/M) sum_m w[i, m] cos(omega_m . t + b_m); its gradient
-s sqrt(2/M) sum_m w[i, m] sin(omega_m . t + b_m) omega_m; the mean loss and gradient use the
users' mean weights.

Drawn values (lengthscales, the first omega rows, phases, weights) are stored as the hex bits
of the IEEE doubles (`*_bits`) and must match exactly; losses and gradients (sums of 2048
terms, summed in a different order than Rust's) are stored as decimals and compared with a
tolerance. Re-running gives a byte-identical file.
"""

import json
import math
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from dptune_rng import Stream  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures",
                   "per_user_rff_golden.json")
RFF_TAG = 0x726666
SEED, INDEX = 0, 0
D, M, N, RHO, S = 5, 2048, 1000, 0.9, 1.0
POINTS = [
    [0.5, 0.5, 0.5, 0.5, 0.5],
    [0.1, 0.9, 0.3, 0.7, 0.2],
    [0.0, 1.0, 0.25, 0.0, 0.8],
]
USERS = [0, 1, 500, 999]


def bits(v):
    return format(struct.unpack("<Q", struct.pack("<d", float(v)))[0], "016x")


def delta(k):
    return math.sqrt(k / 6.0) * math.sqrt((1.0 + 2.0 * math.sqrt(1.0 - 3.0 / (5.0 * k))) / 3.0)


def main():
    rng = Stream(SEED, [D, INDEX, RFF_TAG])
    lbar = 0.1 * delta(float(D)) / delta(2.0)
    lo, hi = 2.0 * lbar * 0.7, 2.0 * lbar * 1.3
    lengthscales = [lo + (hi - lo) * u for u in rng.uniforms(D)]
    z = rng.normals(M * D)
    omega = [[z[m * D + j] / lengthscales[j] for j in range(D)] for m in range(M)]
    tau = 2.0 * math.pi
    phase = [tau * u for u in rng.uniforms(M)]
    shared = rng.normals(M)
    a, b = math.sqrt(RHO), math.sqrt(1.0 - RHO)
    xi = rng.normals(N * M)
    weights = np.array([[a * shared[m] + b * xi[i * M + m] for m in range(M)]
                        for i in range(N)])
    amplitude = S * math.sqrt(2.0 / M)
    om = np.array(omega)
    ph = np.array(phase)
    mean_w = weights.mean(axis=0)

    values = []
    for t in POINTS:
        arg = om @ np.array(t) + ph
        cos, sin = np.cos(arg), np.sin(arg)
        losses = amplitude * (weights @ cos)
        values.append({
            "point": t,
            "users": USERS,
            "losses": [float(losses[i]) for i in USERS],
            "mean_loss": float(amplitude * (mean_w @ cos)),
            "gradient_user0": [float(v) for v in -amplitude * (om.T @ (weights[0] * sin))],
            "mean_gradient": [float(v) for v in -amplitude * (om.T @ (mean_w * sin))],
        })

    doc = {
        "generator": "tools/make_rff_golden.py",
        "config": {"seed": SEED, "index": INDEX, "dim": D, "features": M, "users": N,
                   "rho": RHO, "signal_sd": S},
        "lengthscales_bits": [bits(v) for v in lengthscales],
        "omega_first_rows_bits": [[bits(v) for v in row] for row in omega[:4]],
        "phase_first_bits": [bits(v) for v in phase[:8]],
        "weights_user0_first_bits": [bits(v) for v in weights[0, :8]],
        "weights_last_user_last_bits": [bits(v) for v in weights[N - 1, M - 8:]],
        "values": values,
    }
    text = json.dumps(doc, indent=1, allow_nan=False) + "\n"
    with open(OUT, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    print(f"wrote {os.path.normpath(OUT)}; lengthscales {lengthscales}")


if __name__ == "__main__":
    main()
