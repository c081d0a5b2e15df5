"""Per-arm numbers for an A/B test.

summarize(path) returns

    {
      "experiment": "<registry name>",
      "arms": {"<arm id>": {"visitors": int, "revenue_per_visitor": float}},   # cents, unrounded
      "comparisons": {"<arm id>": {"difference": float, "low": float, "high": float}},   # cents
    }

Arm ids are the strings used in assignments.csv. `python3 -m analysis.report` prints it.
Every arm is compared with arm 0, the current checkout: the difference in revenue per
visitor with a 95% interval of 1.96 unpooled standard errors.
"""

import math
from collections import defaultdict
from statistics import mean, variance

from analysis import data

BASELINE_ARM = "0"
Z_95 = 1.96


def compare(values, baseline):
    difference = mean(values) - mean(baseline)
    half = Z_95 * math.sqrt(variance(values) / len(values) + variance(baseline) / len(baseline))
    return {"difference": difference, "low": difference - half, "high": difference + half}


def summarize(path):
    registry, assignments, orders, _ops_log = data.load(path)
    arm_of = {row["visitor_id"]: row["arm"] for row in assignments}
    revenue = defaultdict(list)
    buyers = defaultdict(set)
    for order in orders:
        arm = arm_of.get(order["visitor_id"])
        if arm is None:
            continue
        revenue[arm].append(int(order["revenue_cents"]))
        buyers[arm].add(order["visitor_id"])
    arms = {}
    for arm in sorted(set(arm_of.values())):
        values = revenue.get(arm, [])
        arms[arm] = {
            "visitors": len(buyers.get(arm, ())),
            "revenue_per_visitor": mean(values) if values else 0.0,
        }
    comparisons = {}
    baseline = revenue.get(BASELINE_ARM, [])
    for arm, values in sorted(revenue.items()):
        if arm != BASELINE_ARM and len(values) > 1 and len(baseline) > 1:
            comparisons[arm] = compare(values, baseline)
    return {"experiment": registry.get("experiment"), "arms": arms, "comparisons": comparisons}
