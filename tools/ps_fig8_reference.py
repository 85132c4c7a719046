#!/usr/bin/env python3
"""Independent reference for spec 000 Fig. 8 (tests/fixtures/ps_fig8_three_point.csv).

The three-outcome example of Papernot-Steinke Appendix D.2, with (s, t) solved by scipy's
fsolve (a different method from dptune's scan-and-bisect) so that D_lam(Q||Q') = rho*lam and
D_{lam-1}(Q'||Q) = rho*(lam-1); the exact conditional divergence is computed from the
conditional distributions directly (not the closed form dptune uses), and the upper bound is
Corollary 16(2) with the example's Q(S). Run: python3 tools/ps_fig8_reference.py > FILE.
Needs numpy and scipy (not needed by CI: the output is committed).
"""
import math
from scipy.optimize import fsolve

RHO = 0.1


def q(a, s, t):
    return [a * math.exp(-s), a * math.exp(-s), 1 - 2 * a * math.exp(-s)]


def q_prime(a, s, t):
    return [a * math.exp(-s - t), a, 1 - a - a * math.exp(-s - t)]


def renyi(lam, p, r):
    if abs(lam - 1) < 1e-12:
        return sum(pi * math.log(pi / ri) for pi, ri in zip(p, r) if pi > 0)
    return math.log(sum(pi ** lam * ri ** (1 - lam) for pi, ri in zip(p, r))) / (lam - 1)


def solve(lam, a):
    def f(x):
        s, t = math.exp(min(x[0], 5)), math.exp(min(x[1], 5))
        try:
            return [renyi(lam, q(a, s, t), q_prime(a, s, t)) - RHO * lam,
                    renyi(lam - 1, q_prime(a, s, t), q(a, s, t)) - RHO * (lam - 1)]
        except (ValueError, ZeroDivisionError, OverflowError):
            return [1e3, 1e3]
    roots = []
    for s0 in [0.001, 0.01, 0.1, 0.5, 1, 2, 4, 8]:
        for t0 in [0.01, 0.1, 0.5, 1, 2, 4]:
            x = fsolve(f, [math.log(s0), math.log(t0)], xtol=1e-14)
            if max(abs(v) for v in f(x)) < 1e-11:
                roots.append((math.exp(x[0]), math.exp(x[1])))
    # dptune takes the root of smallest s: report that one.
    return min(roots) if roots else None


print("a,order,s,t,q_s,upper,exact_example")
for a in [0.25, 0.1, 0.01]:
    for lam in [1.5, 2.5, 5.0, 10.0, 25.0]:
        st = solve(lam, a)
        if st is None:
            print(f"{a},{lam},,,,,")
            continue
        s, t = st
        p, r = q(a, s, t), q_prime(a, s, t)
        zs, zr = p[0] + p[1], r[0] + r[1]
        exact = renyi(lam, [p[0] / zs, p[1] / zs], [r[0] / zr, r[1] / zr])
        middle = RHO * (lam - 2) if lam > 2 else 0.0
        upper = RHO * lam + middle + 2 * math.log(1 / zs) / (lam - 1)
        print(f"{a},{lam},{s:.12g},{t:.12g},{zs:.12g},{upper:.12g},{exact:.12g}")
