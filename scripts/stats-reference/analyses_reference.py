#!/usr/bin/env python3
"""Reference values of the seed 002 analyses added for issue 24 item 2, on the synthetic run of
crates/specgap-report/tests/it/analyses.rs (the tables CASES, SCORES, ASKED and COST below are
that test's, copied by hand): the case-level Quality ranking (§5.2), Table 8(b), Table 10's
correlations, cost against Quality, and the within-system repeat analyses (§5.3, A.5, A.7).

Every value is computed here from the papers' definitions with scipy / statsmodels, not from
specgap; the case-bootstrap intervals use the resample indices of specgap's stream
(resample_stream.py, seed 12345, 2,000 resamples) and scipy.stats.bootstrap's percentile
method on that distribution, as report_reference.py does.

Usage (from the repository root, in the pinned environment of requirements.txt):
    /tmp/statsvenv/bin/python scripts/stats-reference/analyses_reference.py
"""

import itertools
import sys
from pathlib import Path

import numpy as np
import scipy
from scipy import stats
from statsmodels.stats.multitest import multipletests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from resample_stream import resamples  # noqa: E402

# (missing, ambiguous) targets per case c1..c8; missing targets are constraint rules, ambiguous
# ones data semantics; a run asks about the first k targets (missing first).
CASES = [(2, 0), (1, 1), (1, 2), (0, 2), (3, 1), (2, 2), (1, 0), (0, 1)]
# SCORES[s][c] = (repeat 0, repeat 1) delivery scores of systems s1..s3.
SCORES = [
    [(0.8, 0.6), (0.5, 0.5), (0.0, 0.4), (0.3, 0.1), (0.9, 0.7), (0.6, 0.2), (0.7, 0.7), (0.2, 0.0)],
    [(0.7, 0.7), (0.6, 0.2), (0.2, 0.0), (0.1, 0.1), (0.8, 1.0), (0.4, 0.4), (0.5, 0.9), (0.3, 0.4)],
    [(0.4, 0.9), (0.3, 0.3), (0.5, 0.5), (0.0, 0.2), (0.6, 0.6), (0.1, 0.5), (0.2, 0.0), (0.6, 0.4)],
]
ASKED = [
    [(2, 1), (2, 1), (1, 3), (1, 2), (4, 2), (3, 1), (1, 1), (1, 0)],
    [(1, 1), (2, 0), (2, 1), (2, 2), (3, 4), (2, 4), (0, 1), (1, 1)],
    [(0, 2), (1, 1), (3, 2), (0, 1), (2, 2), (4, 3), (1, 0), (0, 1)],
]
# Agent cost per run, US dollars.
COST = [0.30, 0.10, 0.20]
SEED, RESAMPLES = 12345, 2000


def domains(c):
    m, a = CASES[c]
    return ["constraint-rule"] * m + ["data-semantics"] * a


def percentile_interval(distribution):
    res = stats.bootstrap((np.zeros(2),), np.mean, method="percentile", n_resamples=0,
                          bootstrap_result=type("R", (), {"bootstrap_distribution": np.array(distribution)})())
    return [float(res.confidence_interval.low), float(res.confidence_interval.high)]


def rho(x, y):
    r = stats.spearmanr(x, y)
    return float(r.statistic), float(r.pvalue)


def quality(s, cases=range(8)):
    return float(np.mean([np.mean(SCORES[s][c]) for c in cases]))


def main():
    print("scipy", scipy.__version__, "numpy", np.__version__)
    n_cases = len(CASES)
    case_q = [[np.mean(SCORES[s][c]) for c in range(n_cases)] for s in range(3)]
    print("Quality", [quality(s) for s in range(3)])
    # §5.2: pairwise Spearman of case Quality.
    pairs = [rho(case_q[a], case_q[b])[0] for a, b in itertools.combinations(range(3), 2)]
    print("ranking pairs", pairs, "mean", float(np.mean(pairs)))
    # Table 8(b): share of a type against case Quality / DSR averaged over systems.
    y_q = [float(np.mean([case_q[s][c] for s in range(3)])) for c in range(n_cases)]
    y_d = [float(np.mean([np.mean([v >= 1.0 for v in SCORES[s][c]]) for s in range(3)])) for c in range(n_cases)]
    idx = list(resamples(n_cases, SEED, RESAMPLES))
    for kind, col in (("ambiguous", 1), ("missing", 0)):
        x = [CASES[c][col] / sum(CASES[c]) for c in range(n_cases)]
        for label, y in (("Quality", y_q), ("DSR", y_d)):
            r, p = rho(x, y)
            dist = []
            for i in idx:
                xs, ys = [x[j] for j in i], [y[j] for j in i]
                dist.append(float(stats.spearmanr(xs, ys).statistic) if len(set(xs)) > 1 and len(set(ys)) > 1 else float("nan"))
            ci = percentile_interval(dist) if not any(np.isnan(dist)) else None
            print("8b", kind, label, "cases_with", sum(1 for c in range(n_cases) if CASES[c][col] > 0), "rho", r, "p", p, "ci", ci)
    # Table 10: per system, domain share of matched units (pooled) against Quality.
    def shares(s, cases):
        counts = {"constraint-rule": 0.0, "data-semantics": 0.0}
        for c in cases:
            for k in ASKED[s][c]:
                for d in domains(c)[:k]:
                    counts[d] += 1
        total = sum(counts.values())
        return {d: (v / total if total else float("nan")) for d, v in counts.items()}
    qs = [quality(s) for s in range(3)]
    raw = []
    for d in ("constraint-rule", "data-semantics"):
        x = [shares(s, range(n_cases))[d] for s in range(3)]
        r, p = rho(x, qs)
        dist = []
        for i in idx:
            xs = [shares(s, i)[d] for s in range(3)]
            ys = [quality(s, i) for s in range(3)]
            ok = not any(np.isnan(xs)) and len(set(xs)) > 1 and len(set(ys)) > 1
            dist.append(float(stats.spearmanr(xs, ys).statistic) if ok else float("nan"))
        ci = percentile_interval(dist) if not any(np.isnan(dist)) else None
        raw.append(p)
        print("table10", d, "shares", x, "rho", r, "p", p, "ci", ci)
    print("table10 holm", list(multipletests(raw, method="holm")[1]))
    print("cost", rho(COST, qs))
    # §5.3 Recall repeats; A.7 zero-score repeats; A.5 domain coverage (pooled over systems).
    deltas, zero, cover = [], [], {"constraint-rule": [], "data-semantics": []}
    for s in range(3):
        for c in range(n_cases):
            g = sum(CASES[c])
            runs = [(SCORES[s][c][r], ASKED[s][c][r] / g, ASKED[s][c][r]) for r in range(2)]
            recalls = [r[1] for r in runs]
            if max(recalls) != min(recalls):
                hi = np.mean([r[0] for r in runs if r[1] == max(recalls)])
                lo = np.mean([r[0] for r in runs if r[1] == min(recalls)])
                deltas.append(hi - lo)
            z = [r for r in runs if r[0] == 0.0]
            o = [r for r in runs if r[0] > 0.0]
            if z and o:
                zero.append((np.mean([r[1] for r in z]), np.mean([r[1] for r in o]), np.mean([r[2] for r in z]), np.mean([r[2] for r in o])))
            for j, d in enumerate(domains(c)):
                cov = [r for r in range(2) if ASKED[s][c][r] > j]
                if len(cov) == 1:
                    other = 1 - cov[0]
                    cover[d].append(SCORES[s][c][cov[0]] - SCORES[s][c][other])
    w = stats.wilcoxon(deltas)
    print("recall cells", len(deltas), "higher", sum(d > 0 for d in deltas) / len(deltas), "lower", sum(d < 0 for d in deltas) / len(deltas),
          "mean", float(np.mean(deltas)), "p", float(w.pvalue))
    zd = [a[0] - a[1] for a in zero]
    print("zero cells", len(zero), "recall", float(np.mean([a[0] for a in zero])), float(np.mean([a[1] for a in zero])),
          "lower", sum(d < 0 for d in zd), "higher", sum(d > 0 for d in zd), "p", float(stats.wilcoxon(zd).pvalue),
          "units", float(np.mean([a[2] for a in zero])), float(np.mean([a[3] for a in zero])))
    for d, v in cover.items():
        print("domain", d, "cells", len(v), "mean", float(np.mean(v)), "p", float(stats.wilcoxon(v).pvalue))


if __name__ == "__main__":
    main()
