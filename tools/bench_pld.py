#!/usr/bin/env python3
"""Side-by-side speed and memory of DP-SGD's epsilon by privacy-loss distributions (issue 40):
dptune's PLD accountant (the release binary, `dptune account dpsgd --accountant pld`), Google's
dp-accounting 0.6.0 (PLDAccountant) and Microsoft's prv_accountant (PRVAccountant), each in a
process of its own (so each one's peak resident memory is its own), in one run, on this machine.

How to run (from the repository root, after `cargo build --release`):

    pip install dp-accounting==0.6.0 prv_accountant==0.2.0
    python3 tools/bench_pld.py            # prints a markdown table; docs/performance.md has one

Equal accuracy: dptune and dp-accounting use the same discretisation (connect the dots, loss
grid 1e-4; their epsilons agree to 1e-3 relative, tests/suite/pld.rs); prv_accountant is asked for an
epsilon error of 1e-3 and its upper estimate is reported. Times are the median of REPEATS runs
of the whole computation (construction, composition and epsilon), process start excluded for
the Python tools (timed inside) and included for dptune (timed from outside: a conservative
figure for dptune).
"""

import json
import os
import statistics
import subprocess
import sys
import time

CASES = [
    ("q = 0.01, sigma = 1.1, 1,000 steps", 0.01, 1.1, 1000),
    ("q = 256/60,000, sigma = 1.1, 14,063 steps", 256 / 60000, 1.1, 14063),
]
DELTA = 1e-5
INTERVAL = 1e-4
REPEATS = 5
DPTUNE = os.environ.get("DPTUNE", "target/release/dptune")


def one(tool, q, sigma, steps):
    """Runs in a child process: one computation, printed as JSON (seconds, epsilon)."""
    if tool == "dp_accounting":
        import dp_accounting
        from dp_accounting.pld import pld_privacy_accountant
        t0 = time.perf_counter()
        acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=INTERVAL)
        event = dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps)
        acc.compose(event)
        eps = acc.get_epsilon(DELTA)
        return time.perf_counter() - t0, eps
    if tool == "prv_accountant":
        from prv_accountant import PRVAccountant
        from prv_accountant.privacy_random_variables import PoissonSubsampledGaussianMechanism
        t0 = time.perf_counter()
        acc = PRVAccountant(
            prvs=[PoissonSubsampledGaussianMechanism(noise_multiplier=sigma,
                                                     sampling_probability=q)],
            max_self_compositions=[steps], eps_error=1e-3, delta_error=DELTA * 1e-3)
        _, _, eps_up = acc.compute_epsilon(delta=DELTA, num_self_compositions=[steps])
        return time.perf_counter() - t0, eps_up
    raise ValueError(tool)


def measure(cmd):
    """Runs cmd; returns (wall seconds, its stdout, peak resident memory in MB)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    out = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        raise SystemExit(f"{cmd} failed ({status})")
    return wall, out, usage.ru_maxrss / 1024


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        tool, q, sigma, steps = sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
        seconds, eps = one(tool, q, sigma, steps)
        print(json.dumps({"seconds": seconds, "epsilon": eps}))
        return
    rows = []
    for name, q, sigma, steps in CASES:
        results = {}
        for tool in ["dptune", "dp_accounting", "prv_accountant"]:
            times, mems = [], []
            for _ in range(REPEATS):
                if tool == "dptune":
                    cmd = [DPTUNE, "account", "dpsgd", "--sampling-rate", repr(q),
                           "--noise-multiplier", repr(sigma), "--steps", str(steps),
                           "--delta", repr(DELTA), "--accountant", "pld",
                           "--pld-interval", repr(INTERVAL), "--json"]
                    wall, out, mem = measure(cmd)
                    seconds, eps = wall, json.loads(out)["epsilon"]
                else:
                    cmd = [sys.executable, __file__, "--one", tool, repr(q), repr(sigma), str(steps)]
                    _, out, mem = measure(cmd)
                    r = json.loads(out)
                    seconds, eps = r["seconds"], r["epsilon"]
                times.append(seconds)
                mems.append(mem)
            results[tool] = (statistics.median(times), eps, max(mems))
        rows.append((name, results))
    print(f"DP-SGD's epsilon at delta = {DELTA:g} (median of {REPEATS}; peak resident memory of "
          f"the process), {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores:\n")
    print("| run | dptune PLD | dp-accounting 0.6.0 PLD | prv_accountant 0.2.0 | dptune's speed-up |")
    print("|---|---|---|---|---|")
    for name, r in rows:
        cell = lambda t: f"{r[t][0] * 1e3:.0f} ms, {r[t][2]:.0f} MB, ε = {r[t][1]:.4f}"
        speed = (f"{r['dp_accounting'][0] / r['dptune'][0]:.0f}× dp-accounting, "
                 f"{r['prv_accountant'][0] / r['dptune'][0]:.1f}× prv_accountant")
        print(f"| {name} | {cell('dptune')} | {cell('dp_accounting')} | {cell('prv_accountant')} | {speed} |")


if __name__ == "__main__":
    main()
