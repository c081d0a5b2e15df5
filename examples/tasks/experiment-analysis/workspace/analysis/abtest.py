"""Per-arm numbers for an A/B test.

summarize(path) returns

    {
      "experiment": "<registry name>",
      "arms": {"<arm id>": {"visitors": int, "revenue_per_visitor": float}},   # cents, unrounded
      "comparisons": {"<arm id>": {"difference": float, "low": float, "high": float}},   # cents
    }

Arm ids are the strings used in assignments.csv. `python3 -m analysis.report` prints it.
"""

from collections import defaultdict
from statistics import mean

from analysis import data


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
    # Comparisons between arms come once we have agreed how to compare them.
    return {"experiment": registry.get("experiment"), "arms": arms, "comparisons": {}}
