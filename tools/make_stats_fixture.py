#!/usr/bin/env python3
"""Reference values for src/numeric/stats.rs from scipy (an independent implementation):
Student-t mean intervals, paired t and Welch t (interval, t, df, p), and two-sided
Clopper-Pearson intervals, at n = 2, 3, 5, 10, 30 and 1000. Writes
tests/fixtures/stats/reference.json (read by tests/suite/stats_fixture.rs).

    pip install scipy numpy && python3 tools/make_stats_fixture.py
"""
import json
import pathlib

import numpy as np
import scipy
from scipy import stats

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests/fixtures/stats/reference.json"
SIZES = [2, 3, 5, 10, 30, 1000]


def sample(rng, n, loc, scale):
    # Rounded to 6 decimals so the Rust side reads exactly the doubles scipy used.
    return [float(x) for x in np.round(rng.normal(loc, scale, n), 6)]


def main():
    rng = np.random.default_rng(20261127)
    means, paired, welch, rates = [], [], [], []
    for n in SIZES:
        x = sample(rng, n, 0.7, 0.05)
        res = stats.ttest_1samp(x, 0.0)
        ci = res.confidence_interval(0.95)
        means.append({"x": x, "mean": float(np.mean(x)), "lo": float(ci.low), "hi": float(ci.high),
                      "t": float(res.statistic), "df": float(res.df), "p": float(res.pvalue)})
        a = sample(rng, n, 0.70, 0.05)
        b = [float(np.round(v - 0.01 + e, 6)) for v, e in zip(a, rng.normal(0, 0.02, n))]
        res = stats.ttest_rel(a, b)
        ci = res.confidence_interval(0.95)
        paired.append({"a": a, "b": b, "lo": float(ci.low), "hi": float(ci.high),
                       "t": float(res.statistic), "df": float(res.df), "p": float(res.pvalue)})
        m = max(2, n // 2 + 1)
        c = sample(rng, m, 0.68, 0.09)
        res = stats.ttest_ind(a, c, equal_var=False)
        ci = res.confidence_interval(0.95)
        welch.append({"a": a, "b": c, "lo": float(ci.low), "hi": float(ci.high),
                      "t": float(res.statistic), "df": float(res.df), "p": float(res.pvalue)})
        for k in sorted({0, 1, n // 3, n - 1, n}):
            ci = stats.binomtest(k, n).proportion_ci(0.95, method="exact")
            rates.append({"k": k, "n": n, "lo": float(ci.low), "hi": float(ci.high)})
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"scipy": scipy.__version__, "mean": means, "paired": paired,
                               "welch": welch, "clopper_pearson": rates}, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
