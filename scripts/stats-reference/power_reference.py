#!/usr/bin/env python3
"""Reference values for specgap-stats' noise and power functions (issue 28).

Writes crates/specgap-stats/tests/fixtures/power.json; every value records its origin
(library, version, function, arguments), as generate.py does for the other statistics.

Usage (from the repository root, with the pinned versions of requirements.txt):
    python3 -m venv target/statsvenv
    target/statsvenv/bin/pip install -r scripts/stats-reference/requirements.txt
    target/statsvenv/bin/python scripts/stats-reference/power_reference.py
"""

import json
import math
from pathlib import Path

import numpy as np
import scipy
import statsmodels
from scipy import special, stats
from scipy.optimize import brentq
from statsmodels.stats.power import TTestPower

OUT = Path(__file__).resolve().parents[2] / "crates/specgap-stats/tests/fixtures/power.json"
SM = statsmodels.__version__
SP = scipy.__version__


def origin(library, version, function, **arguments):
    return {"library": library, "version": version, "function": function, "arguments": arguments}


def power_cases():
    cases = []
    for d, n, alpha in [(0.5, 20, 0.05), (0.3, 50, 0.05), (1.2, 6, 0.05), (0.8, 12, 0.0125),
                        (0.1, 200, 0.05), (-0.6, 15, 0.05), (2.5, 3, 0.05), (0.45, 30.5, 0.01)]:
        value = TTestPower().power(effect_size=d, nobs=n, alpha=alpha, alternative="two-sided")
        cases.append({"effect_size": d, "nobs": n, "alpha": alpha, "power": float(value),
                      "origin": origin("statsmodels", SM, "TTestPower().power", effect_size=d,
                                       nobs=n, alpha=alpha, alternative="two-sided")})
    return cases


def tight_root(f, low, high):
    """brentq at full precision on statsmodels' own power function: solve_power stops at
    about 1e-8 (its power at the answer is off the target by ~3e-8), so the fixture holds
    both values and the tests compare with the tight root at 1e-11."""
    while f(high) < 0:
        low, high = high, high * 1.1
    return float(brentq(f, low, high, xtol=1e-15, rtol=8.9e-16, maxiter=500))


def effect_cases():
    cases = []
    for n, alpha, power in [(20, 0.05, 0.8), (8, 0.05, 0.8), (50, 0.05, 0.9), (12, 0.0125, 0.8),
                            (100, 0.05, 0.8), (5, 0.01, 0.8)]:
        value = TTestPower().solve_power(nobs=n, alpha=alpha, power=power, alternative="two-sided")
        root = tight_root(lambda d: TTestPower().power(d, n, alpha) - power, 1e-6, 0.5)
        cases.append({"nobs": n, "alpha": alpha, "power": power, "effect_size": float(value),
                      "effect_size_tight": root,
                      "tight_origin": origin("scipy", SP, "scipy.optimize.brentq(TTestPower().power(d, nobs, alpha) - power, xtol=1e-15, rtol=8.9e-16)"),
                      "origin": origin("statsmodels", SM, "TTestPower().solve_power", nobs=n,
                                       alpha=alpha, power=power, alternative="two-sided")})
    return cases


def nobs_cases():
    cases = []
    for d, alpha, power in [(0.5, 0.05, 0.8), (0.3, 0.05, 0.8), (1.0, 0.05, 0.9), (0.25, 0.01, 0.8)]:
        value = TTestPower().solve_power(effect_size=d, alpha=alpha, power=power,
                                         alternative="two-sided")
        root = tight_root(lambda n: TTestPower().power(d, n, alpha) - power, 2.0, 8.0)
        cases.append({"effect_size": d, "alpha": alpha, "power": power, "nobs": float(value),
                      "nobs_tight": root,
                      "tight_origin": origin("scipy", SP, "scipy.optimize.brentq(TTestPower().power(effect_size, n, alpha) - power, xtol=1e-15, rtol=8.9e-16)"),
                      "origin": origin("statsmodels", SM, "TTestPower().solve_power",
                                       effect_size=d, alpha=alpha, power=power,
                                       alternative="two-sided")})
    return cases


def nct_cases():
    cases = []
    for t, df, nc in [(2.0, 10.0, 1.5), (-1.0, 5.0, 0.5), (2.093, 19.0, 2.236), (0.0, 7.0, -1.0),
                      (3.5, 30.0, 4.0), (-2.2, 14.0, -3.0), (1.0, 2.5, 8.0)]:
        value = special.nctdtr(df, nc, t)
        cases.append({"t": t, "df": df, "nc": nc, "cdf": float(value),
                      "origin": origin("scipy", SP, "scipy.special.nctdtr", df=df, nc=nc, t=t)})
    return cases


def anova_cases():
    designs = [
        [[0.2, 0.4, 0.3], [0.9, 0.8, 1.0], [0.5, 0.1, 0.3]],
        [[1.0, 0.0], [1.0, 1.0, 0.0, 1.0], [0.0], [0.5, 0.25, 0.75]],
        [[0.0, 1.0], [1.0, 0.0], [0.5, 0.5]],
    ]
    cases = []
    for groups in designs:
        arrays = [np.asarray(g, dtype=float) for g in groups]
        f = stats.f_oneway(*arrays)
        n_i = np.array([len(g) for g in arrays], dtype=float)
        total = n_i.sum()
        a = len(arrays)
        grand = np.concatenate(arrays).mean()
        msb = float(np.sum(n_i * (np.array([g.mean() for g in arrays]) - grand) ** 2) / (a - 1))
        msw = float(sum(((g - g.mean()) ** 2).sum() for g in arrays) / (total - a))
        n0 = float((total - (n_i ** 2).sum() / total) / (a - 1))
        between = max(0.0, (msb - msw) / n0)
        cases.append({
            "groups": groups,
            "f_statistic": float(f.statistic),
            "ms_between": msb, "ms_within": msw, "n0": n0, "between_tasks": between,
            "origin": origin("scipy", SP, "scipy.stats.f_oneway (F = MS_between / MS_within); "
                             "the mean squares, n0 and the ANOVA estimator computed with numpy "
                             "from Searle, Casella & McCulloch (1992) §3.6", groups=groups),
        })
    return cases


def main():
    out = {
        "versions": {"scipy": SP, "statsmodels": SM, "numpy": np.__version__},
        "ttest_power": power_cases(),
        "solve_effect": effect_cases(),
        "solve_nobs": nobs_cases(),
        "nctdtr": nct_cases(),
        "variance_components": anova_cases(),
    }
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
