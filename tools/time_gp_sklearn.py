#!/usr/bin/env python3
"""Time scikit-learn's exact GP on the workload of dptune's criterion bench
benches/gp.rs (gp_fit_predict_1000), so the two can be put side by side:

    GaussianProcessRegressor(
        kernel=Matern(length_scale=0.5, nu=2.5, length_scale_bounds="fixed"),
        alpha=0.01, optimizer=None,
    ).fit(X, y).predict(Xs, return_std=True)

with X ~ U[0,1]^{n x d}, y = sin(3 * sum_j x_j), Xs ~ U[0,1]^{1000 x d}
(numpy default_rng([1, n, d]): not the same numbers as the Rust bench, the same
kind and sizes), for n in {100, 500, 2000} and d in {2, 10}. Each cell is
the median of REPEATS timed calls after WARMUP untimed ones, in ms; a markdown
table is printed, with the BLAS/OpenMP thread counts in use (threadpoolctl).
Use default threads (no OMP_NUM_THREADS / OPENBLAS_NUM_THREADS) to compare
with `cargo bench`, which also runs with default threads, on the same machine.
On a shared machine run both back to back: timings drift by tens of percent.

How to run (from the repository root):

    pip install scikit-learn==1.9.1
    python3 tools/time_gp_sklearn.py

CI never runs this script; it is for one-off comparisons only.
"""

import platform
import statistics
import time

import numpy as np
import sklearn
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import Matern
from threadpoolctl import threadpool_info

WARMUP, REPEATS, M = 3, 20, 1000


def median_ms(n, d):
    rng = np.random.default_rng([1, n, d])
    x, xs = rng.random((n, d)), rng.random((M, d))
    y = np.sin(3.0 * x.sum(axis=1))
    kernel = Matern(length_scale=0.5, nu=2.5, length_scale_bounds="fixed")
    times = []
    for i in range(WARMUP + REPEATS):
        t = time.perf_counter()
        gpr = GaussianProcessRegressor(kernel=kernel, alpha=0.01, optimizer=None)
        gpr.fit(x, y).predict(xs, return_std=True)
        if i >= WARMUP:
            times.append(time.perf_counter() - t)
    return 1e3 * statistics.median(times)


def main():
    pools = threadpool_info()
    threads = sorted({(p["user_api"], p["internal_api"], p["num_threads"]) for p in pools})
    print(f"scikit-learn {sklearn.__version__}, numpy {np.__version__}, "
          f"python {platform.python_version()}; threads: {threads}")
    print(f"median of {REPEATS} runs after {WARMUP} warm-up, ms, predicting {M} points\n")
    ns = [100, 500, 2000]
    print("| d | " + " | ".join(f"n = {n}" for n in ns) + " |")
    print("|---|" + "---|" * len(ns))
    for d in [2, 10]:
        print(f"| {d} | " + " | ".join(f"{median_ms(n, d):.2f}" for n in ns) + " |")


if __name__ == "__main__":
    main()
