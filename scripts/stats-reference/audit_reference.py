#!/usr/bin/env python3
"""Reference values for the audit report's statistics (crates/specgap-audit/src/agreement.rs).

The labels below are also in crates/specgap-audit/tests/it/agreement.rs (`LABELS`). For two
raters' labels of 24 items in 8 cases, this prints:
- percent agreement (numpy.mean of a == b) and Cohen's kappa
  (sklearn.metrics.cohen_kappa_score), with every item and without the items either rater
  marked `uncertain`;
- their 95% case-cluster bootstrap intervals: 5,000 resamples of the 8 cases drawn with the
  index stream of specgap-stats (resample_stream.py, seed 2026), each drawn case bringing all
  its items; the statistic on every resample (sklearn for kappa; resamples where kappa is NaN
  left out, as the report does); scipy.stats.bootstrap(method='percentile', n_resamples=0,
  bootstrap_result=<that distribution>) reads the interval;
- the weighted share of rater A's `covered` (sum of weights of covered items over the sum of
  weights), with its interval from the same resamples.

Run (from the repository root):
    /tmp/statsvenv/bin/python scripts/stats-reference/audit_reference.py
"""

import math
import sys
import warnings
from pathlib import Path

import numpy as np
import scipy
import sklearn
from scipy import stats
from sklearn.metrics import cohen_kappa_score

sys.path.insert(0, str(Path(__file__).resolve().parent))
from resample_stream import resamples  # noqa: E402

# (case, weight, rater A, rater B)
LABELS = [
    ("c1", 1.0, "covered", "covered"), ("c1", 1.0, "uncovered", "uncovered"), ("c1", 1.0, "covered", "uncertain"),
    ("c2", 2.0, "covered", "covered"), ("c2", 2.0, "covered", "uncovered"), ("c2", 2.0, "uncovered", "uncovered"),
    ("c3", 1.5, "uncertain", "uncertain"), ("c3", 1.5, "covered", "covered"), ("c3", 1.5, "uncovered", "covered"),
    ("c4", 1.0, "uncovered", "uncovered"), ("c4", 1.0, "uncovered", "uncovered"), ("c4", 1.0, "covered", "covered"),
    ("c5", 3.0, "covered", "covered"), ("c5", 3.0, "covered", "covered"), ("c5", 3.0, "uncertain", "covered"),
    ("c6", 1.0, "uncovered", "covered"), ("c6", 1.0, "uncovered", "uncovered"), ("c6", 1.0, "covered", "covered"),
    ("c7", 2.5, "covered", "uncovered"), ("c7", 2.5, "uncovered", "uncovered"), ("c7", 2.5, "uncovered", "uncertain"),
    ("c8", 1.0, "covered", "covered"), ("c8", 1.0, "uncertain", "uncertain"), ("c8", 1.0, "uncovered", "uncovered"),
]
SEED = 2026
N_RESAMPLES = 5000


class _Dist:
    def __init__(self, values):
        self.bootstrap_distribution = np.asarray(values, dtype=float)


def percentile(values):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.bootstrap((np.zeros(2),), np.mean, n_resamples=0, confidence_level=0.95,
                              method="percentile", bootstrap_result=_Dist(values))
    return res.confidence_interval.low, res.confidence_interval.high


def kappa(a, b):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(cohen_kappa_score(a, b))


def report(rows, name):
    cases = sorted({r[0] for r in rows})
    members = [[i for i, r in enumerate(rows) if r[0] == c] for c in cases]
    a = [r[2] for r in rows]
    b = [r[3] for r in rows]
    w = [r[1] for r in rows]
    agree = lambda items: float(np.mean([a[i] == b[i] for i in items]))
    kap = lambda items: kappa([a[i] for i in items], [b[i] for i in items])
    share = lambda items: sum(w[i] for i in items if a[i] == "covered") / sum(w[i] for i in items)
    everything = list(range(len(rows)))
    dist = {"agree": [], "kappa": [], "share": []}
    undefined = 0
    for drawn in resamples(len(cases), SEED, N_RESAMPLES):
        items = [i for c in drawn for i in members[c]]
        dist["agree"].append(agree(items))
        dist["share"].append(share(items))
        k = kap(items)
        if math.isnan(k):
            undefined += 1
        else:
            dist["kappa"].append(k)
    print(f"[{name}] {len(rows)} items, {len(cases)} cases")
    print(f"  percent agreement {agree(everything)!r}  interval {percentile(dist['agree'])!r}")
    print(f"  kappa             {kap(everything)!r}  interval {percentile(dist['kappa'])!r}  undefined resamples {undefined}")
    print(f"  share covered (A) {share(everything)!r}  interval {percentile(dist['share'])!r}")


print(f"numpy {np.__version__}, scipy {scipy.__version__}, scikit-learn {sklearn.__version__}")
report(LABELS, "all items")
report([r for r in LABELS if "uncertain" not in (r[2], r[3])], "uncertain left out")
