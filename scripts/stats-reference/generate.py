#!/usr/bin/env python3
"""Write the reference values that specgap-stats is tested against.

Every value in the output comes from a named function of a pinned library (see
requirements.txt) and records its origin: library, version, function and the exact arguments.
The Rust integration tests (crates/specgap-stats/tests/it) read the file; CI never needs
Python.

Usage (from the repository root):
    python3 -m venv /tmp/statsvenv
    /tmp/statsvenv/bin/pip install -r scripts/stats-reference/requirements.txt
    /tmp/statsvenv/bin/python scripts/stats-reference/generate.py

Floats are written with repr(), which round-trips exactly; NaN and infinities, which JSON
cannot hold, are written as the strings "nan", "inf" and "-inf".
"""

import json
import math
import platform
from fractions import Fraction
import sys
import warnings
from pathlib import Path

import numpy as np
import scipy
import sklearn
import statsmodels
from scipy import stats
from scipy.stats._resampling import _bca_interval, _percentile_of_score
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.multitest import multipletests

OUT = Path(__file__).resolve().parents[2] / "crates/specgap-stats/tests/fixtures/reference.json"


def num(x):
    """A float for JSON: NaN and infinities as strings."""
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def nums(xs):
    return [num(x) for x in xs]


def origin(library, version, function, **arguments):
    return {"library": library, "version": version, "function": function, "arguments": arguments}


# Arrays used by many cases are stored once under "inputs"; an argument {"input": NAME} means
# the array INPUTS[NAME] was passed.
INPUTS = {}


def shared(name, values):
    """Register an input array and return the reference that stands for it in `arguments`."""
    INPUTS[name] = values
    return {"input": name}


# --------------------------------------------------------------------------- Wilcoxon

def wilcoxon_datasets():
    rng = np.random.default_rng(20260101)
    no_ties_30 = np.round(rng.normal(0.3, 1.0, 30), 6)
    no_ties_60 = np.round(rng.normal(-0.1, 1.0, 60), 6)
    no_ties_50 = np.round(rng.normal(0.25, 1.0, 50), 6)
    no_ties_51 = np.round(rng.normal(0.25, 1.0, 51), 6)
    zeros_ties_20 = rng.integers(-3, 6, 20).astype(float)
    zeros_ties_60 = rng.integers(-4, 5, 60).astype(float)
    return {
        # The worked example of the brief: zeros and ties, n = 12 -> permutation under auto.
        "worked_example": [0, 2, 3, -1, -4, 0, 0, 8, 9, 2, -2, 5],
        "no_ties_n10": [0.95, -0.32, 1.41, 0.27, 0.88, -0.05, 2.3, 0.61, 1.07, -0.74],
        "ties_no_zeros_n9": [1, 1, 2, -2, 3, 3, -4, 5, 6],
        "one_zero_n8": [0, 1.5, -2.5, 3.5, 4.5, -0.5, 6.5, 7.5],
        "one_zero_n14": [0, 1, -2, 3, 4, -5, 6, 7, 8, -9, 10, 11, 12, 13],
        "ties_n14": [1, 1, 2, -2, 3, 3, -4, 5, 6, 6, 7, -7, 8, 9],
        "zeros_and_ties_n20": zeros_ties_20.tolist(),
        "zeros_and_ties_n60": zeros_ties_60.tolist(),
        "no_ties_n30": no_ties_30.tolist(),
        "no_ties_n50": no_ties_50.tolist(),
        "no_ties_n51": no_ties_51.tolist(),
        "no_ties_n60": no_ties_60.tolist(),
        "all_negative_n6": [-1, -2, -3, -4, -5, -6],
        "all_zero_n3": [0, 0, 0],
        "single_n1": [2.5],
        "two_n2": [1, -3],
        "many_zeros_n7": [0, 0, 0, 0, 1, -2, 3],
    }


def wilcoxon_cases():
    cases = []
    for name, d in wilcoxon_datasets().items():
        d = [float(v) for v in d]
        ref = shared(f"wilcoxon/{name}", d)
        for zero_method in ["wilcox", "pratt", "zsplit"]:
            for alternative in ["two-sided", "greater", "less"]:
                for method in ["auto", "exact", "asymptotic"]:
                    corrections = [False, True] if method != "exact" else [False]
                    for correction in corrections:
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            res = stats.wilcoxon(d, zero_method=zero_method, correction=correction,
                                                 alternative=alternative, method=method)
                        result = {"statistic": num(res.statistic), "pvalue": num(res.pvalue)}
                        if hasattr(res, "zstatistic"):
                            result["zstatistic"] = num(res.zstatistic)
                        cases.append({
                            "name": name,
                            "origin": origin("scipy", scipy.__version__, "scipy.stats.wilcoxon",
                                             x=ref, zero_method=zero_method, correction=correction,
                                             alternative=alternative, method=method),
                            "result": result,
                        })
    return cases


def wilcoxon_paired_cases():
    pairs = {
        "integer_scores": ([3, 5, 2, 8, 7, 4, 6, 9, 1, 5], [2, 5, 4, 6, 7, 1, 3, 9, 2, 2]),
        "case_means": ([0.61, 0.40, 0.72, 0.55, 0.30, 0.81, 0.47, 0.66, 0.52, 0.75, 0.44, 0.58],
                       [0.20, 0.35, 0.41, 0.18, 0.30, 0.52, 0.11, 0.70, 0.26, 0.33, 0.40, 0.12]),
    }
    cases = []
    for name, (x, y) in pairs.items():
        x = [float(v) for v in x]
        y = [float(v) for v in y]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = stats.wilcoxon(x, y)
        cases.append({
            "name": name,
            "origin": origin("scipy", scipy.__version__, "scipy.stats.wilcoxon", x=x, y=y),
            "result": {"statistic": num(res.statistic), "pvalue": num(res.pvalue)},
        })
    return cases


# --------------------------------------------------------------------------- edge cases

# Values at the edges of the statistics (issue "Hardening", item 10). Where scipy's own floating
# point answer is not the exact one, the exact rational is written beside it, computed here with
# Python integers and rounded once to a float (`float(Fraction)` rounds correctly).

def signed_rank_null_counts(n):
    """counts[s] = number of subsets of the ranks 1..n whose sum is s (Python ints, exact)."""
    counts = [1]
    for rank in range(1, n + 1):
        grown = counts + [0] * rank
        for s, ways in enumerate(counts):
            grown[s + rank] += ways
        counts = grown
    return counts


def exact_wilcoxon_pvalue(r_plus, n, alternative):
    """The exact-method p-value as a rational: the tail count of the untied null over 2**n,
    with r_plus rounded up for `less` and down for `greater` as scipy does (gh-19872)."""
    counts = signed_rank_null_counts(n)
    total = 2 ** n
    at_most = Fraction(sum(counts[:math.ceil(r_plus) + 1]), total)
    at_least = Fraction(sum(counts[math.floor(r_plus):]), total)
    if alternative == "less":
        return at_most
    if alternative == "greater":
        return at_least
    return min(Fraction(1), 2 * min(at_most, at_least))


def wilcoxon_exact_edge_datasets():
    return {
        # The last size at which every entry of scipy's float null is exact.
        "untied_n53": np.round(np.random.default_rng(53).normal(1.2, 1.0, 53), 6).tolist(),
        # The first size at which entries round; small tails.
        "untied_n54": np.round(np.random.default_rng(54).normal(1.2, 1.0, 54), 6).tolist(),
        # A serial `1 - sum` drifted 4.3e-3 (relative) from scipy on this one, two-sided.
        "untied_n60": np.round(np.random.default_rng(22).normal(1.4, 1.0, 60), 6).tolist(),
        "untied_n70": np.round(np.random.default_rng(70).normal(1.1, 1.0, 70), 6).tolist(),
        # Every rank positive: `greater` is 2**-60; a serial `1 - sum` gave -4.4e-16.
        "all_equal_n60": [1.5] * 60,
    }


def wilcoxon_exact_edge_cases():
    cases = []
    for name, d in wilcoxon_exact_edge_datasets().items():
        d = [float(v) for v in d]
        ref = shared(f"wilcoxon_exact_edges/{name}", d)
        magnitudes = np.abs(np.asarray(d))
        ranks = stats.rankdata(magnitudes, method="average")
        r_plus = float(ranks[np.asarray(d) > 0].sum())
        for alternative in ["two-sided", "greater", "less"]:
            res = stats.wilcoxon(d, alternative=alternative, method="exact")
            exact = exact_wilcoxon_pvalue(r_plus, len(d), alternative)
            cases.append({
                "name": name,
                "origin": origin("scipy", scipy.__version__, "scipy.stats.wilcoxon", x=ref,
                                 alternative=alternative, method="exact"),
                "result": {"statistic": num(res.statistic), "pvalue": num(res.pvalue)},
                "exact": {
                    "origin": origin("python", platform.python_version(),
                                     "generate.py exact_wilcoxon_pvalue: subset-sum counts of "
                                     "the ranks 1..n (Python ints) over 2**n, as a Fraction, "
                                     "rounded once by float()",
                                     r_plus=r_plus, n=len(d), alternative=alternative),
                    "pvalue": num(float(exact)),
                },
            })
    return cases


def spearman_monotone_cases():
    """Perfectly monotone pairs of every length 3..100: a = 1..n against a**3 and -a**3."""
    cases = []
    for n in range(3, 101):
        a = np.arange(1, n + 1, dtype=float)
        for direction, b in [("increasing", a ** 3), ("decreasing", -a ** 3)]:
            res = stats.spearmanr(a, b)
            cases.append({
                "name": f"{direction}_n{n}",
                "origin": origin("scipy", scipy.__version__, "scipy.stats.spearmanr",
                                 a=f"numpy.arange(1, {n + 1}, dtype=float)",
                                 b="a ** 3" if direction == "increasing" else "-(a ** 3)"),
                "result": {"statistic": num(res.statistic), "pvalue": num(res.pvalue)},
            })
    return cases


def chen_pass_at_k(n, c, k):
    """Chen et al. (2021), Fig. 3, in numpy: the product over the c successes."""
    if n - c < k:
        return 1.0
    return 1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1))


def exact_pass_ratios(n, c, k):
    """(pass@k, pass^k) as Fractions: 1 - C(n-c, k)/C(n, k) and C(c, k)/C(n, k)."""
    return (1 - Fraction(math.comb(n - c, k), math.comb(n, k)),
            Fraction(math.comb(c, k), math.comb(n, k)))


def pass_k_cases():
    grid = [(n, c, k) for n in range(1, 13) for c in range(0, n + 1) for k in range(1, n + 1)]
    grid += [(n, c, k) for n in [50, 200] for c in [0, 1, 2, 7, n // 2, n - 3, n]
             for k in [1, 2, 3, 10, n // 2, n]]
    cases = []
    for n, c, k in grid:
        at_k, hat_k = exact_pass_ratios(n, c, k)
        cases.append({
            "name": f"n{n}_c{c}_k{k}",
            "origin": origin("numpy", np.__version__,
                             "Chen et al. 2021 Fig. 3 estimator: 1 - numpy.prod(1 - k / "
                             "numpy.arange(n - c + 1, n + 1)), 1.0 when n - c < k",
                             n=n, c=c, k=k),
            "result": {"pass_at_k": num(chen_pass_at_k(n, c, k))},
            "exact": {
                "origin": origin("python", platform.python_version(),
                                 "fractions.Fraction with math.comb: pass@k = 1 - C(n-c,k)/C(n,k),"
                                 " pass^k = C(c,k)/C(n,k), rounded once by float()",
                                 n=n, c=c, k=k),
                "pass_at_k": num(float(at_k)),
                "pass_hat_k": num(float(hat_k)),
            },
        })
    return cases


def pass_k_large_cases():
    """Counts where a loop over c (Chen's reference code) does not finish; exact only."""
    cases = []
    for n, c, k in [(10 ** 15, 10 ** 15 - 1000, 10), (10 ** 15, 1, 1), (10 ** 15, 3, 7),
                    (2 ** 62, 2 ** 61, 5), (10 ** 15, 10 ** 15 - 2, 4)]:
        at_k, hat_k = exact_pass_ratios(n, c, k)
        cases.append({
            "name": f"n{n}_c{c}_k{k}",
            "exact": {
                "origin": origin("python", platform.python_version(),
                                 "fractions.Fraction with math.comb: pass@k = 1 - C(n-c,k)/C(n,k),"
                                 " pass^k = C(c,k)/C(n,k), rounded once by float()",
                                 n=n, c=c, k=k),
                "pass_at_k": num(float(at_k)),
                "pass_hat_k": num(float(hat_k)),
            },
        })
    return cases


# --------------------------------------------------------------------------- Holm

def holm_cases():
    rng = np.random.default_rng(24)
    vectors = {
        "four": [0.01, 0.04, 0.03, 0.005],
        "ties": [0.02, 0.02, 0.5, 0.01, 0.02],
        "capped": [0.3, 0.6, 0.9],
        "single": [0.2],
        "running_max": [0.001, 0.011, 0.012, 0.013, 0.5, 0.04],
        "zero_and_one": [0.0, 1.0, 0.25, 0.0],
        "twenty_four": np.round(rng.uniform(0, 0.2, 24) ** 2, 8).tolist(),
    }
    cases = []
    for name, p in vectors.items():
        p = [float(v) for v in p]
        reject, corrected, _, _ = multipletests(p, alpha=0.05, method="holm")
        cases.append({
            "name": name,
            "origin": origin("statsmodels", statsmodels.__version__,
                             "statsmodels.stats.multitest.multipletests", pvals=p, alpha=0.05,
                             method="holm"),
            "result": {"pvals_corrected": nums(corrected), "reject": [bool(r) for r in reject]},
        })
    return cases


# --------------------------------------------------------------------------- Spearman

def spearman_cases():
    rng = np.random.default_rng(18)
    recall = np.round(rng.uniform(0.4, 0.9, 18), 4)
    quality = np.round(0.3 + 0.4 * recall + rng.normal(0, 0.05, 18), 4)
    pairs = {
        "no_ties_n10": ([1.2, 3.4, 2.2, 5.1, 4.4, 0.3, 7.7, 6.1, 8.8, 9.0],
                        [2.0, 1.0, 4.5, 3.3, 6.1, 0.9, 5.5, 8.0, 7.2, 9.9]),
        "ties_both": ([1, 2, 2, 3, 3, 3, 4, 5, 5, 6], [2, 2, 1, 4, 3, 3, 5, 5, 7, 6]),
        "negative": ([1, 2, 3, 4, 5, 6, 7], [7.5, 6.1, 6.2, 4.0, 3.3, 1.1, 0.4]),
        "perfect": ([1, 2, 3, 4], [10, 20, 25, 100]),
        "constant_x": ([3, 3, 3, 3, 3], [1, 2, 3, 4, 5]),
        "constant_y": ([1, 2, 3, 4, 5], [0.5, 0.5, 0.5, 0.5, 0.5]),
        "n1": ([1.0], [2.0]),
        "n2": ([1, 2], [2, 1]),
        "n3": ([1, 2, 3], [1, 3, 2]),
        "eighteen_configurations": (recall.tolist(), quality.tolist()),
    }
    cases = []
    for name, (x, y) in pairs.items():
        x = [float(v) for v in x]
        y = [float(v) for v in y]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = stats.spearmanr(x, y)
        cases.append({
            "name": name,
            "origin": origin("scipy", scipy.__version__, "scipy.stats.spearmanr", a=x, b=y),
            "result": {"statistic": num(res.statistic), "pvalue": num(res.pvalue)},
        })
    return cases


# --------------------------------------------------------------------------- Cohen's kappa

def kappa_cases():
    rng = np.random.default_rng(7)
    a = rng.integers(0, 4, 60)
    b = np.where(rng.uniform(size=60) < 0.7, a, rng.integers(0, 4, 60))
    raters = {
        "three_labels": ([0, 1, 2, 2, 1, 0, 2, 1, 1, 0, 2, 2], [0, 1, 1, 2, 1, 0, 2, 2, 1, 1, 2, 0]),
        "sparse_labels": ([1, 5, 10, 10, 5, 1, 10, 5], [1, 10, 10, 5, 5, 1, 10, 1]),
        "four_labels_n60": (a.tolist(), b.tolist()),
        "strings": (["supported", "unsupported", "uncertain", "supported", "supported",
                     "unsupported", "uncertain", "supported"],
                    ["supported", "supported", "uncertain", "supported", "unsupported",
                     "unsupported", "supported", "supported"]),
        "disagree_always": ([0, 1, 2, 0, 1, 2], [1, 2, 0, 2, 0, 1]),
        "label_only_in_one_rater": ([0, 0, 1, 1, 2], [0, 1, 1, 1, 1]),
        "single_label": ([3, 3, 3], [3, 3, 3]),
    }
    cases = []
    for name, (y1, y2) in raters.items():
        y1 = [v if isinstance(v, str) else int(v) for v in y1]
        y2 = [v if isinstance(v, str) else int(v) for v in y2]
        for weights in [None, "linear", "quadratic"]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                kappa = cohen_kappa_score(y1, y2, weights=weights)
            cases.append({
                "name": name,
                "origin": origin("scikit-learn", sklearn.__version__,
                                 "sklearn.metrics.cohen_kappa_score", y1=y1, y2=y2,
                                 weights=weights),
                "result": {"kappa": num(kappa)},
            })
    return cases


# --------------------------------------------------------------------------- descriptive

def describe_cases():
    arrays = {
        "odd": [0.3, 1.7, -2.2, 5.0, 0.3],
        "even": [4.0, 1.0, 3.0, 2.0, 2.0, 9.5],
        "replicates": [44.7, 47.9, 41.6],
        "single": [0.7],
    }
    # Lengths around numpy's pairwise-summation thresholds (8 lanes, blocks of 128).
    rng = np.random.default_rng(8)
    for n in [7, 8, 9, 16, 49, 128, 129, 300]:
        magnitudes = 10.0 ** rng.uniform(-3, 3, n)
        arrays[f"pairwise_n{n}"] = (rng.normal(size=n) * magnitudes).tolist()
    cases = []
    for name, x in arrays.items():
        x = [float(v) for v in x]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sd = np.std(x, ddof=1)
        cases.append({
            "name": name,
            "origin": origin("numpy+scipy", f"numpy {np.__version__}, scipy {scipy.__version__}",
                             "numpy.mean, numpy.median, numpy.std(ddof=1), "
                             "scipy.stats.rankdata(method='average')", x=x),
            "result": {"mean": num(np.mean(x)), "median": num(np.median(x)), "sd": num(sd),
                       "ranks": nums(stats.rankdata(x, method="average"))},
        })
    return cases


# --------------------------------------------------------------------------- bootstrap

def skewed_sample(seed, n):
    rng = np.random.default_rng(seed)
    return np.round(rng.exponential(0.3, n) ** 1.5, 6)


def bootstrap_fixed_distribution_cases():
    """Deterministic checks: scipy reads intervals from a given bootstrap distribution.

    scipy.stats.bootstrap(..., n_resamples=0, bootstrap_result=...) computes only the interval
    (and, for BCa, the jackknife acceleration and bias correction) from the distribution it is
    handed, so the Rust side can be compared to rounding error.
    """
    cases = []
    for name, seed, n, n_dist in [("skewed_n25", 3, 25, 999), ("skewed_n49", 4, 49, 2000)]:
        x = skewed_sample(seed, n)
        rng = np.random.default_rng(seed + 100)
        idx = rng.integers(0, n, (n_dist, n))
        distribution = x[idx].mean(axis=-1)
        data_ref = shared(f"bootstrap/{name}/data", x.tolist())
        dist_ref = shared(f"bootstrap/{name}/distribution", distribution.tolist())
        for method in ["percentile", "BCa"]:
            for level in [0.9, 0.95, 0.99]:
                res = stats.bootstrap((x,), np.mean, n_resamples=0, confidence_level=level,
                                      method=method, rng=0,
                                      bootstrap_result=_Dist(distribution))
                result = {"low": num(res.confidence_interval.low),
                          "high": num(res.confidence_interval.high)}
                if method == "BCa":
                    alpha = (1 - level) / 2
                    _, _, a_hat = _bca_interval((x,), np.mean, axis=-1, alpha=alpha,
                                                theta_hat_b=distribution, batch=None, xp=np)
                    pct = _percentile_of_score(distribution, np.mean(x), axis=-1, xp=np)
                    result["acceleration"] = num(a_hat)
                    result["bias_correction"] = num(scipy.special.ndtri(pct))
                cases.append({
                    "name": name,
                    "origin": origin("scipy", scipy.__version__, "scipy.stats.bootstrap",
                                     data=[data_ref], statistic="numpy.mean",
                                     n_resamples=0, method=method, confidence_level=level,
                                     bootstrap_result={"bootstrap_distribution": dist_ref},
                                     note="acceleration from scipy.stats._resampling._bca_"
                                          "interval; bias_correction = scipy.special.ndtri("
                                          "scipy.stats._resampling._percentile_of_score)"),
                    "result": result,
                })
    return cases


class _Dist:
    """Stands in for a BootstrapResult: scipy only reads `bootstrap_distribution`."""

    def __init__(self, distribution):
        self.bootstrap_distribution = distribution


def bootstrap_monte_carlo_cases():
    """scipy's own resampling with many resamples; compared within Monte Carlo error."""
    cases = []
    n_resamples = 100_000
    quality = np.round(np.clip(skewed_sample(12345, 49) + 0.2, 0, 1), 4)
    for method in ["percentile", "BCa"]:
        res = stats.bootstrap((quality,), np.mean, n_resamples=n_resamples, method=method,
                              confidence_level=0.95, rng=12345)
        cases.append({
            "name": "case_mean_n49",
            "origin": origin("scipy", scipy.__version__, "scipy.stats.bootstrap",
                             data=[quality.tolist()], statistic="numpy.mean",
                             n_resamples=n_resamples, method=method, confidence_level=0.95,
                             rng=12345),
            "result": {"low": num(res.confidence_interval.low),
                       "high": num(res.confidence_interval.high),
                       "standard_error": num(res.standard_error)},
        })
    rng = np.random.default_rng(20)
    full = np.round(rng.uniform(0.3, 1.0, 20), 4)
    interact = np.round(np.clip(full - rng.exponential(0.2, 20), 0, 1), 4)

    def mean_difference(a, b, axis=-1):
        return np.mean(a - b, axis=axis)

    for method in ["percentile", "BCa"]:
        res = stats.bootstrap((full, interact), mean_difference, paired=True,
                              n_resamples=n_resamples, method=method, confidence_level=0.95,
                              rng=12345)
        cases.append({
            "name": "paired_mean_difference_n20",
            "origin": origin("scipy", scipy.__version__, "scipy.stats.bootstrap",
                             data=[full.tolist(), interact.tolist()],
                             statistic="mean(a - b)", paired=True, n_resamples=n_resamples,
                             method=method, confidence_level=0.95, rng=12345),
            "result": {"low": num(res.confidence_interval.low),
                       "high": num(res.confidence_interval.high),
                       "standard_error": num(res.standard_error)},
        })
    return cases


def serialize(fixture):
    """JSON with one case (or one input array) per line, so diffs stay readable."""
    def dump(value):
        return json.dumps(value, allow_nan=False, separators=(",", ":"))

    lines = ["{"]
    items = list(fixture.items())
    for i, (key, value) in enumerate(items):
        comma = "," if i + 1 < len(items) else ""
        if isinstance(value, list):
            body = ",\n".join("  " + dump(case) for case in value)
            lines.append(f"{dump(key)}: [\n{body}\n]{comma}")
        elif key == "inputs":
            body = ",\n".join(f"  {dump(k)}: {dump(v)}" for k, v in value.items())
            lines.append(f"{dump(key)}: {{\n{body}\n}}{comma}")
        else:
            lines.append(f"{dump(key)}: {dump(value)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main():
    fixture = {
        "generator": "scripts/stats-reference/generate.py",
        "environment": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "scipy": scipy.__version__,
            "scikit-learn": sklearn.__version__,
            "statsmodels": statsmodels.__version__,
        },
        "encoding": "floats via repr(); NaN and infinities as the strings 'nan', 'inf', '-inf'",
        "wilcoxon": wilcoxon_cases(),
        "wilcoxon_paired": wilcoxon_paired_cases(),
        "wilcoxon_exact_edges": wilcoxon_exact_edge_cases(),
        "spearman_monotone": spearman_monotone_cases(),
        "pass_k": pass_k_cases(),
        "pass_k_large": pass_k_large_cases(),
        "holm": holm_cases(),
        "spearman": spearman_cases(),
        "cohen_kappa": kappa_cases(),
        "describe": describe_cases(),
        "bootstrap_fixed_distribution": bootstrap_fixed_distribution_cases(),
        "bootstrap_monte_carlo": bootstrap_monte_carlo_cases(),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    fixture["inputs"] = INPUTS
    OUT.write_text(serialize(fixture))
    counts = {k: len(v) for k, v in fixture.items() if isinstance(v, list)}
    print(f"wrote {OUT} {counts}", file=sys.stderr)


if __name__ == "__main__":
    main()
