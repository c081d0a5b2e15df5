#!/usr/bin/env python3
"""Reference values for the statistics of specgap's report (crates/specgap-report).

Reads crates/specgap-report/tests/fixtures/reference_input.json — written by
`cargo test -p specgap-report --test it -- --ignored export_reference_input`: each seed 002
cell's per-case numerators and denominators, the group values of the Spearman matrix, one kind
association's per-case data, a `compare` family's per-task pairs, and the 2,000 resample index
vectors of seed 12345 that the report's case bootstrap draws — and writes
crates/specgap-report/tests/fixtures/reference.json with the values scipy and statsmodels give
on exactly those data and resamples, each with its origin (library, version, function,
arguments).

Usage (from the repository root):
    python3 -m venv /tmp/statsvenv
    /tmp/statsvenv/bin/pip install -r scripts/stats-reference/requirements.txt
    /tmp/statsvenv/bin/python scripts/stats-reference/report_reference.py

What each value is:
- intervals: the bootstrap distribution is, per resample, sum(numerators of the drawn cases) /
  sum(denominators) (summed left to right); scipy.stats.bootstrap(method='percentile',
  n_resamples=0, bootstrap_result=<that distribution>) reads the 95% interval from it.
- matrix: scipy.stats.spearmanr(x, y) over the groups with both values, for each of the six
  clarification measures against each of four delivery measures; statsmodels
  multipletests(method='holm') over the cells with a finite p-value.
- kind_interval: per resample, every group's ratio of each side over the drawn cases, then
  scipy.stats.spearmanr across the groups; the percentile interval of those, as above.
- family: scipy.stats.wilcoxon(b, a) (two-sided, zero_method='wilcox', method='auto') on each
  test's paired per-task values; statsmodels multipletests(method='holm') over the family.

Floats are written with repr(), which round-trips exactly; NaN is written as "nan".
"""

import json
import math
import platform
import warnings
from pathlib import Path

import numpy as np
import scipy
import statsmodels
from scipy import stats
from statsmodels.stats.multitest import multipletests

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "crates/specgap-report/tests/fixtures"
INPUT = FIXTURES / "reference_input.json"
OUT = FIXTURES / "reference.json"

CLARIFICATION = ["Recall", "Precision", "Ask-F1", "KQC1", "ATC", "Redund."]
DELIVERY = ["Quality", "DSR", "pass@k", "pass^k"]


def num(x):
    x = float(x)
    return "nan" if math.isnan(x) else x


def origin(library, version, function, **arguments):
    return {"library": library, "version": version, "function": function, "arguments": arguments}


class _Dist:
    """Stands in for a BootstrapResult: scipy only reads `bootstrap_distribution`."""

    def __init__(self, distribution):
        self.bootstrap_distribution = np.asarray(distribution, dtype=float)


def ratio(cases, indices):
    n = 0.0
    d = 0.0
    for i in indices:
        n += cases[i][0]
        d += cases[i][1]
    return n / d if d > 0 else math.nan


def percentile_interval(data, distribution, level):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.bootstrap((np.asarray(data, dtype=float),), np.mean, n_resamples=0,
                              confidence_level=level, method="percentile",
                              bootstrap_result=_Dist(distribution))
    return res.confidence_interval.low, res.confidence_interval.high


def spearman(x, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = stats.spearmanr(x, y)
    return float(r.statistic), float(r.pvalue)


def holm(p_values):
    finite = [i for i, p in enumerate(p_values) if not math.isnan(p)]
    adjusted = [math.nan] * len(p_values)
    if finite:
        out = multipletests([p_values[i] for i in finite], method="holm")[1]
        for i, q in zip(finite, out):
            adjusted[i] = float(q)
    return adjusted


def main():
    data = json.loads(INPUT.read_text())
    resamples = data["resamples"]
    indices = resamples["indices"]
    level = resamples["confidence"]
    bootstrap_origin = origin("scipy", scipy.__version__, "scipy.stats.bootstrap",
                              method="percentile", confidence_level=level, n_resamples=0,
                              bootstrap_result="per resample of reference_input.json "
                                               "resamples.indices: sum(num[i]) / sum(den[i])")

    intervals = []
    for entry in data["intervals"]:
        cases = entry["cases"]
        if len(cases) < 2:
            continue
        distribution = [ratio(cases, idx) for idx in indices]
        low, high = percentile_interval([c[0] for c in cases], distribution, level)
        intervals.append({"group": entry["group"], "measure": entry["measure"],
                          "origin": bootstrap_origin,
                          "result": {"low": num(low), "high": num(high)}})

    values = data["matrix"]["values"]
    cells = []
    for x in CLARIFICATION:
        for y in DELIVERY:
            pairs = [(a, b) for a, b in zip(values[x], values[y]) if a is not None and b is not None]
            rho, p = (math.nan, math.nan)
            if len(pairs) >= 3:
                rho, p = spearman([a for a, _ in pairs], [b for _, b in pairs])
            cells.append({"x": x, "y": y, "groups": len(pairs), "rho": rho, "p": p})
    adjusted = holm([c["p"] if not math.isnan(c["rho"]) else math.nan for c in cells])
    matrix = []
    for c, q in zip(cells, adjusted):
        matrix.append({
            "x": c["x"], "y": c["y"],
            "origin": {
                "rho_p": origin("scipy", scipy.__version__, "scipy.stats.spearmanr",
                                x=f"matrix.values[{c['x']}] (non-null with y)",
                                y=f"matrix.values[{c['y']}]"),
                "holm_p": origin("statsmodels", statsmodels.__version__,
                                 "statsmodels.stats.multitest.multipletests",
                                 pvals="the p-values of the cells with a finite rho, in "
                                       "clarification-major order", method="holm"),
            },
            "result": {"rho": num(c["rho"]), "p_value": num(c["p"]), "holm_p": num(q)},
        })

    kind = data["kind_interval"]
    groups = kind["groups"]
    full = list(range(len(groups[0]["x"])))
    rho_full, _ = spearman([ratio(g["x"], full) for g in groups], [ratio(g["y"], full) for g in groups])
    distribution = []
    for idx in indices:
        xs = [ratio(g["x"], idx) for g in groups]
        ys = [ratio(g["y"], idx) for g in groups]
        if any(math.isnan(v) for v in xs + ys):
            distribution.append(math.nan)
        else:
            distribution.append(spearman(xs, ys)[0])
    low, high = percentile_interval(full, distribution, level)
    kind_interval = {
        "measure": kind["measure"],
        "origin": {
            "rho": origin("scipy", scipy.__version__, "scipy.stats.spearmanr",
                          x="per group sum(x num) / sum(x den) over all cases",
                          y="the same for y"),
            "interval": origin("scipy", scipy.__version__, "scipy.stats.bootstrap",
                               method="percentile", confidence_level=level, n_resamples=0,
                               bootstrap_result="per resample: scipy.stats.spearmanr across "
                                                "groups of the ratios over the drawn cases"),
        },
        "result": {"rho": num(rho_full), "low": num(low), "high": num(high)},
    }

    p_values = []
    for test in data["family"]:
        a = np.asarray(test["a"], dtype=float)
        b = np.asarray(test["b"], dtype=float)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p_values.append(float(stats.wilcoxon(b, a).pvalue))
    adjusted = holm(p_values)
    family = []
    for test, p, q in zip(data["family"], p_values, adjusted):
        family.append({
            "name": test["name"], "measure": test["measure"],
            "origin": {
                "p_value": origin("scipy", scipy.__version__, "scipy.stats.wilcoxon",
                                  x="b", y="a", alternative="two-sided",
                                  zero_method="wilcox", method="auto"),
                "holm_p": origin("statsmodels", statsmodels.__version__,
                                 "statsmodels.stats.multitest.multipletests",
                                 pvals="every finite p-value of the family, in order",
                                 method="holm"),
            },
            "result": {"p_value": num(p), "holm_p": num(q)},
        })

    fixture = {
        "generator": "scripts/stats-reference/report_reference.py",
        "input": "crates/specgap-report/tests/fixtures/reference_input.json",
        "environment": {"python": platform.python_version(), "numpy": np.__version__,
                        "scipy": scipy.__version__, "statsmodels": statsmodels.__version__},
        "encoding": "floats via repr(); NaN as the string 'nan'",
        "intervals": intervals,
        "matrix": matrix,
        "kind_interval": kind_interval,
        "family": family,
    }
    OUT.write_text(json.dumps(fixture, indent=1) + "\n")
    print(f"wrote {OUT}: {len(intervals)} intervals, {len(matrix)} matrix cells, "
          f"{len(family)} family tests")


if __name__ == "__main__":
    main()
