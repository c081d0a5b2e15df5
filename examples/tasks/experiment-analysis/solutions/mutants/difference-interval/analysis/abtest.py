"""Per-arm numbers for an A/B test.

summarize(path) returns

    {
      "experiment": "<registry name>",
      "arms": {"<arm id>": {"visitors": int, "revenue_per_visitor": float}},   # cents, unrounded
      "comparisons": {"<arm id>": {"difference": float, "low": float, "high": float}},   # cents
    }

Arm ids are the strings used in assignments.csv. `python3 -m analysis.report` prints it.

The unit is the visitor: every visitor assigned inside the analysis window counts, with the
sum of their valid orders (zero when they bought nothing). Orders whose revenue lies outside
the registry's valid range are export artefacts and are left out. The window closes when the
ops log records that the coupon budget ran out, because from then on the coupon arm was no
longer the treatment. Each arm is compared with the registry's control arm.
"""

import math
from datetime import datetime

from analysis import data

Z_95 = 1.645
BUDGET_EVENT = "coupon_budget_exhausted"


def parse_time(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def window_end(ops_log):
    """When the coupon budget ran out, or None if it never did."""
    moments = [parse_time(row["at"]) for row in ops_log if row.get("event") == BUDGET_EVENT]
    return min(moments) if moments else None


def visitor_revenue(registry, assignments, orders, ops_log):
    """{arm: [revenue of each visitor in the window]} in cents."""
    low, high = registry["metric"]["valid_range"]
    end = window_end(ops_log)
    arm_of = {}
    for row in assignments:
        if end is None or parse_time(row["assigned_at"]) < end:
            arm_of[row["visitor_id"]] = row["arm"]
    totals = dict.fromkeys(arm_of, 0)
    for order in orders:
        visitor = order["visitor_id"]
        value = int(order["revenue_cents"])
        if visitor in totals and low <= value <= high:
            totals[visitor] += value
    per_arm = {}
    for visitor, arm in arm_of.items():
        per_arm.setdefault(arm, []).append(totals[visitor])
    return per_arm


def mean_and_variance(values):
    n = len(values)
    mean = sum(values) / n if n else 0.0
    variance = sum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.0
    return mean, variance


def compare(treatment, control):
    mean_t, var_t = mean_and_variance(treatment)
    mean_c, var_c = mean_and_variance(control)
    difference = mean_t - mean_c
    half = Z_95 * math.sqrt(var_t / len(treatment) + var_c / len(control))
    return {"difference": difference, "low": difference - half, "high": difference + half}


def summarize(path):
    registry, assignments, orders, ops_log = data.load(path)
    per_arm = visitor_revenue(registry, assignments, orders, ops_log)
    arms = {}
    for arm in sorted(per_arm):
        mean, _ = mean_and_variance(per_arm[arm])
        arms[arm] = {"visitors": len(per_arm[arm]), "revenue_per_visitor": mean}
    control = str(registry["control_arm"])
    comparisons = {
        arm: compare(values, per_arm[control])
        for arm, values in sorted(per_arm.items())
        if arm != control and control in per_arm
    }
    return {"experiment": registry.get("experiment"), "arms": arms, "comparisons": comparisons}
