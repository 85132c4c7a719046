"""Speed of dptune from Python, side by side in one process (docs/python.md has the table).

1. DP-SGD's ε (q = 256/60000, σ = 1.1, 14063 steps, δ = 1e-5; Abadi et al.'s MNIST setting)
   by dptune.accounting (RDP on dp_accounting's orders: the same number) against
   dp_accounting 0.6.0's RdpAccountant, and against dp-accelerator where it is installed.
2. The same by the PLD accountants (1000 steps at q = 0.01, σ = 1: dp_accounting's PLD takes
   seconds at 14063 steps).
3. The ask/tell loop's overhead per trial (random search, a trivial objective).

Usage: python tools/python_speed.py   (with dptune, dp-accounting and numpy installed)
"""

import importlib
import platform
import time

import dptune
from dptune import accounting as acc
from dptune import tuners

Q, SIGMA, STEPS, DELTA = 256 / 60000, 1.1, 14063, 1e-5


def best_of(f, repeat=7, number=None):
    """The fastest of `repeat` timings of `number` calls (per call, in seconds)."""
    if number is None:
        number, t = 1, 0.0
        while t < 0.2:
            t0 = time.perf_counter()
            for _ in range(number):
                f()
            t = time.perf_counter() - t0
            if t < 0.2:
                number *= 2
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            f()
        times.append((time.perf_counter() - t0) / number)
    return min(times), f()


def row(name, secs, value, ours=None):
    """A table row; `ours`: dptune's time for the same number (the row's time over it is
    dptune's speed-up)."""
    ratio = "" if ours is None else f"{secs / ours:.1f}×"
    unit = f"{secs * 1e6:,.1f} µs" if secs < 0.1 else f"{secs:,.3f} s"
    print(f"| {name} | {unit} | {value} | {ratio} |")


def main():
    print(f"python {platform.python_version()} on {platform.machine()}, dptune {dptune.__version__}")
    print("| call | time per call | ε | dptune's speed-up on it |")
    print("|---|---|---|---|")
    t_ours, e_ours = best_of(lambda: acc.get_epsilon(noise_multiplier=SIGMA, sample_rate=Q, steps=STEPS, delta=DELTA))
    step = acc.PoissonSampledDpEvent(Q, acc.GaussianDpEvent(SIGMA))
    t_ev, e_ev = best_of(lambda: acc.RdpAccountant().compose(step, STEPS).get_epsilon(DELTA))
    comparisons, later = [], []
    try:
        from dp_accounting import dp_event as E
        from dp_accounting.rdp import rdp_privacy_accountant as R
        their_step = E.PoissonSampledDpEvent(Q, E.GaussianDpEvent(SIGMA))
        t_dpa, e_dpa = best_of(lambda: R.RdpAccountant().compose(their_step, STEPS).get_epsilon(DELTA), repeat=5)
        comparisons.append(("dp_accounting 0.6.0 RdpAccountant", t_dpa, e_dpa))
    except ImportError:
        print("(dp_accounting not installed)")
    try:
        dpx = importlib.import_module("dp_accelerator")
        # Its one call for DP-SGD's ε (PyPI 0.1.0): an accountant of (σ, lot, n), then ε(steps, δ).
        t_dpx, e_dpx = best_of(lambda: dpx.DPSGDAccountant(noise_multiplier=SIGMA, batch_size=256, dataset_size=60000)
                               .get_epsilon(steps=STEPS, delta=DELTA))
        comparisons.append(("dp-accelerator 0.1.0 DPSGDAccountant(...).get_epsilon", t_dpx, e_dpx))
        # The same call on the same orders (dp-accelerator's own), so the same ε.
        orders = sorted(dpx.DPSGDAccountant(noise_multiplier=SIGMA, batch_size=256, dataset_size=60000)
                        .get_rdp_curve(steps=STEPS).keys())
        t_same, e_same = best_of(lambda: acc.get_epsilon(noise_multiplier=SIGMA, sample_rate=Q, steps=STEPS,
                                                         delta=DELTA, orders=orders))
        later.append((f"dptune.accounting.get_epsilon on dp-accelerator's {len(orders)} orders", t_same,
                      f"{e_same:.6f}", None))
        later.append((f"dp-accelerator 0.1.0, the same orders (|Δε| = {abs(e_dpx - e_same):.1e})", t_dpx,
                      f"{e_dpx:.6f}", t_same))
    except Exception as e:  # noqa: BLE001: an optional comparison
        print(f"(dp-accelerator not compared: {type(e).__name__}: {e})")
    row("dptune.accounting.get_epsilon (RDP, one call)", t_ours, f"{e_ours:.6f}")
    row("dptune RdpAccountant().compose(event, T).get_epsilon", t_ev, f"{e_ev:.6f}")
    for name, t, e in comparisons:
        row(f"{name} (|Δε| = {abs(e - e_ours):.1e})", t, f"{e:.6f}", ours=t_ours)
    for r in later:
        row(*r)

    # PLD
    pstep = acc.PoissonSampledDpEvent(0.01, acc.GaussianDpEvent(1.0))
    t_pld, e_pld = best_of(lambda: acc.PLDAccountant().compose(pstep, 1000).get_epsilon(DELTA), repeat=3)
    row("dptune PLDAccountant, 1000 steps q=0.01 σ=1", t_pld, f"{e_pld:.6f}")
    try:
        from dp_accounting import dp_event as E
        from dp_accounting.pld import pld_privacy_accountant as P
        ts = E.PoissonSampledDpEvent(0.01, E.GaussianDpEvent(1.0))
        t_dpp, e_dpp = best_of(lambda: P.PLDAccountant(value_discretization_interval=1e-4).compose(ts, 1000)
                               .get_epsilon(DELTA), repeat=3, number=1)
        row(f"dp_accounting PLDAccountant (interval 1e-4), same (|Δε| = {abs(e_dpp - e_pld):.1e})", t_dpp,
            f"{e_dpp:.6f}", ours=t_pld)
    except ImportError:
        pass

    # ask/tell overhead
    run = acc.ZCDpEvent(0.01)
    for n in (10000,):
        tuner = tuners.random_search(run=run, space={"lr": (1e-4, 1.0, "log"), "clip": (0.1, 10.0)},
                                     candidates=n, seed=1)
        t0 = time.perf_counter()
        for trial in tuner:
            trial.report(trial.params["lr"])
        per = (time.perf_counter() - t0) / n
        tuner.release()
        row(f"ask/tell loop per trial (random search, {n} trials)", per, "")
        tuner = tuners.random_search(run=run, space=2, candidates=n, seed=1)
        t0 = time.perf_counter()
        while (t := tuner.ask()) is not None:
            tuner.tell(t, 0.5)
        per = (time.perf_counter() - t0) / n
        row(f"study.ask()/study.tell() per trial (unit box, {n} trials)", per, "")


if __name__ == "__main__":
    main()
