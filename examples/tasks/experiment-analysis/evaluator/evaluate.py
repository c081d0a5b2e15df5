"""Private evaluator of examples/experiment-analysis (specgap evaluator protocol, result version 1).

Builds five held-out experiments (seeded, deterministic; none of them is in the workspace),
runs the submitted `analysis.abtest.summarize` on each inside the candidate sandbox
($SPECGAP_CANDIDATE), and compares the numbers with a reference computed here. Each
experiment isolates one rule: the others cannot change its numbers. Standard library only;
exits 0 whenever a result could be written.
"""

import json
import math
import os
import random
import secrets
import subprocess
import sys
from datetime import datetime, timedelta, timezone

CANDIDATE_TIMEOUT_SEC = 60
VALID_RANGE = [1, 250000]
Z_95 = 1.96
BUDGET_EVENT = "coupon_budget_exhausted"


def iso(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def build(name, seed, arms, control, per_arm, basket, convert=None, extra=(), cap_fraction=None):
    """One experiment: registry, assignments, orders and ops log rows.

    basket: {arm: mean order value in cents}; convert: None (every visitor orders exactly once)
    or {arm: conversion probability}, converters ordering one to three times; extra: extra
    order values attached to random visitors; cap_fraction: where in the window the coupon
    budget runs out (None: it never does).
    """
    rng = random.Random(seed)
    start = datetime(2025, 2, 3, tzinfo=timezone.utc)
    days = 14
    assignments, orders, ops = [], [], []
    visitors = []
    for arm in arms:
        for i in range(per_arm):
            at = start + timedelta(seconds=rng.uniform(0, days * 86400 - 7200))
            visitors.append(("%s-%s-%04d" % (name[:3], arm, i), arm, at))
    visitors.sort(key=lambda v: v[2])
    serial = 1
    for vid, arm, at in visitors:
        assignments.append([vid, arm, iso(at)])
        if convert is None:
            count = 1
        else:
            count = 0 if rng.random() >= convert[arm] else rng.choice((1, 1, 1, 2, 3))
        for _ in range(count):
            value = max(100, min(240000, int(rng.gauss(basket[arm], basket[arm] * 0.35))))
            orders.append(["x%06d" % serial, vid, iso(at + timedelta(minutes=rng.uniform(2, 60))), value])
            serial += 1
    for value in extra:
        vid, _, at = visitors[rng.randrange(len(visitors))]
        orders.append(["x%06d" % serial, vid, iso(at + timedelta(minutes=rng.uniform(2, 60))), value])
        serial += 1
    orders.sort(key=lambda o: o[2])
    ops.append([iso(start), "experiment_started", "held-out"])
    ops.append([iso(start + timedelta(days=4, hours=10)), "deploy", "storefront 25.6.0"])
    if cap_fraction is not None:
        cap = start + timedelta(seconds=cap_fraction * days * 86400)
        ops.append([iso(cap), BUDGET_EVENT, "coupons disabled"])
    ops.append([iso(start + timedelta(days=days)), "experiment_stopped", "held-out"])
    ops.sort()
    registry = {
        "experiment": name,
        "title": "held-out " + name,
        "unit": "visitor",
        "arms": {arm: "arm-" + arm for arm in arms},
        "control_arm": control,
        "start": iso(start),
        "end": iso(start + timedelta(days=days)),
        "metric": {"column": "revenue_cents", "valid_range": list(VALID_RANGE)},
        "coupon": {"arm": arms[-1], "value_cents": 500, "budget_cents": 90000},
    }
    return {"registry": registry, "assignments": assignments, "orders": orders, "ops_log": ops}


DATASETS = {
    "difference-interval": build("interval", 9101, ["0", "1", "2"], "0", 1200,
                                 {"0": 5200, "1": 5450, "2": 5050}),
    "control-arm": build("baseline", 9102, ["0", "1", "2", "3"], "2", 400,
                         {"0": 5200, "1": 5600, "2": 4800, "3": 6100}),
    "spend-cap-window": build("budget", 9103, ["0", "1", "2"], "1", 500,
                              {"0": 5300, "1": 5000, "2": 4700}, cap_fraction=0.6),
    "valid-revenue-range": build("range", 9104, ["0", "1"], "1", 500, {"0": 5100, "1": 4900},
                                 extra=[-1, -1, -1, -1, -1, -1, 0, 0, 263000, 318000, 401500, 250000, 1]),
    "visitor-denominator": build("visitors", 9105, ["0", "1", "2"], "0", 600,
                                 {"0": 5000, "1": 5200, "2": 5400},
                                 convert={"0": 0.10, "1": 0.12, "2": 0.09}),
}


def reference(ds):
    """The numbers the full specification asks for."""
    low, high = ds["registry"]["metric"]["valid_range"]
    caps = [row[0] for row in ds["ops_log"] if row[1] == BUDGET_EVENT]
    end = min(caps) if caps else None
    arm_of = {vid: arm for vid, arm, at in ds["assignments"] if end is None or at < end}
    total = dict.fromkeys(arm_of, 0)
    for _, vid, _, value in ds["orders"]:
        if vid in total and low <= value <= high:
            total[vid] += value
    per_arm = {}
    for vid, arm in arm_of.items():
        per_arm.setdefault(arm, []).append(total[vid])
    stats = {}
    for arm, values in per_arm.items():
        n = len(values)
        m = sum(values) / n
        var = sum((v - m) ** 2 for v in values) / (n - 1)
        stats[arm] = (n, m, var)
    control = ds["registry"]["control_arm"]
    arms = {arm: {"visitors": s[0], "revenue_per_visitor": s[1]} for arm, s in stats.items()}
    comparisons = {}
    for arm, (n, m, var) in stats.items():
        if arm == control:
            continue
        nc, mc, varc = stats[control]
        half = Z_95 * math.sqrt(var / n + varc / nc)
        comparisons[arm] = {"difference": m - mc, "low": m - mc - half, "high": m - mc + half, "half": half}
    return {"arms": arms, "comparisons": comparisons}


DRIVER = r'''
import csv, json, os, sys, tempfile
real_stdout = sys.stdout
payload = json.loads(sys.stdin.read())

def plain(v, depth=0):
    if depth > 10:
        return None
    if isinstance(v, dict):
        return {str(k): plain(x, depth + 1) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x, depth + 1) for x in v]
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, int):
        return v
    try:
        f = float(v)
    except Exception:
        return str(v)
    return f if f == f and f not in (float("inf"), float("-inf")) else str(f)

def write(folder, name, header, rows):
    with open(os.path.join(folder, name), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)

try:
    from analysis.abtest import summarize
except BaseException as err:
    real_stdout.write(payload["nonce"] + json.dumps({"import_error": type(err).__name__ + ": " + str(err)[:200]}) + "\n")
    sys.exit(0)

out = {}
root = tempfile.mkdtemp(prefix="heldout-")
for key, ds in payload["datasets"].items():
    folder = os.path.join(root, ds["registry"]["experiment"])
    os.makedirs(folder)
    with open(os.path.join(folder, "registry.json"), "w") as f:
        json.dump(ds["registry"], f, indent=2)
    write(folder, "assignments.csv", ["visitor_id", "arm", "assigned_at"], ds["assignments"])
    write(folder, "orders.csv", ["order_id", "visitor_id", "placed_at", "revenue_cents"], ds["orders"])
    write(folder, "ops_log.csv", ["at", "event", "detail"], ds["ops_log"])
    try:
        out[key] = {"value": plain(summarize(folder))}
    except BaseException as err:
        out[key] = {"error": type(err).__name__ + ": " + str(err)[:200]}
real_stdout.write(payload["nonce"] + json.dumps(out) + "\n")
real_stdout.flush()
'''


def run_candidate():
    nonce = "@@" + secrets.token_hex(8) + "@@"
    try:
        proc = subprocess.run(
            [os.environ["SPECGAP_CANDIDATE"], "python3", "-c", DRIVER],
            input=json.dumps({"nonce": nonce, "datasets": DATASETS}),
            capture_output=True,
            text=True,
            timeout=CANDIDATE_TIMEOUT_SEC,
        )
    except subprocess.TimeoutExpired:
        return None, "the analysis did not finish within %d s" % CANDIDATE_TIMEOUT_SEC
    for line in proc.stdout.splitlines():
        if line.startswith(nonce):
            data = json.loads(line[len(nonce):])
            if "import_error" in data:
                return None, "could not import analysis.abtest: " + data["import_error"]
            return data, None
    tail = (proc.stderr or "").strip().splitlines()[-3:]
    return None, "the analysis ended without a result (exit %s): %s" % (proc.returncode, " | ".join(tail))


class Verdict(Exception):
    def __init__(self, mode, measured, detail):
        super().__init__(detail)
        self.outcome = {"pass": False, "failure_mode": mode, "measured": measured, "detail": detail}


def number(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def close(got, want, tol):
    got = number(got)
    return got is not None and abs(got - want) <= tol


def euros(cents):
    value = number(cents)
    return "n/a" if value is None else "%.2f" % (value / 100.0)


def summary_of(data, key, crash_mode):
    got = data.get(key, {})
    if "error" in got:
        raise Verdict(crash_mode, {"error": got["error"].split(":")[0]}, got["error"])
    value = got.get("value")
    if not isinstance(value, dict):
        raise Verdict(crash_mode, {"error": "no summary"}, "summarize returned %r" % (value,))
    return value


def arm_row(summary, arm):
    arms = summary.get("arms")
    row = arms.get(arm) if isinstance(arms, dict) else None
    return row if isinstance(row, dict) else {}


def comparison(summary, arm):
    comps = summary.get("comparisons")
    row = comps.get(arm) if isinstance(comps, dict) else None
    return row if isinstance(row, dict) else None


def judge_control(data):
    key = "control-arm"
    summary = summary_of(data, key, "control-analysis-error")
    ref = reference(DATASETS[key])
    control = DATASETS[key]["registry"]["control_arm"]
    missing = []
    for arm, want in sorted(ref["comparisons"].items()):
        got = comparison(summary, arm)
        if got is None or number(got.get("difference")) is None:
            missing.append(arm)
            continue
        if not close(got.get("difference"), want["difference"], 0.01 + 1e-6 * abs(want["difference"])):
            raise Verdict("wrong-baseline", {"arm": arm, "reported": euros(got.get("difference")),
                                             "expected": euros(want["difference"])},
                          "arm %s difference %r, against control arm %s it is %.4f"
                          % (arm, got.get("difference"), control, want["difference"]))
    if missing:
        raise Verdict("comparison-missing", {"arm": missing[0]}, "no comparison reported for arm(s) %s" % ", ".join(missing))
    return "every arm is compared with the registry's control arm"


def judge_interval(data):
    key = "difference-interval"
    summary = summary_of(data, key, "interval-analysis-error")
    ref = reference(DATASETS[key])
    for arm, want in sorted(ref["comparisons"].items()):
        got = comparison(summary, arm)
        if got is None or any(number(got.get(k)) is None for k in ("difference", "low", "high")):
            raise Verdict("interval-missing", {"arm": arm}, "no difference with low/high for arm %s" % arm)
        if not close(got["difference"], want["difference"], 0.01 + 1e-6 * abs(want["difference"])):
            raise Verdict("difference-wrong", {"arm": arm, "reported": euros(got["difference"]),
                                               "expected": euros(want["difference"])},
                          "arm %s difference %r, expected %.4f" % (arm, got["difference"], want["difference"]))
        tol = 0.005 * want["half"] + 0.01
        if not (close(got["low"], want["low"], tol) and close(got["high"], want["high"], tol)):
            raise Verdict("interval-wrong", {"arm": arm, "low": euros(got["low"]), "high": euros(got["high"]),
                                             "expected_low": euros(want["low"]), "expected_high": euros(want["high"])},
                          "arm %s interval [%r, %r], expected [%.4f, %.4f]" % (arm, got["low"], got["high"], want["low"], want["high"]))
    return "differences carry the 95% interval of 1.96 unpooled standard errors"


def per_arm_check(data, key, crash_mode, visitors_mode, revenue_mode):
    summary = summary_of(data, key, crash_mode)
    ref = reference(DATASETS[key])
    for arm, want in sorted(ref["arms"].items()):
        got = arm_row(summary, arm)
        if number(got.get("visitors")) != want["visitors"] and visitors_mode is not None:
            raise Verdict(visitors_mode, {"arm": arm, "visitors": got.get("visitors"), "expected_visitors": want["visitors"]},
                          "arm %s counts %r visitors, expected %d" % (arm, got.get("visitors"), want["visitors"]))
        rpv = want["revenue_per_visitor"]
        if number(got.get("visitors")) != want["visitors"] or not close(got.get("revenue_per_visitor"), rpv, 0.01 + 1e-6 * abs(rpv)):
            raise Verdict(revenue_mode, {"arm": arm, "reported": euros(got.get("revenue_per_visitor")), "expected": euros(rpv)},
                          "arm %s revenue per visitor %r (visitors %r), expected %.4f (visitors %d)"
                          % (arm, got.get("revenue_per_visitor"), got.get("visitors"), rpv, want["visitors"]))


def judge_cap(data):
    per_arm_check(data, "spend-cap-window", "cap-analysis-error", "post-cap-visitors-counted", "cap-window-revenue-wrong")
    return "visitors assigned after the coupon budget ran out are left out of every arm"


def judge_range(data):
    per_arm_check(data, "valid-revenue-range", "range-analysis-error", None, "invalid-revenue-counted")
    return "order values outside the registry's valid range are left out"


def judge_denominator(data):
    per_arm_check(data, "visitor-denominator", "denominator-analysis-error", "buyers-as-visitors", "revenue-per-order")
    return "every assigned visitor counts, with zero revenue when they did not buy"


JUDGES = {
    "control-arm": (judge_control, "control-analysis-error"),
    "difference-interval": (judge_interval, "interval-analysis-error"),
    "spend-cap-window": (judge_cap, "cap-analysis-error"),
    "valid-revenue-range": (judge_range, "range-analysis-error"),
    "visitor-denominator": (judge_denominator, "denominator-analysis-error"),
}


def main():
    data, error = run_candidate()
    report = {}
    for rid, (judge, crash_mode) in JUDGES.items():
        try:
            if data is None:
                raise Verdict(crash_mode, {"error": error.split(":")[0]}, error)
            report[rid] = {"pass": True, "failure_mode": None, "measured": {}, "detail": judge(data)}
        except Verdict as verdict:
            report[rid] = verdict.outcome
    with open(os.path.join(os.environ["SPECGAP_OUT"], "result.json"), "w") as f:
        json.dump({"version": 1, "requirements": report}, f, indent=2, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
