"""Turns specgap's result.json into Harbor's reward.json (written by `specgap export-task`).

usage: specgap_reward.py RESULT_JSON > /logs/verifier/reward.json

The reward is specgap's Score (DESIGN §2 scoring kinds): requirements passed / total; tests
passed / (total - skipped), errors failing; a delivery 0 when invalid, else objective /
reference (max) or reference / objective (min); else the reported reward. A missing or
unreadable result is reward 0 with "evaluation_error": 1. The result's `rewards` (its reward
keys) are written beside `reward`, which stays the Score, so a step's min_reward table can
gate on them.
"""

import json
import sys

DELIVERY = None  # replaced by the exporter: [reference, "max" | "min"] for a delivery case


def score(result):
    requirements = result.get("requirements")
    if requirements:
        passed = sum(1 for outcome in requirements.values() if outcome.get("pass") is True)
        return passed / len(requirements)
    tests = result.get("tests")
    if tests:
        counted = [status for status in tests.values() if status != "skip"]
        return sum(1 for status in counted if status == "pass") / len(counted) if counted else 0.0
    delivery = result.get("delivery")
    if delivery is not None and DELIVERY is not None:
        objective = delivery.get("objective")
        if not delivery.get("valid") or not isinstance(objective, (int, float)) or objective == 0:
            return 0.0
        reference, direction = DELIVERY
        return objective / reference if direction == "max" else reference / objective
    reward = result.get("reward")
    return float(reward) if isinstance(reward, (int, float)) else 0.0


def main(path):
    try:
        with open(path, encoding="utf-8") as f:
            result = json.load(f)
        rewards = {"reward": score(result)}
        for key, value in sorted((result.get("rewards") or {}).items()):
            if key != "reward" and isinstance(value, (int, float)) and not isinstance(value, bool):
                rewards[key] = value
    except (OSError, ValueError, AttributeError, TypeError) as error:
        print(f"specgap: no usable result.json: {error}", file=sys.stderr)
        rewards = {"reward": 0.0, "evaluation_error": 1}
    json.dump(rewards, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
