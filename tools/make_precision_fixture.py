#!/usr/bin/env python3
"""High-precision reference values for dptune's privacy-accounting conversions.

Writes tests/fixtures/precision/reference.csv (relative to the repository root), the fixture
that the Rust precision tests read. Nothing is random: the grids are fixed lists below, the
output is a pure function of them (and of mpmath's arithmetic), and re-running the script
rewrites a byte-identical file.

How to run (from anywhere; the only dependency is mpmath):

    pip install mpmath
    python3 tools/make_precision_fixture.py            # full grid, about 2 minutes of one core
    python3 tools/make_precision_fixture.py --small    # a thinned grid, for a quick smoke run
                                                   # (writes to stdout, not to the fixture)

CSV format
----------
Header `function,a,b,exact`, one row per point. `a` and `b` are the f64 inputs written with
Python's repr(float) (shortest round-trip form, so Rust's str::parse::<f64> gives back the very
same double); every computation starts from mpmath.mpf(that float), i.e. from the exact binary
value of the double, never from a decimal string. `exact` is the exact mathematical value,
rounded to 30 significant digits, written `d.ddddddddddddddddddddddddddddde[+-]N` (29 digits
after the point, exponent always signed, possibly very long: values below the smallest positive
double, 4.9e-324, are still written as their exact decimal, e.g. `1.2...e-10857362...`, which
Rust and Python parse to 0.0), or `0` when the value is exactly zero (no `inf` occurs: no
point of the grids has an infinite value). Values that exceed f64::MAX (gaussian_rho at
Delta = 1e200, sigma = 1e-200: 5e799) are written exactly too; they parse to inf.
Rows far below the smallest double (tiny rho, tiny mu) carry decimal exponents of hundreds of
digits; the rho grid is thinned below 1e-40 to keep the file small.

Precision policy
----------------
Every value is computed twice, with base working precisions of 100+x and 150+x decimal digits
(x = 0, then 150, then 600 if the two disagree), each raised further where the formula needs it
(cancellation, exp of a huge argument), and the two must agree to a relative 1e-36 before the
value is written. Several independent cross-checks run as assertions at start-up (see
self_checks()).

Functions (lambda denotes a real Renyi order > 1)
-------------------------------------------------
zcdp_delta (a = rho >= 0, b = eps >= 0)
    delta = min(1, KL, CKS) for the RDP curve eps(lambda) = rho*lambda, where
    KL  = sqrt(1 - exp(-rho))  (Bretagnolle-Huber at lambda -> 1; the infimum over lambda > 1
          of sqrt(1 - exp(-rho*lambda))), and
    CKS = inf_{lambda>1} exp(g(lambda)),
          g(lambda) = (lambda-1)(rho*lambda - eps + ln(1 - 1/lambda)) - ln(lambda)
    (Canonne-Kamath-Steinke 2020, "The discrete Gaussian for differential privacy",
    arXiv:2004.00010v4 Prop. 12; equivalently
    exp((lambda-1)(rho*lambda - eps)) / (lambda-1) * (1 - 1/lambda)^lambda). rho = 0 gives 0.
    Computation: g(lambda) = (lambda-1)(rho*lambda - eps) + (lambda-1) ln(lambda-1) - lambda ln(lambda),
    so g'' = 2 rho + 1/(lambda (lambda-1)) > 0: g is strictly convex on (1, inf), with
    g' = rho (2 lambda - 1) - eps + ln(1 - 1/lambda) -> -inf at lambda -> 1+ and -> +inf at
    lambda -> inf when rho > 0. So for rho > 0 the infimum is ALWAYS attained at a unique interior
    lambda* (never at the limits lambda -> 1 or lambda -> inf), where g(lambda*) < 0 =
    g(1+). We solve g'(lambda) = 0 for t = ln(lambda - 1) (bracket [-60, 700], widened as
    needed, then safeguarded Newton to full precision) and evaluate g there; at the root
    g = -rho (lambda*-1)^2 - ln(lambda*), which the script checks. lambda* - 1 ranges from
    about e^-999000 (rho = 1e6, eps = 1000) to about 1e326 (rho = 5e-324, eps = 1000): far
    outside what f64 can hold. Working precision is raised by log10|g| digits so that
    exp(g) has 30 correct digits even when |g| ~ 1e329. ln(1 - 1/lambda) is evaluated as
    -log1p(e^-t) (t - ln(lambda) would cancel ~160 digits at rho ~ 1e-318). On these grids the
    KL term is never the smaller one except where both round to 1 (rho >= 1e5).
zcdp_epsilon (a = rho >= 0, b = delta in (0, 1))
    0 if delta >= sqrt(1 - exp(-rho)) (KL route), else
    inf_{lambda>1} max(0, f(lambda)),  f(lambda) = rho*lambda + ln(1 - 1/lambda) - ln(delta*lambda)/(lambda-1)
    (the same CKS bound, solved for eps).
    f'(lambda) = rho - (ln(1/delta) - ln lambda)/(lambda-1)^2 changes sign once (from - to +),
    so the minimum is interior and unique: rho u^2 + ln(1+u) = ln(1/delta) (u = lambda-1), where
    f = rho (1 + 2u) + ln(u/(1+u)) (checked against the direct formula).
zcdp_epsilon_mironov (a = rho, b = delta)
    inf_{lambda>1} rho*lambda + ln(1/delta)/(lambda-1) = rho + 2 sqrt(rho ln(1/delta))
    (Mironov 2017 Prop. 3 applied to zCDP / Bun-Steinke 2016 Prop. 1.3). The closed form is
    checked against a numerical minimisation. For rho = 0 the infimum (0) is approached as
    lambda -> inf.
gdp_delta (a = mu > 0, b = eps >= 0)
    Dong-Roth-Su 2019 ("Gaussian differential privacy"), Cor. 2.13:
    delta = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2).
    The difference cancels catastrophically for small mu and large eps/mu (up to ~650 digits
    at mu = 1e-300, eps = 1000): the working precision is raised until
    log10(Phi(a)/delta) + 50 digits survive, and also beyond log10(a^2) + 50 so that
    exp(-a^2/2) is exact to 30 digits. Phi(x) = erfc(-x/sqrt 2)/2 (mpmath.ncdf) for x > -1e6,
    and the asymptotic Mills-ratio series phi(y)/y * sum (-1)^n (2n-1)!!/y^(2n) for y = -x >= 1e6
    (mpmath's erfc overflows a Python float for arguments > ~1e154); the two routes and the
    regularised incomplete gamma Q(1/2, y^2/2)/2 are cross-checked, and the formula is checked
    against the positive-integrand form delta = E[(1 - e^(eps-L))_+], L ~ N(mu^2/2, mu^2).
gdp_epsilon (a = mu > 0, b = delta in (0, 1))
    the eps >= 0 with gdp_delta(mu, eps) = delta, or 0 if gdp_delta(mu, 0) <= delta.
    Safeguarded Newton on ln delta(eps) - ln(target), using d delta/d eps = -e^eps Phi(-eps/mu - mu/2).
gaussian_rho (a = sensitivity Delta > 0, b = sigma > 0)
    rho = Delta^2 / (2 sigma^2), exactly (e.g. 5e-601 at Delta = 1e-200, sigma = 1e200).
poisson_gaussian_rdp_N, N in {2, 3, 8, 32, 256} (a = q in (0, 1], b = sigma > 0)
    RDP at the integer order N of the Poisson-subsampled Gaussian mechanism (Mironov-Talwar-
    Zhang 2019, "Renyi differential privacy of the sampled Gaussian mechanism", the exact
    binomial expansion for integer orders):
    eps(N) = 1/(N-1) ln sum_{k=0}^{N} C(N,k) (1-q)^(N-k) q^k exp((k^2-k)/(2 sigma^2)),
    computed as log1p(sum_{k>=2} C(N,k)(1-q)^(N-k) q^k expm1((k^2-k)/(2 sigma^2)))/(N-1)
    (the binomial weights sum to 1 exactly); at q = 1 it must equal N/(2 sigma^2) (asserted).
laplace_rdp (a = b = Laplace scale / l1-sensitivity > 0, b = lambda > 1)
    Mironov 2017 ("Renyi differential privacy"), Prop. 6 / Table II:
    eps(lambda) = 1/(lambda-1) ln( lambda/(2 lambda-1) exp((lambda-1)/b)
                                  + (lambda-1)/(2 lambda-1) exp(-lambda/b) ),
    computed as log1p of the two expm1 terms (they cancel to first order in 1/b).

Grids
-----
rho: 0, 5e-324, 10^k for k = -320..6 (1e-17 included); eps: 0, 1e-300, 1e-30, 1e-12, 1e-6,
1e-3, 0.01, 0.1, 0.5, 1, 2, 5, 10, 30, 100, 1000; delta: 5e-324, 1e-310, 1e-300, 1e-200,
1e-100, 1e-50, 1e-20, 1e-12, 1e-9, 1e-6, 1e-5, 1e-3, 0.01, 0.1, 0.3, 0.5, 0.9, 0.999;
mu: 1e-300, 1e-100, 1e-30, 1e-17, 1e-12, 1e-8, 1e-6, 1e-4, 1e-3, 0.01, 0.1, 0.3, 0.5, 1, 2,
5, 10, 30, 100; gaussian_rho: Delta in {1e-200, 1, 1e200} x sigma in {1e-200, 1e-3, 1, 1e3,
1e150, 1e160, 1e170, 1e200, 1e300}; poisson: q in {1e-12, 1e-9, 1e-6, 1e-4, 0.01, 0.1, 0.5, 1}
x sigma in {0.1, 0.5, 1, 2, 10, 1e3, 1e6}; laplace: b in {1e-3, 0.1, 1, 10, 1e3, 1e8, 1e15} x
lambda in {1.0001, 1.5, 2, 10, 1000, 1e6}. Every combination is written (none is infinite or
ill-defined; the grids are not thinned). Each decimal above is converted with float(), so
1e-320 means the nearest (subnormal) double, 9.99988671826831e-321.
"""
from __future__ import annotations

import math
import re
import sys
import time
from pathlib import Path

import mpmath
from mpmath import mp, mpf
from mpmath.libmp import to_str

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "tests" / "fixtures" / "precision" / "reference.csv"

# ---------------------------------------------------------------------------------------------
# grids (every entry a Python float; decimals go through float() = the nearest double)

# Every power of ten from 1e-40 up, every tenth one below (down to the subnormals): the tiny-rho
# rows underflow alike, and the whole grid made a 1.7 MB file.
RHO = sorted(set([0.0, 5e-324, 1e-17] + [float(f"1e{k}") for k in range(-40, 7)]
                 + [float(f"1e{k}") for k in range(-320, -40, 10)]))
EPS = [0.0, 1e-300, 1e-30, 1e-12, 1e-6, 1e-3, 0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0,
       100.0, 1000.0]
DELTA = [5e-324, 1e-310, 1e-300, 1e-200, 1e-100, 1e-50, 1e-20, 1e-12, 1e-9, 1e-6, 1e-5,
         1e-3, 0.01, 0.1, 0.3, 0.5, 0.9, 0.999]
MU = [1e-300, 1e-100, 1e-30, 1e-17, 1e-12, 1e-8, 1e-6, 1e-4, 1e-3, 0.01, 0.1, 0.3, 0.5, 1.0,
      2.0, 5.0, 10.0, 30.0, 100.0]
GR_DELTA = [1e-200, 1.0, 1e200]
GR_SIGMA = [1e-200, 1e-3, 1.0, 1e3, 1e150, 1e160, 1e170, 1e200, 1e300]
PG_Q = [1e-12, 1e-9, 1e-6, 1e-4, 0.01, 0.1, 0.5, 1.0]
PG_SIGMA = [0.1, 0.5, 1.0, 2.0, 10.0, 1e3, 1e6]
PG_ORDERS = [2, 3, 8, 32, 256]
LAP_B = [1e-3, 0.1, 1.0, 10.0, 1e3, 1e8, 1e15]
LAP_ORDER = [1.0001, 1.5, 2.0, 10.0, 1000.0, 1e6]

BASE_DPS = 100

# ---------------------------------------------------------------------------------------------
# helpers


def fmt(x) -> str:
    """30 significant digits, always in exponent form; `0` for an exact zero."""
    if x == 0:
        return "0"
    if mpmath.isinf(x):
        return "inf"
    assert x > 0, x
    return to_str(x._mpf_, 30, strip_zeros=False, min_fixed=1, max_fixed=0,
                  show_zero_exponent=True)


def rel_close(x, y, rel) -> bool:
    if x == y:
        return True
    if x == 0 or y == 0:
        return False
    with mp.workdps(60):
        return abs(x - y) <= mpf(rel) * max(abs(x), abs(y))


def digits(x) -> int:
    """~log10|x| (0 for |x| <= 1), cheap and safe for huge exponents."""
    x = abs(x)
    if x <= 1:
        return 0
    return int(mpmath.mag(x) * 0.30103) + 2


def solve_increasing(h, dh, lo, hi, x0=None):
    """Root of an increasing h in the working precision: widen [lo, hi] until it brackets,
    then Newton safeguarded by bisection (Numerical Recipes' rtsafe: bisect whenever the
    Newton step leaves the bracket or fails to halve the step before last). Once a Newton
    step is below sqrt(working epsilon), one more step reaches full precision."""
    lo, hi = mpf(lo), mpf(hi)
    while h(lo) >= 0:
        lo -= max(mpf(1), abs(lo))
    while h(hi) <= 0:
        hi += max(mpf(1), abs(hi))
    x = x0 if (x0 is not None and lo < x0 < hi) else (lo + hi) / 2
    half_eps = mpf(2) ** (-(mp.prec // 2) + 4)
    dx_old = dx = hi - lo
    for _ in range(5000):
        hx, dhx = h(x), dh(x)
        if hx == 0:
            return x
        if hx < 0:
            lo = x
        else:
            hi = x
        step = hx / dhx
        xn = x - step
        if not lo < xn < hi or abs(2 * step) > abs(dx_old):
            dx_old, dx = dx, (hi - lo) / 2
            xn = lo + dx
        else:
            dx_old, dx = dx, step
            if abs(step) <= half_eps * (1 + abs(x)):
                return xn - h(xn) / dh(xn)
        if hi - lo <= 4 * mpf(2) ** (-mp.prec) * (1 + abs(x)):
            return xn
        x = xn
    raise RuntimeError("solve_increasing did not converge")


def golden_min(f, lo, hi, iters):
    """Golden-section minimum of a unimodal f on [lo, hi] (an independent route for checks)."""
    r = (mp.sqrt(5) - 1) / 2
    lo, hi = mpf(lo), mpf(hi)
    c, d = hi - r * (hi - lo), lo + r * (hi - lo)
    fc, fd = f(c), f(d)
    for _ in range(iters):
        if fc < fd:
            hi, d, fd = d, c, fc
            c = hi - r * (hi - lo)
            fc = f(c)
        else:
            lo, c, fc = c, d, fd
            d = lo + r * (hi - lo)
            fd = f(d)
    return min(fc, fd)


# statistics on the optimal orders, for the report
LAMBDA_STATS: dict[str, list] = {}


def note_lambda(name, a, b, t):
    """Record t = ln(lambda* - 1) (as a float, possibly huge) for the summary."""
    LAMBDA_STATS.setdefault(name, []).append((float(t), a, b))


# ---------------------------------------------------------------------------------------------
# zCDP


def zcdp_delta(rho_f: float, eps_f: float, extra: int):
    if rho_f == 0.0:
        return mpf(0)

    def h(t):  # g'(lambda) at lambda = 1 + e^t; increasing in t
        # ln(1 - 1/lambda) = -log1p(e^-t): no cancellation between t and ln(lambda)
        return rho * (1 + 2 * mp.exp(t)) - eps - mp.log1p(mp.exp(-t))

    def dh(t):
        u = mp.exp(t)
        return 2 * rho * u + 1 / (1 + u)

    with mp.workdps(30):
        rho, eps = mpf(rho_f), mpf(eps_f)
        t0 = solve_increasing(h, dh, -60, 700)
        u0 = mp.exp(t0)
        gmag = rho * u0 * u0 + mp.log1p(u0)
    dps = BASE_DPS + extra + digits(gmag) + digits(t0)
    with mp.workdps(dps):
        rho, eps = mpf(rho_f), mpf(eps_f)
        w = mpf("1e-20") * (1 + abs(t0))
        t = solve_increasing(h, dh, t0 - w, t0 + w, t0)
        u = mp.exp(t)
        ln_lam = mp.log1p(u)
        ln_1m = -mp.log1p(mp.exp(-t))  # ln(1 - 1/lambda)
        g = u * (rho * (1 + u) - eps + ln_1m) - ln_lam  # the objective itself
        g_root = -rho * u * u - ln_lam  # its value at the stationary point
        assert rel_close(g, g_root, "1e-40"), (rho_f, eps_f, g, g_root)
        assert g < 0
        kl = mp.sqrt(-mp.expm1(-rho))
        if extra == 0:
            note_lambda("zcdp_delta", rho_f, eps_f, t)
        return min(mpf(1), kl, mp.exp(g))


def zcdp_epsilon(rho_f: float, delta_f: float, extra: int):
    if rho_f == 0.0:
        return mpf(0)  # KL = 0 <= delta
    with mp.workdps(BASE_DPS + extra):
        rho, delta = mpf(rho_f), mpf(delta_f)
        if delta >= mp.sqrt(-mp.expm1(-rho)):
            return mpf(0)
        big_l = -mp.log(delta)

        def h(t):  # rho u^2 + ln(1+u) - ln(1/delta), increasing in t = ln u
            u = mp.exp(t)
            return rho * u * u + mp.log1p(u) - big_l

        def dh(t):
            u = mp.exp(t)
            return 2 * rho * u * u + u / (1 + u)

        t = solve_increasing(h, dh, -60, 700)
        u = mp.exp(t)
        ln_lam = mp.log1p(u)
        ln_1m = -mp.log1p(mp.exp(-t))  # ln(1 - 1/lambda)
        f_root = rho * (1 + 2 * u) + ln_1m
        f_direct = rho * (1 + u) + ln_1m - (mp.log(delta) + ln_lam) / u
        scale = rho * (1 + u) + abs(ln_1m) + abs((mp.log(delta) + ln_lam) / u)
        assert abs(f_root - f_direct) <= mpf(10) ** (-BASE_DPS - extra + 20) * scale, (
            rho_f, delta_f, f_root, f_direct)
        if extra == 0:
            note_lambda("zcdp_epsilon", rho_f, delta_f, t)
        return max(mpf(0), f_root)


def zcdp_epsilon_mironov(rho_f: float, delta_f: float, extra: int):
    with mp.workdps(BASE_DPS + extra):
        rho, delta = mpf(rho_f), mpf(delta_f)
        return rho + 2 * mp.sqrt(rho * -mp.log(delta))


# ---------------------------------------------------------------------------------------------
# Gaussian DP

MILLS_SWITCH = mpf(10) ** 6


def phi_lower(y):
    """Phi(-y) for y >= 1e6 by the (convergent-enough) asymptotic Mills-ratio series."""
    y2 = y * y
    s, term, n = mpf(1), mpf(1), 1
    eps = mpf(2) ** (-mp.prec - 4)
    while True:
        term = -term * (2 * n - 1) / y2
        s += term
        if abs(term) < eps:
            break
        n += 1
    return mp.exp(-y2 / 2) / mp.sqrt(2 * mp.pi) / y * s


def Phi(x):
    if x < -MILLS_SWITCH:
        return phi_lower(-x)
    return mp.ncdf(x)


def gdp_delta_parts(mu, eps, extra, dps):
    """(delta, e^eps Phi(b), dps used) with the working precision raised until the
    cancellation in Phi(a) - e^eps Phi(b) leaves >= 50 + extra correct digits."""
    for _ in range(40):
        with mp.workdps(dps):
            mu_, eps_ = mpf(mu), mpf(eps)
            a = -eps_ / mu_ + mu_ / 2
            b = -eps_ / mu_ - mu_ / 2
            need_exp = digits(b * b) + 50 + extra  # exp(-a^2/2) exact to 30+ digits
            if dps < need_exp:
                dps = need_exp
                continue
            t1 = Phi(a)
            t2 = mp.exp(eps_) * Phi(b)
            d = t1 - t2
            if d > 0:
                loss = float(mpmath.log10(t1 / d))
                need = int(loss) + 55 + extra
                if dps >= need:
                    return d, t2, dps
                dps = max(need, 2 * dps)  # a garbage difference underestimates the loss
            else:
                dps *= 2
    raise RuntimeError(f"gdp_delta did not stabilise at mu={mu!r}, eps={eps!r}")


def gdp_delta(mu_f: float, eps_f: float, extra: int):
    d, _, dps = gdp_delta_parts(mu_f, eps_f, extra, BASE_DPS + extra)
    return d


def gdp_epsilon(mu_f: float, delta_f: float, extra: int):
    dps = BASE_DPS + extra
    d0, _, dps = gdp_delta_parts(mu_f, 0.0, extra, dps)
    with mp.workdps(dps):
        if d0 <= mpf(delta_f):
            return mpf(0)
    state = {"dps": dps}

    def F(e):  # ln delta(e) - ln target, and its derivative
        d, t2, used = gdp_delta_parts(mu_f, e, extra, state["dps"])
        state["dps"] = max(state["dps"], used)
        with mp.workdps(state["dps"]):
            return mp.log(d) - mp.log(mpf(delta_f)), -t2 / d

    with mp.workdps(dps):
        mu = mpf(mu_f)
        lo, hi = mpf(0), max(mu, mu * mu)
        while F(hi)[0] > 0:
            lo, hi = hi, 2 * hi
    tol_digits = 50 + extra
    x = (lo + hi) / 2
    for _ in range(300):
        fx, dfx = F(x)
        with mp.workdps(state["dps"]):
            if fx == 0:
                return x
            if fx > 0:
                lo = x
            else:
                hi = x
            step = fx / dfx
            if abs(step) <= mpf(10) ** (-tol_digits) * abs(x):
                return x - step
            xn = x - step
            if not lo < xn < hi:
                xn = (lo + hi) / 2
            x = xn
    raise RuntimeError(f"gdp_epsilon did not converge at mu={mu_f!r}, delta={delta_f!r}")


# ---------------------------------------------------------------------------------------------
# the rest


def gaussian_rho(sens_f: float, sigma_f: float, extra: int):
    with mp.workdps(BASE_DPS + extra):
        s, sig = mpf(sens_f), mpf(sigma_f)
        return s * s / (2 * sig * sig)


def poisson_gaussian_rdp(order: int):
    def fn(q_f: float, sigma_f: float, extra: int):
        with mp.workdps(BASE_DPS + extra):
            q, sig = mpf(q_f), mpf(sigma_f)
            s = mpf(0)
            for k in range(2, order + 1):
                s += (mp.binomial(order, k) * (1 - q) ** (order - k) * q**k
                      * mp.expm1(mpf(k * k - k) / (2 * sig * sig)))
            return mp.log1p(s) / (order - 1)

    return fn


def laplace_rdp(b_f: float, order_f: float, extra: int):
    with mp.workdps(BASE_DPS + extra):
        b, lam = mpf(b_f), mpf(order_f)
        x = (lam / (2 * lam - 1) * mp.expm1((lam - 1) / b)
             + (lam - 1) / (2 * lam - 1) * mp.expm1(-lam / b))
        return mp.log1p(x) / (lam - 1)


# ---------------------------------------------------------------------------------------------
# driver


def exact(fn, a: float, b: float):
    """The value at two precisions, which must agree to 1e-36 relative; escalate if not."""
    for extra in (0, 150, 600):
        v1 = fn(a, b, extra)
        v2 = fn(a, b, extra + 50)
        if rel_close(v1, v2, "1e-36"):
            return v2
    raise RuntimeError(f"{fn} unstable at a={a!r}, b={b!r}: {v1} vs {v2}")


def self_checks():
    """Independent routes, as assertions."""
    # Phi: own tail series vs mpmath.ncdf vs the regularised incomplete gamma
    for y in (mpf(10) ** 6, mpf(3) * 10**7, mpf(10) ** 50, mpf(10) ** 120):
        with mp.workdps(digits(y * y) + 80):
            s = phi_lower(y)
            n = mp.ncdf(-y)
            g = mp.gammainc(mpf(1) / 2, y * y / 2, regularized=True) / 2
            assert rel_close(s, n, "1e-60") and rel_close(s, g, "1e-60"), (y, s, n, g)
    # gdp_delta: the float-free closed form at 30 digits vs 100+; and vs the positive-integrand
    # form delta = E[(1 - e^(eps - L))_+], L ~ N(mu^2/2, mu^2)
    for mu_f, eps_f in ((1.0, 1.0), (0.5, 2.0), (2.0, 0.1), (0.3, 0.0), (5.0, 10.0)):
        ref = exact(gdp_delta, mu_f, eps_f)
        with mp.workdps(30):
            mu, eps = mpf(mu_f), mpf(eps_f)
            low = mp.ncdf(-eps / mu + mu / 2) - mp.exp(eps) * mp.ncdf(-eps / mu - mu / 2)
        assert rel_close(low, ref, "1e-25"), (mu_f, eps_f, low, ref)
        with mp.workdps(40):
            mu, eps = mpf(mu_f), mpf(eps_f)
            m = mu * mu / 2
            dens = lambda l: mp.npdf(l, m, mu) * -mp.expm1(eps - l)
            quad = mp.quad(dens, [eps, m, m + 5 * mu, m + 10 * mu, m + 40 * mu, mp.inf]
                           if m > eps else [eps, eps + 5 * mu, eps + 40 * mu, mp.inf])
        assert rel_close(quad, ref, "1e-25"), (mu_f, eps_f, quad, ref)
    # extreme gdp points: dps >= 200 route vs the value written
    for mu_f, eps_f in ((1e-300, 1e-300), (1e-300, 1000.0), (1e-17, 30.0), (100.0, 1000.0)):
        a = exact(gdp_delta, mu_f, eps_f)
        b = gdp_delta(mu_f, eps_f, 200)
        assert rel_close(a, b, "1e-36"), (mu_f, eps_f, a, b)
    # gdp_epsilon inverts gdp_delta
    for mu_f, d_f in ((1.0, 1e-5), (1e-12, 1e-300), (30.0, 5e-324)):
        e = exact(gdp_epsilon, mu_f, d_f)
        d, _, _ = gdp_delta_parts(mu_f, e, 100, 200)
        assert rel_close(d, mpf(d_f), "1e-35"), (mu_f, d_f, e, d)
    # zcdp_epsilon_mironov: closed form vs numerical minimisation
    for rho_f, d_f in ((0.5, 1e-5), (1e-6, 1e-9), (3.0, 0.3), (1e-100, 1e-200)):
        ref = exact(zcdp_epsilon_mironov, rho_f, d_f)
        with mp.workdps(60):
            rho, big_l = mpf(rho_f), -mp.log(mpf(d_f))
            num = golden_min(lambda t: rho * (1 + mp.exp(t)) + big_l * mp.exp(-t), -60, 700, 250)
        assert rel_close(num, ref, "1e-25"), (rho_f, d_f, num, ref)
    # zcdp_delta / zcdp_epsilon: root formulas vs golden-section on the original objectives
    for rho_f, eps_f in ((0.01, 0.0), (0.5, 1.0), (1e-6, 1e-3), (2.0, 10.0), (1e-30, 1e-12)):
        ref = exact(zcdp_delta, rho_f, eps_f)
        with mp.workdps(60):
            rho, eps = mpf(rho_f), mpf(eps_f)

            def g(t):
                lam = 1 + mp.exp(t)
                return (lam - 1) * (rho * lam - eps + mp.log(1 - 1 / lam)) - mp.log(lam)

            num = min(mp.sqrt(1 - mp.exp(-rho)), mp.exp(golden_min(g, -60, 200, 250)))
        assert rel_close(num, ref, "1e-25"), (rho_f, eps_f, num, ref)
    for rho_f, d_f in ((0.5, 1e-5), (1e-6, 1e-9), (3.0, 1e-3), (10.0, 1e-300)):
        ref = exact(zcdp_epsilon, rho_f, d_f)
        with mp.workdps(60):
            rho, delta = mpf(rho_f), mpf(d_f)

            def f(t):
                lam = 1 + mp.exp(t)
                return rho * lam + mp.log(1 - 1 / lam) - mp.log(delta * lam) / (lam - 1)

            num = max(0, golden_min(f, -60, 200, 250))
        assert rel_close(num, ref, "1e-25"), (rho_f, d_f, num, ref)
    # poisson_gaussian_rdp at q = 1 is the plain Gaussian: lambda / (2 sigma^2)
    for order in PG_ORDERS:
        for sig_f in PG_SIGMA:
            v = exact(poisson_gaussian_rdp(order), 1.0, sig_f)
            with mp.workdps(BASE_DPS):
                assert rel_close(v, mpf(order) / (2 * mpf(sig_f) ** 2), "1e-40"), (order, sig_f)
    # laplace_rdp vs the form dptune uses: e + ln(1 + (l-1)(e^((1-2l)e) - 1)/(2l-1))/(l-1), e=1/b
    for b_f, l_f in ((1.0, 2.0), (0.1, 10.0), (10.0, 1.5), (1e3, 1000.0)):
        ref = exact(laplace_rdp, b_f, l_f)
        with mp.workdps(200):
            e, lam = 1 / mpf(b_f), mpf(l_f)
            alt = e + mp.log1p((lam - 1) * mp.expm1((1 - 2 * lam) * e) / (2 * lam - 1)) / (lam - 1)
        assert rel_close(alt, ref, "1e-36"), (b_f, l_f, alt, ref)
    # issue 37's point: zCDP rho = 1e-17 at eps = 0; small-rho asymptote sqrt(2 rho / e)
    # small-rho asymptote of the CKS bound at eps = 0: lambda* ~ 1/sqrt(2 rho) and
    # delta ~ sqrt(2 rho / e) (1 + O(sqrt rho)); an independent check of the far-out roots
    for rho_f in (5e-324, 1e-318, 1e-200, 1e-40):
        v = exact(zcdp_delta, rho_f, 0.0)
        with mp.workdps(40):
            asym = mp.sqrt(2 * mpf(rho_f) / mp.e)
        assert rel_close(v, asym, "1e-15"), (rho_f, v, asym)
    v = exact(zcdp_delta, 1e-17, 0.0)
    with mp.workdps(40):
        asym = mp.sqrt(2 * mpf(1e-17) / mp.e)
    assert rel_close(v, asym, "1e-6"), (v, asym)
    print(f"self-checks passed; zcdp_delta(1e-17, 0) = {fmt(v)} "
          f"(small-rho asymptote sqrt(2 rho/e) = {mp.nstr(asym, 12)}; "
          f"KL = {mp.nstr(mp.sqrt(-mp.expm1(-mpf(1e-17))), 12)})", file=sys.stderr)
    LAMBDA_STATS.clear()


def jobs(small: bool):
    pick = (lambda xs: sorted(set(xs[::4] + xs[-1:]))) if small else (lambda xs: xs)
    rho = pick(RHO)
    yield "zcdp_delta", zcdp_delta, [(r, e) for r in rho for e in EPS]
    yield "zcdp_epsilon", zcdp_epsilon, [(r, d) for r in rho for d in DELTA]
    yield "zcdp_epsilon_mironov", zcdp_epsilon_mironov, [(r, d) for r in rho for d in DELTA]
    yield "gdp_delta", gdp_delta, [(m, e) for m in MU for e in EPS]
    yield "gdp_epsilon", gdp_epsilon, [(m, d) for m in MU for d in DELTA]
    yield "gaussian_rho", gaussian_rho, [(s, g) for s in GR_DELTA for g in GR_SIGMA]
    for order in PG_ORDERS:
        yield (f"poisson_gaussian_rdp_{order}", poisson_gaussian_rdp(order),
               [(q, s) for q in PG_Q for s in PG_SIGMA])
    yield "laplace_rdp", laplace_rdp, [(b, l) for b in LAP_B for l in LAP_ORDER]


ROW_RE = re.compile(r"^(0|inf|[0-9]\.[0-9]{29}e[+-][0-9]+)$")


def main():
    small = "--small" in sys.argv[1:]
    start = time.perf_counter()
    self_checks()
    print(f"self-checks: {time.perf_counter() - start:.1f} s", file=sys.stderr)
    lines = ["function,a,b,exact"]
    summary = []
    for name, fn, points in jobs(small):
        t0 = time.perf_counter()
        n = 0
        for a, b in points:
            v = exact(fn, a, b)
            if mpmath.isinf(v):
                continue  # infinite: dropped (none on the current grids)
            s = fmt(v)
            assert ROW_RE.match(s), s
            float(s)
            lines.append(f"{name},{a!r},{b!r},{s}")
            n += 1
        summary.append((name, n, time.perf_counter() - t0))
    text = "\n".join(lines) + "\n"
    if small:
        sys.stdout.write(text)
    else:
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(text)
    for name, n, dt in summary:
        print(f"{name:28s} {n:6d} rows  {dt:7.1f} s", file=sys.stderr)
    for name, ts in LAMBDA_STATS.items():
        lo, hi = min(ts), max(ts)
        print(f"{name}: ln(lambda*-1) ranges from {lo[0]:.6g} (a={lo[1]!r}, b={lo[2]!r}) "
              f"to {hi[0]:.6g} (a={hi[1]!r}, b={hi[2]!r}); "
              f"{sum(1 for t in ts if not -12 <= t[0] <= 16)} of {len(ts)} outside [-12, 16]",
              file=sys.stderr)
    total = len(lines) - 1
    where = "stdout" if small else str(OUT.relative_to(REPO))
    print(f"{total} rows -> {where} ({len(text)} bytes) in {time.perf_counter() - start:.1f} s",
          file=sys.stderr)


if __name__ == "__main__":
    main()
