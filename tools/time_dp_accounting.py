#!/usr/bin/env python3
"""Time Google's dp-accounting 0.6.0 RDP accountant on the workloads that
dptune's criterion bench (benches/accounting.rs) measures, so the numbers can be
put side by side:

  (a) full DP-SGD accounting: new RdpAccountant() (156 default orders),
      compose SelfComposedDpEvent(PoissonSampledDpEvent(q=0.01,
      GaussianDpEvent(1.1)), 1000), then get_epsilon(1e-5);
  (b) the RDP -> (epsilon, delta) conversion alone:
      dp_accounting.rdp.rdp_privacy_accountant.compute_epsilon(orders, rdp, 1e-5)
      on the 156 default orders and the RDP vector from (a);
  (c) repeat-and-select of a zCDP run: new RdpAccountant(), compose
      dp_event.RepeatAndSelectDpEvent(ZCDpEvent(0.1), mean=100, shape=0)
      (logarithmic number of runs), then get_epsilon(1e-6);
  (d) repeat-and-select of the DP-SGD run of (a): new RdpAccountant(), compose
      dp_event.RepeatAndSelectDpEvent(<event of (a)>, mean=100, shape=1)
      (geometric number of runs), then get_epsilon(1e-5).

Each is timed with timeit: the loop count is picked by Timer.autorange(), then
the best of REPEATS repeats is reported as seconds per call (best-of, as
criterion's lower bound is the closest analogue; the median is printed too).

How to run (from the repository root):

    pip install dp-accounting==0.6.0 scipy
    python3 tools/time_dp_accounting.py

CI never runs this script; it is for one-off comparisons only.
"""

import logging
import platform
import statistics
import timeit

import dp_accounting
from dp_accounting import dp_event
from dp_accounting import rdp as dp_rdp
from dp_accounting.rdp import rdp_privacy_accountant as rdp_mod

REPEATS = 7
Q, SIGMA, STEPS, DELTA = 0.01, 1.1, 1000, 1e-5
RS_RHO, RS_MEAN, RS_ZCDP_SHAPE, RS_ZCDP_DELTA = 0.1, 100, 0, 1e-6
RS_DPSGD_SHAPE = 1

logging.getLogger("absl").setLevel(logging.ERROR)


def dpsgd_event():
    return dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(Q, dp_accounting.GaussianDpEvent(SIGMA)),
        STEPS,
    )


def full_accounting():
    acc = dp_rdp.RdpAccountant()
    acc.compose(dpsgd_event())
    return acc.get_epsilon(DELTA)


def repeat_select_zcdp():
    acc = dp_rdp.RdpAccountant()
    acc.compose(dp_event.RepeatAndSelectDpEvent(
        dp_accounting.ZCDpEvent(RS_RHO), RS_MEAN, RS_ZCDP_SHAPE))
    return acc.get_epsilon(RS_ZCDP_DELTA)


def repeat_select_dpsgd():
    acc = dp_rdp.RdpAccountant()
    acc.compose(dp_event.RepeatAndSelectDpEvent(dpsgd_event(), RS_MEAN, RS_DPSGD_SHAPE))
    return acc.get_epsilon(DELTA)


def main():
    acc = dp_rdp.RdpAccountant()
    acc.compose(
        dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(Q, dp_accounting.GaussianDpEvent(SIGMA)),
            STEPS,
        )
    )
    orders = acc.orders  # numpy array, exactly what get_epsilon passes
    rdp = acc.rdp
    assert len(orders) == len(rdp_mod.DEFAULT_RDP_ORDERS) == 156

    def conversion():
        return rdp_mod.compute_epsilon(orders, rdp, DELTA)

    eps_a = full_accounting()
    eps_b, order_b = conversion()
    assert eps_a == eps_b
    eps_c = repeat_select_zcdp()
    eps_d = repeat_select_dpsgd()

    rows = []
    for name, fn in (
        ("(a) full DP-SGD accounting (q=0.01, sigma=1.1, T=1000, delta=1e-5)", full_accounting),
        ("(b) compute_epsilon only (156 orders, delta=1e-5)", conversion),
        ("(c) repeat-and-select zCDP (rho=0.1, mean=100, shape=0, delta=1e-6)",
         repeat_select_zcdp),
        ("(d) repeat-and-select DP-SGD of (a) (mean=100, shape=1, delta=1e-5)",
         repeat_select_dpsgd),
    ):
        timer = timeit.Timer(fn)
        number, _ = timer.autorange()
        per_call = [t / number for t in timer.repeat(repeat=REPEATS, number=number)]
        rows.append((name, min(per_call), statistics.median(per_call), number))

    print(f"dp-accounting 0.6.0, Python {platform.python_version()}, "
          f"{platform.machine()} ({platform.processor() or 'cpu'})")
    print(f"(a)/(b) epsilon = {float(eps_a)!r} at order {float(order_b)}")
    print(f"(c) epsilon = {float(eps_c)!r}")
    print(f"(d) epsilon = {float(eps_d)!r}")
    print()
    w = max(len(r[0]) for r in rows)
    print(f"{'workload':{w}s}  {'best s/call':>12s}  {'median s/call':>13s}  {'loops':>6s}")
    for name, best, med, number in rows:
        print(f"{name:{w}s}  {best:12.4e}  {med:13.4e}  {number:6d}")
    print(f"(best and median of {REPEATS} repeats)")


if __name__ == "__main__":
    main()
