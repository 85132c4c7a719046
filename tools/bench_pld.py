#!/usr/bin/env python3
"""Side-by-side speed and memory of DP-SGD's epsilon by privacy-loss distributions (issue 40):
dptune's PLD accountant (`examples/pld_time.rs`, and the release binary's `dptune account dpsgd
--accountant pld`), Google's dp-accounting 0.6.0 (PLDAccountant) and Microsoft's prv_accountant
(PRVAccountant), each in a process of its own (so each one's peak resident memory is its own), in
one run, on this machine.

How to run (from the repository root, after `cargo build --release --bin dptune --example pld_time`):

    pip install dp-accounting==0.6.0 prv_accountant==0.2.0
    python3 tools/bench_pld.py            # prints a markdown table; docs/performance.md has one

Equal accuracy: dptune and dp-accounting use the same discretisation (connect the dots, loss
grid 1e-4; their epsilons agree to 1e-3 relative, tests/suite/pld.rs); prv_accountant is asked for an
epsilon error of 1e-3 and its upper estimate is reported. Times are the median of REPEATS runs
of the whole computation (construction, composition and epsilon), timed inside the process for
all three (process start and imports excluded), the first time in the process and once more
(FFT plans and memory warm, as in a calibration's later steps); the speed-ups compare those. dptune's command
line is also timed from outside (its process start included), as a user meets it.
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
REPEATS = int(os.environ.get("REPEATS", "5"))
DPTUNE = os.environ.get("DPTUNE", "target/release/dptune")
PLD_TIME = os.environ.get("PLD_TIME", "target/release/examples/pld_time")


def one(tool, q, sigma, steps):
    """Runs in a child process: the computation twice, printed as JSON (seconds the first time,
    seconds again, epsilon)."""
    if tool == "dp_accounting":
        import dp_accounting
        from dp_accounting.pld import pld_privacy_accountant

        def run():
            t0 = time.perf_counter()
            acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=INTERVAL)
            event = dp_accounting.SelfComposedDpEvent(
                dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps)
            acc.compose(event)
            eps = acc.get_epsilon(DELTA)
            return time.perf_counter() - t0, eps
    elif tool == "prv_accountant":
        from prv_accountant import PRVAccountant
        from prv_accountant.privacy_random_variables import PoissonSubsampledGaussianMechanism

        def run():
            t0 = time.perf_counter()
            acc = PRVAccountant(
                prvs=[PoissonSubsampledGaussianMechanism(noise_multiplier=sigma,
                                                         sampling_probability=q)],
                max_self_compositions=[steps], eps_error=1e-3, delta_error=DELTA * 1e-3)
            _, _, eps_up = acc.compute_epsilon(delta=DELTA, num_self_compositions=[steps])
            return time.perf_counter() - t0, eps_up
    else:
        raise ValueError(tool)
    (first, eps), (again, _) = run(), run()
    return first, again, eps


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
        seconds, again, eps = one(tool, q, sigma, steps)
        print(json.dumps({"seconds": seconds, "again": again, "epsilon": eps}))
        return
    rows = []
    for name, q, sigma, steps in CASES:
        results = {}
        for tool in ["dptune", "dptune_cli", "dp_accounting", "prv_accountant"]:
            times, agains, mems = [], [], []
            for _ in range(REPEATS):
                if tool == "dptune_cli":
                    cmd = [DPTUNE, "account", "dpsgd", "--sampling-rate", repr(q),
                           "--noise-multiplier", repr(sigma), "--steps", str(steps),
                           "--delta", repr(DELTA), "--accountant", "pld",
                           "--pld-interval", repr(INTERVAL), "--json"]
                    wall, out, mem = measure(cmd)
                    seconds, again, eps = wall, wall, json.loads(out)["epsilon"]
                else:
                    if tool == "dptune":
                        cmd = [PLD_TIME, repr(q), repr(sigma), str(steps), repr(DELTA), repr(INTERVAL)]
                    else:
                        cmd = [sys.executable, __file__, "--one", tool, repr(q), repr(sigma), str(steps)]
                    _, out, mem = measure(cmd)
                    r = json.loads(out)
                    seconds, again, eps = r["seconds"], r["again"], r["epsilon"]
                times.append(seconds)
                agains.append(again)
                mems.append(mem)
            results[tool] = (statistics.median(times), eps, max(mems), statistics.median(agains))
        rows.append((name, results))
    print(f"DP-SGD's epsilon at delta = {DELTA:g} (median of {REPEATS} processes; the first "
          f"computation in the process / the same again; peak resident memory of the process), "
          f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores:\n")
    print("| run | dptune PLD | dptune's command line | dp-accounting 0.6.0 PLD | prv_accountant 0.2.0 | dptune's speed-up (first / again) |")
    print("|---|---|---|---|---|---|")
    for name, r in rows:
        cell = lambda t: (f"{r[t][0] * 1e3:.0f} / {r[t][3] * 1e3:.0f} ms, {r[t][2]:.0f} MB, "
                          f"ε = {r[t][1]:.4f}")
        cli = f"{r['dptune_cli'][0] * 1e3:.0f} ms"
        ratio = lambda t: f"{r[t][0] / r['dptune'][0]:.0f} / {r[t][3] / r['dptune'][3]:.0f}×"
        speed = f"{ratio('dp_accounting')} dp-accounting, {ratio('prv_accountant')} prv_accountant"
        print(f"| {name} | {cell('dptune')} | {cli} | {cell('dp_accounting')} | {cell('prv_accountant')} | {speed} |")

if __name__ == "__main__":
    main()
