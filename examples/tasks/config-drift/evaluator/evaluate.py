"""Private evaluator of examples/config-drift (specgap evaluator protocol, result version 1).

Drives the submitted `estate.reconcile.Estate` through five held-out estates (environments,
services and nights that no public record uses) inside the candidate sandbox
($SPECGAP_CANDIDATE), one estate per requirement, and judges the outputs here. The frozen
protocol module is checked statically in $SPECGAP_WORKSPACE. Standard library only; exits 0
whenever a result could be written.
"""

import copy
import hashlib
import json
import os
import secrets
import subprocess
import sys

CANDIDATE_TIMEOUT_SEC = 60
PROTOCOL_PATH = "estate/protocol.py"
PROTOCOL_SHA256 = "d5608851fc163b21454a966e512050125fa71c90b2414f592b643a97291e1c16"
OPEN = ("detected", "acknowledged", "ignored")

REG = "images.corp/"
NIGHTS = ["2025-03-%02d" % d for d in range(3, 10)]
N1, N2, N3, N4, N5, N6, N7 = NIGHTS


def declare(env, baseline, night, services):
    return {"op": "declare", "env": env, "baseline": baseline, "night": night, "services": services}


def scan(env, night, observed, tag):
    return {"op": "scan", "env": env, "night": night, "observed": observed, "tag": tag}


def view(op, tag, **kw):
    return dict(op=op, tag=tag, **kw)


def changed(decl, changes=None, drop=(), omit=()):
    out = copy.deepcopy(decl)
    for svc in drop:
        out.pop(svc)
    for (svc, key), val in (changes or {}).items():
        out[svc][key] = val
    for svc, key in omit:
        out[svc][key] = None
    return out


# -- record identity: drifts that continue over three nights ----------------------------
ID_ENV = "eu-stage"
ID_DECL = {
    "orders-api": {"image": REG + "orders-api:12.4.0", "replicas": 4, "ports": [8080, 8443], "log_level": "info"},
    "ledger-worker": {"image": REG + "ledger-worker:3.1.2", "log_level": "warn", "replicas": 2},
    "pdf-render": {"image": REG + "pdf-render:0.9.7", "replicas": 1},
}
ID_DRIFT = {("orders-api", "image"): N1, ("orders-api", "replicas"): N1, ("ledger-worker", "log_level"): N2}
IDENTITY = [
    declare(ID_ENV, "eus-r7", N1, ID_DECL),
    scan(ID_ENV, N1, changed(ID_DECL, {("orders-api", "image"): REG + "orders-api:12.4.0-dev", ("orders-api", "replicas"): 6}), "s1"),
    view("ledger", "l1", env=ID_ENV),
    scan(ID_ENV, N2, changed(ID_DECL, {("orders-api", "image"): REG + "orders-api:12.4.0-dev", ("orders-api", "replicas"): 6,
                                      ("ledger-worker", "log_level"): "debug"}), "s2"),
    view("ledger", "l2", env=ID_ENV),
    scan(ID_ENV, N3, changed(ID_DECL, {("orders-api", "image"): REG + "orders-api:12.5.0-rc1", ("orders-api", "replicas"): 6,
                                      ("ledger-worker", "log_level"): "debug"}), "s3"),
    view("ledger", "l3", env=ID_ENV),
]

# -- record lifecycle: clearing, triage, recurrence ---------------------------------------
LC_ENV = "eu-prod"
LC_DECL = {
    "checkout": {"image": REG + "checkout:8.0.1", "replicas": 6},
    "payments": {"image": REG + "payments:2.2.0", "replicas": 3},
    "edge-proxy": {"image": REG + "edge-proxy:1.25.3", "ports": [80, 443]},
    "notifier": {"image": REG + "notifier:4.0.0", "log_level": "info"},
    "catalog": {"image": REG + "catalog:5.5.5", "replicas": 2},
}
T1 = ("checkout", "image")
T2 = ("payments", "replicas")
T3 = ("edge-proxy", "ports")
T4 = ("notifier", "log_level")
D1 = {T1: REG + "checkout:8.0.1-hotfix"}
D2 = {T2: 5}
D3 = {T3: [80, 443, 8080]}
D4 = {T4: "trace"}


def lc_obs(*parts):
    merged = {}
    for part in parts:
        merged.update(part)
    return changed(LC_DECL, merged)


LIFECYCLE = [
    declare(LC_ENV, "eup-r12", N1, LC_DECL),
    scan(LC_ENV, N1, lc_obs(D1, D2, D4), "s1"),
    view("acknowledge", "a1", env=LC_ENV, key=T2, night=N1, operator="dara"),
    scan(LC_ENV, N2, lc_obs(D1, D2, D3, D4), "s2"),
    view("ignore", "i1", env=LC_ENV, key=T3, night=N2, operator="dara", reason="vendor port change"),
    view("acknowledge", "a2", env=LC_ENV, key=T4, night=N2, operator="kemal"),
    scan(LC_ENV, N3, lc_obs(D2, D3, D4), "s3"),
    view("ledger", "l3", env=LC_ENV),
    scan(LC_ENV, N4, lc_obs(D2, D3), "s4"),
    view("ledger", "l4", env=LC_ENV),
    scan(LC_ENV, N5, lc_obs(D1, D2, D3), "s5"),
    view("ledger", "l5", env=LC_ENV),
    view("queue", "q5", env=LC_ENV),
]

# -- compliance accounting: one snapshot with every category, and an empty baseline ----
AC_ENV = "lab"
AC_DECL = {
    "u-api": {"image": REG + "u-api:1.0.0", "replicas": 2},
    "u-db": {"image": REG + "u-db:15.4", "replicas": 1, "log_level": "warn"},
    "u-queue": {"image": REG + "u-queue:3.12", "replicas": 3},
    "u-cron": {"image": REG + "u-cron:0.4.1", "log_level": "info", "replicas": 1},
    "u-auth": {"image": REG + "u-auth:2.0.0", "replicas": 2, "log_level": "info"},
    "u-web": {"image": REG + "u-web:9.1.0", "ports": [80, 443], "limits": {"cpu": "250m", "memory": "512Mi"}},
}
AC_OBS = changed(AC_DECL, {("u-db", "replicas"): 2, ("u-auth", "image"): REG + "u-auth:2.0.1"},
                 drop=["u-queue"], omit=[("u-cron", "log_level"), ("u-auth", "log_level")])
AC_OBS["u-web"] = {"limits": {"memory": "512Mi ", "cpu": "250m"}, "ports": [443, 80], "image": " " + REG + "u-web:9.1.0"}
AC_OBS["u-auth"].pop("log_level")  # left out entirely, where u-cron's comes back as None
AC_OBS["tmp-debug"] = {"image": REG + "busybox:1.36"}
AC_OBS["scratch-runner"] = {"image": REG + "runner:2.0", "replicas": 1}
AC_EXPECT = {"total": 6, "compliant": 2, "drifted": 2, "missing": 1, "unknown": 1, "score": 40.0}
ACCOUNTING = [
    declare(AC_ENV, "lab-r3", N1, AC_DECL),
    scan(AC_ENV, N1, AC_OBS, "s1"),
    view("snapshots", "v1", env=AC_ENV),
    declare("lab-empty", "lab-empty-r1", N1, {}),
    scan("lab-empty", N1, {"tmp-debug": {"image": REG + "busybox:1.36"}}, "s2"),
    view("snapshots", "v2", env="lab-empty"),
]
EMPTY_EXPECT = {"total": 0, "compliant": 0, "drifted": 0, "missing": 0, "unknown": 0, "score": None}

# -- baseline integrity: supersede, scan without baseline, delete owned state ----------
IN_PROD, IN_DEV = "ap-prod", "ap-dev"
IN_R1 = {
    "quotes": {"image": REG + "quotes:6.0.0", "replicas": 3},
    "pricing": {"image": REG + "pricing:2.3.1", "replicas": 2},
}
IN_R2 = copy.deepcopy(IN_R1)
IN_R2["quotes"]["image"] = REG + "quotes:6.0.1"
IN_R2["fx-rates"] = {"image": REG + "fx-rates:1.1.0", "ports": [9000]}
IN_DEV_DECL = {"quotes": {"image": REG + "quotes:6.1.0-beta", "replicas": 1}}
IN_OBS = {
    "quotes": {"image": REG + "quotes:6.0.1", "replicas": 3},
    "pricing": {"image": REG + "pricing:2.3.1", "replicas": 2},
    "fx-rates": {"image": REG + "fx-rates:1.1.0", "ports": [9000, 9001]},
}
INTEGRITY = [
    declare(IN_PROD, "app-r1", N1, IN_R1),
    declare(IN_DEV, "apd-r1", N1, IN_DEV_DECL),
    scan(IN_PROD, N1, IN_OBS, "s1"),
    scan(IN_DEV, N1, {"quotes": {"image": REG + "quotes:6.1.0-beta", "replicas": 2}}, "s2"),
    declare(IN_PROD, "app-r2", N2, IN_R2),
    view("active", "act1", env=IN_PROD),
    scan(IN_PROD, N2, IN_OBS, "s3"),
    view("ledger", "lp0", env=IN_PROD),
    view("ledger", "ld0", env=IN_DEV),
    view("snapshots", "sp0", env=IN_PROD),
    view("snapshots", "sd0", env=IN_DEV),
    scan("ap-qa", N2, IN_OBS, "s4"),
    view("ledger", "lq", env="ap-qa"),
    view("snapshots", "sq", env="ap-qa"),
    {"op": "delete", "baseline": "app-r1", "tag": "del1"},
    view("active", "act2", env=IN_PROD),
    view("ledger", "lp1", env=IN_PROD),
    view("snapshots", "sp1", env=IN_PROD),
    {"op": "delete", "baseline": "app-r2", "tag": "del2"},
    view("active", "act3", env=IN_PROD),
    scan(IN_PROD, N3, IN_OBS, "s5"),
    view("ledger", "lp2", env=IN_PROD),
    view("snapshots", "sp2", env=IN_PROD),
    view("ledger", "ld2", env=IN_DEV),
    view("snapshots", "sd2", env=IN_DEV),
]

# -- observed-config normalisation: one scan of a fresh estate ----------------------------
NO_ENV = "edge-west"
NO_DECL = {
    "v-gw": {"image": REG + "v-gw:3.3.0", "ports": [443, 8443], "dns": ["10.9.0.2", "10.9.0.3"], "log_level": " info"},
    "v-cache": {"image": REG + "v-cache:7.2.4", "replicas": 3, "log_level": "warn"},
    "v-fw": {"image": REG + "v-fw:1.8.0", "ports": [80, 443]},
    "v-quota": {"image": REG + "v-quota:0.7.0", "limits": {"cpu": "500m", "memory": "1Gi"}},
}
NO_OBS = {
    "v-gw": {"log_level": "info", "dns": ["10.9.0.3", "10.9.0.2", "10.9.0.2"], "ports": [8443, 443], "image": REG + "v-gw:3.3.0 "},
    "v-cache": {"replicas": 3, "image": REG + "v-cache:7.2.4", "log_level": None},
    "v-fw": {"ports": [8080, 80], "image": REG + "v-fw:1.8.0"},
    "v-quota": {"limits": {"memory": " 2Gi", "cpu": "500m"}, "image": REG + "v-quota:0.7.0"},
}
NO_EXPECT = {
    ("v-fw", "ports"): ([80, 443], [80, 8080]),
    ("v-quota", "limits"): ({"cpu": "500m", "memory": "1Gi"}, {"cpu": "500m", "memory": "2Gi"}),
}
NORMALISATION = [
    declare(NO_ENV, "edw-r2", N1, NO_DECL),
    scan(NO_ENV, N1, NO_OBS, "s1"),
    view("ledger", "l1", env=NO_ENV),
]

SCENARIOS = {
    "record-identity": IDENTITY,
    "record-lifecycle": LIFECYCLE,
    "compliance-accounting": ACCOUNTING,
    "baseline-integrity": INTEGRITY,
    "observed-normalisation": NORMALISATION,
}

DRIVER = r'''
import enum, json, sys
real_stdout = sys.stdout
payload = json.loads(sys.stdin.read())

def plain(v, depth=0):
    if depth > 20:
        return str(v)
    if isinstance(v, enum.Enum):
        v = v.value
    if isinstance(v, dict):
        return {str(plain(k, depth + 1)): plain(x, depth + 1) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x, depth + 1) for x in v]
    if isinstance(v, (set, frozenset)):
        return sorted((plain(x, depth + 1) for x in v), key=repr)
    if v is None or isinstance(v, (bool, int, float)):
        return v
    if isinstance(v, str):
        return str.__str__(v)
    return str(v)

def rows_of(value):
    return [plain(r) for r in (value or [])]

try:
    from estate.reconcile import Estate
except BaseException as err:
    real_stdout.write(payload["nonce"] + json.dumps({"import_error": type(err).__name__ + ": " + str(err)[:200]}) + "\n")
    sys.exit(0)

def open_row(estate, env, service, setting):
    rows = [r for r in rows_of(estate.ledger(env)) if r.get("service") == service and r.get("setting") == setting
            and r.get("status") != "resolved"]
    return rows[-1] if rows else None

out = {}
for rid, steps in payload["scenarios"].items():
    res = {}
    try:
        estate = Estate()
    except BaseException as err:
        out[rid] = {"fatal": type(err).__name__ + ": " + str(err)[:200]}
        continue
    for st in steps:
        op, tag = st["op"], st.get("tag")
        try:
            if op == "declare":
                estate.declare_baseline(st["env"], st["baseline"], st["night"], st["services"])
                value = None
            elif op == "scan":
                value = plain(estate.scan(st["env"], st["night"], st["observed"]))
            elif op == "ledger":
                value = rows_of(estate.ledger(st["env"]))
            elif op == "queue":
                value = rows_of(estate.queue(st["env"]))
            elif op == "snapshots":
                value = rows_of(estate.snapshots(st["env"]))
            elif op == "active":
                value = plain(estate.active_baseline(st["env"]))
            elif op in ("acknowledge", "ignore"):
                row = open_row(estate, st["env"], st["key"][0], st["key"][1])
                if row is None:
                    raise LookupError("no open ledger row for %s/%s" % tuple(st["key"]))
                if op == "acknowledge":
                    estate.acknowledge(row.get("id"), st["night"], st["operator"])
                else:
                    estate.ignore(row.get("id"), st["night"], st["operator"], st["reason"])
                value = row.get("id")
            elif op == "delete":
                estate.delete_baseline(st["baseline"])
                value = None
            else:
                raise ValueError(op)
            if tag:
                res[tag] = {"value": value}
        except BaseException as err:
            if isinstance(err, KeyboardInterrupt):
                raise
            if tag:
                res[tag] = {"error": type(err).__name__, "message": str(err)[:200]}
    out[rid] = res
real_stdout.write(payload["nonce"] + json.dumps(out) + "\n")
real_stdout.flush()
'''


def run_candidate():
    nonce = "@@" + secrets.token_hex(8) + "@@"
    payload = {"nonce": nonce, "scenarios": SCENARIOS}
    try:
        proc = subprocess.run(
            [os.environ["SPECGAP_CANDIDATE"], "python3", "-c", DRIVER],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            timeout=CANDIDATE_TIMEOUT_SEC,
        )
    except subprocess.TimeoutExpired:
        return None, "the estate code did not finish within %d s" % CANDIDATE_TIMEOUT_SEC
    for line in proc.stdout.splitlines():
        if line.startswith(nonce):
            data = json.loads(line[len(nonce):])
            if "import_error" in data:
                return None, "could not import estate.reconcile: " + data["import_error"]
            return data, None
    tail = (proc.stderr or "").strip().splitlines()[-3:]
    return None, "the run ended without a result (exit %s): %s" % (proc.returncode, " | ".join(tail))


class Verdict(Exception):
    """Raised by a judge with the failing outcome."""

    def __init__(self, mode, measured, detail):
        super().__init__(detail)
        self.outcome = {"pass": False, "failure_mode": mode, "measured": measured, "detail": detail}


def step(res, tag, crash_mode):
    """The value a tagged step produced; a step that raised fails the requirement."""
    got = res.get(tag)
    if got is None:
        raise Verdict(crash_mode, {"step": tag, "error": "no result"}, "step %s produced nothing" % tag)
    if "error" in got:
        raise Verdict(crash_mode, {"step": tag, "error": got["error"]}, "step %s raised %s: %s" % (tag, got["error"], got["message"]))
    return got["value"]


def rows_for(rows, service, setting):
    if not isinstance(rows, list):
        return []
    return [r for r in rows if isinstance(r, dict) and r.get("service") == service and r.get("setting") == setting]


def is_open(row):
    return row.get("status") in OPEN


def judge_identity(res):
    crash = "ledger-unavailable"
    ids = {}
    for night_index, tag in enumerate(["l1", "l2", "l3"]):
        rows = step(res, tag, crash)
        night = NIGHTS[night_index]
        for (service, setting), since in ID_DRIFT.items():
            if since > night:
                continue
            where = "%s/%s/%s" % (ID_ENV, service, setting)
            open_rows = [r for r in rows_for(rows, service, setting) if is_open(r)]
            if not open_rows:
                raise Verdict("drift-not-in-ledger", {"record": where, "night": night},
                              "no open ledger row for %s on %s" % (where, night))
            if len(open_rows) > 1:
                raise Verdict("duplicate-open-rows", {"record": where, "rows": len(open_rows), "nights": night_index + 1},
                              "%d open rows for %s on %s" % (len(open_rows), where, night))
            row = open_rows[0]
            first = ids.setdefault((service, setting), (row.get("id"), row.get("first_seen")))
            if row.get("id") != first[0] or row.get("first_seen") != since:
                raise Verdict("row-identity-changed",
                              {"record": where, "first_seen": str(row.get("first_seen")), "expected_first_seen": since},
                              "row for %s on %s has id %r first_seen %r; it started as %r on %s"
                              % (where, night, row.get("id"), row.get("first_seen"), first[0], since))
    distinct = {v[0] for v in ids.values()}
    if len(distinct) != len(ids):
        raise Verdict("duplicate-open-rows", {"record": "%s/orders-api" % ID_ENV, "rows": 1, "nights": 3},
                      "separate settings share one ledger row id")
    return "one durable row per continuing condition"


def judge_lifecycle(res):
    crash = "ledger-unavailable-lifecycle"
    for tag in ("a1", "i1", "a2"):
        step(res, tag, crash)
    l3, l4, l5 = (step(res, t, crash) for t in ("l3", "l4", "l5"))
    queue = step(res, "q5", crash)

    def resolved_once(rows, key, night, when):
        where = "%s/%s/%s" % ((LC_ENV,) + key)
        matching = rows_for(rows, *key)
        done = [r for r in matching if r.get("status") == "resolved"]
        if not done or any(is_open(r) for r in matching if r.get("first_seen") != N5):
            raise Verdict("cleared-not-resolved", {"record": where, "night": night},
                          "%s cleared on %s but is not resolved in the ledger of %s" % (where, night, when))
        if len(done) != 1 or done[0].get("resolved_on") != night:
            raise Verdict("resolution-redated", {"record": where, "night": night, "resolved_on": str(done[0].get("resolved_on"))},
                          "%s cleared on %s; ledger of %s shows resolved_on %r" % (where, night, when, done[0].get("resolved_on")))

    resolved_once(l3, T1, N3, N3)
    resolved_once(l4, T1, N3, N4)
    resolved_once(l4, T4, N4, N4)
    for rows, when in ((l3, N3), (l4, N4), (l5, N5)):
        for key, decision in ((T2, "acknowledged"), (T3, "ignored")):
            where = "%s/%s/%s" % ((LC_ENV,) + key)
            current = [r for r in rows_for(rows, *key) if r.get("status") != "resolved"]
            if not current or any(r.get("status") != decision for r in current):
                status = current[0].get("status") if current else "missing"
                raise Verdict("triage-overridden", {"record": where, "decision": decision, "status": str(status)},
                              "%s was %s by an operator; on %s its row is %s" % (where, decision, when, status))
    where = "%s/%s/%s" % ((LC_ENV,) + T1)
    t1 = rows_for(l5, *T1)
    old = [r for r in t1 if r.get("status") == "resolved" and r.get("resolved_on") == N3]
    new = [r for r in t1 if is_open(r) and r.get("first_seen") == N5]
    if not old or not new or old[0].get("id") == new[0].get("id"):
        raise Verdict("recurrence-reopened", {"record": where, "night": N5},
                      "%s returned on %s: rows %r" % (where, N5, [(r.get("id"), r.get("status"), r.get("first_seen")) for r in t1]))
    queued = {(r.get("service"), r.get("setting")) for r in queue if isinstance(r, dict)} if isinstance(queue, list) else set()
    for key in (T2, T3):
        if key in queued:
            where = "%s/%s/%s" % ((LC_ENV,) + key)
            raise Verdict("triage-overridden", {"record": where, "decision": "acknowledged" if key == T2 else "ignored",
                                                "status": "queued"},
                          "%s is back on the morning queue of %s" % (where, N5))
    if T1 not in queued or new[0].get("id") not in {r.get("id") for r in queue}:
        raise Verdict("recurrence-reopened", {"record": where, "night": N5},
                      "the returned condition %s is not on the morning queue of %s" % (where, N5))
    return "conditions resolve once, triage holds, a recurrence opens a new row"


def judge_accounting(res):
    crash = "snapshot-unavailable"
    checks = (("s1", "v1", AC_EXPECT, AC_ENV, len(AC_DECL)), ("s2", "v2", EMPTY_EXPECT, "lab-empty", 0))
    for scan_tag, view_tag, expect, env, declared in checks:
        snap = step(res, scan_tag, crash)
        if not isinstance(snap, dict):
            listed = step(res, view_tag, crash)
            snap = listed[-1] if isinstance(listed, list) and listed else None
        if not isinstance(snap, dict):
            raise Verdict(crash, {"step": scan_tag, "error": "no snapshot"}, "scan of %s returned no snapshot" % env)
        if snap.get("total") != expect["total"]:
            raise Verdict("total-not-population", {"env": env, "reported": str(snap.get("total")), "declared": declared},
                          "snapshot of %s has total %r; its baseline declares %d services" % (env, snap.get("total"), declared))
        for part in ("compliant", "drifted", "missing", "unknown"):
            if snap.get(part) != expect[part]:
                raise Verdict("partition-wrong", {"env": env, "category": part, "reported": str(snap.get(part)), "expected": expect[part]},
                              "snapshot of %s counts %s=%r, expected %d" % (env, part, snap.get(part), expect[part]))
        score = snap.get("score")
        good = (expect["score"] is None and score is None) or (
            expect["score"] is not None and isinstance(score, (int, float)) and not isinstance(score, bool)
            and abs(score - expect["score"]) <= 0.05)
        if not good:
            raise Verdict("score-mismatch", {"env": env, "reported": str(score), "expected": str(expect["score"])},
                          "snapshot of %s has score %r, expected %r" % (env, score, expect["score"]))
    return "snapshots partition the declared population and score it through the protocol"


def judge_integrity(res):
    crash = "baseline-operation-failed"
    active = step(res, "act1", crash)
    snap = res.get("s3", {}).get("value")
    if active != "app-r2" or (isinstance(snap, dict) and snap.get("baseline") not in (None, "app-r2")):
        raise Verdict("stale-baseline-in-force", {"env": IN_PROD, "active": str(active), "declared": "app-r2"},
                      "after declaring app-r2 the active baseline of %s is %r" % (IN_PROD, active))
    step(res, "s3", crash)
    for tag, env in (("s4", "ap-qa"), ("s5", IN_PROD)):
        got = res.get(tag, {})
        if got.get("error") != "NoActiveBaseline":
            raise Verdict("scan-without-baseline", {"env": env, "outcome": got.get("error") or "scanned"},
                          "scan of %s with no baseline in force: %r" % (env, got))
    if step(res, "lq", crash) or step(res, "sq", crash):
        raise Verdict("scan-without-baseline", {"env": "ap-qa", "outcome": "left records"},
                      "a refused scan left ledger rows or snapshots behind")
    lp0, ld0, sp0, sd0 = (step(res, t, crash) for t in ("lp0", "ld0", "sp0", "sd0"))
    step(res, "del1", crash)
    lp1, sp1 = step(res, "lp1", crash), step(res, "sp1", crash)
    act2 = step(res, "act2", crash)
    owned_rows = [r for r in lp1 if isinstance(r, dict) and r.get("first_seen") == N1]
    owned_snaps = [s for s in sp1 if isinstance(s, dict) and s.get("night") == N1]
    if owned_rows or owned_snaps:
        raise Verdict("deletion-left-state", {"baseline": "app-r1", "rows": len(owned_rows), "snapshots": len(owned_snaps)},
                      "after deleting app-r1, %d of its rows and %d of its snapshots remain" % (len(owned_rows), len(owned_snaps)))
    kept_rows = sorted(str(r.get("id")) for r in lp0 if isinstance(r, dict) and r.get("first_seen") == N2)
    kept_snaps = sorted(str(s.get("night")) for s in sp0 if isinstance(s, dict) and s.get("night") == N2)
    if (act2 != "app-r2" or sorted(str(r.get("id")) for r in lp1 if isinstance(r, dict)) != kept_rows
            or sorted(str(s.get("night")) for s in sp1 if isinstance(s, dict)) != kept_snaps or not kept_rows):
        raise Verdict("deletion-removed-other-state", {"baseline": "app-r1", "env": IN_PROD},
                      "deleting app-r1 changed what app-r2 owns: active %r, rows %r" % (act2, lp1))
    step(res, "del2", crash)
    if step(res, "act3", crash) is not None:
        raise Verdict("stale-baseline-in-force", {"env": IN_PROD, "active": str(res["act3"]["value"]), "declared": "none"},
                      "after deleting every baseline of %s one is still active" % IN_PROD)
    lp2, sp2 = step(res, "lp2", crash), step(res, "sp2", crash)
    if lp2 or sp2:
        raise Verdict("deletion-left-state", {"baseline": "app-r2", "rows": len(lp2), "snapshots": len(sp2)},
                      "after deleting app-r2, %d rows and %d snapshots remain" % (len(lp2), len(sp2)))
    ld2, sd2 = step(res, "ld2", crash), step(res, "sd2", crash)
    if ld2 != ld0 or sd2 != sd0:
        raise Verdict("deletion-removed-other-state", {"baseline": "app-r2", "env": IN_DEV},
                      "deleting ap-prod baselines changed the state of %s" % IN_DEV)
    return "one baseline in force per environment, refusal without one, deletion removes exactly its state"


def canonical_json(value):
    return json.dumps(value, sort_keys=True)


def judge_normalisation(res, protocol_ok):
    if not protocol_ok:
        raise Verdict("protocol-changed", {"file": PROTOCOL_PATH}, "%s differs from the shipped protocol module" % PROTOCOL_PATH)
    crash = "scan-failed"
    step(res, "s1", crash)
    rows = [r for r in step(res, "l1", crash) if isinstance(r, dict) and is_open(r)]
    seen = {(r.get("service"), r.get("setting")): r for r in rows}
    for key in seen:
        if key in NO_EXPECT:
            continue
        service, setting = key
        mode = "silence-flagged" if key == ("v-cache", "log_level") else "format-flagged"
        raise Verdict(mode, {"service": str(service), "setting": str(setting)},
                      "ledger row opened for %s/%s, which did not change" % (service, setting))
    for (service, setting), (expected, observed) in NO_EXPECT.items():
        row = seen.get((service, setting))
        if row is None:
            raise Verdict("drift-missed", {"service": service, "setting": setting},
                          "no ledger row for the changed %s/%s" % (service, setting))
        if canonical_json(row.get("expected")) != canonical_json(expected) or row.get("observed") != observed:
            raise Verdict("values-not-canonical", {"service": service, "setting": setting, "stored": canonical_json(row.get("observed"))},
                          "row for %s/%s stores expected %r observed %r" % (service, setting, row.get("expected"), row.get("observed")))
    return "comparison and stored values go through canonical_config; silence opens nothing"


def protocol_untouched():
    path = os.path.join(os.environ["SPECGAP_WORKSPACE"], PROTOCOL_PATH)
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest() == PROTOCOL_SHA256
    except OSError:
        return False


CRASH_MODES = {
    "record-identity": "ledger-unavailable",
    "record-lifecycle": "ledger-unavailable-lifecycle",
    "compliance-accounting": "snapshot-unavailable",
    "baseline-integrity": "baseline-operation-failed",
    "observed-normalisation": "scan-failed",
}


def main():
    data, error = run_candidate()
    protocol_ok = protocol_untouched()
    judges = {
        "record-identity": judge_identity,
        "record-lifecycle": judge_lifecycle,
        "compliance-accounting": judge_accounting,
        "baseline-integrity": judge_integrity,
        "observed-normalisation": lambda res: judge_normalisation(res, protocol_ok),
    }
    report = {}
    for rid, judge in judges.items():
        try:
            if rid == "observed-normalisation" and not protocol_ok:
                judge({})
            if data is None:
                raise Verdict(CRASH_MODES[rid], {"step": "import", "error": error.split(":")[0]}, error)
            res = data.get(rid, {})
            if "fatal" in res:
                raise Verdict(CRASH_MODES[rid], {"step": "Estate()", "error": res["fatal"].split(":")[0]}, res["fatal"])
            report[rid] = {"pass": True, "failure_mode": None, "measured": {}, "detail": judge(res)}
        except Verdict as verdict:
            report[rid] = verdict.outcome
    with open(os.path.join(os.environ["SPECGAP_OUT"], "result.json"), "w") as f:
        json.dump({"version": 1, "requirements": report}, f, indent=2, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
