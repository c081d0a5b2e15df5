"""Private evaluator of examples/payment-retry (specgap evaluator protocol, result version 1).

Runs the submitted `shop.checkout.checkout` on a held-out set of orders against a scripted
gateway on a simulated clock, inside the candidate sandbox ($SPECGAP_CANDIDATE), and judges
the five requirements from what the gateway saw and what state each order ended in.
Standard library only. Exit status 0 whenever a result could be written.
"""

import json
import os
import secrets
import subprocess
import sys

DEADLINE_SEC = 20.0
CANDIDATE_TIMEOUT_SEC = 60

# Held-out orders: none of these order numbers, amounts or scripts appear in the records.
# Tokens as in the vendor sandbox: ok, no-reply, captured-no-reply, busy:<s>, decline:<code>,
# unreachable; the last token repeats.
SCENARIOS = {
    "charge-once": [
        (5107, 6380, ["captured-no-reply", "ok"]),
        (5112, 1545, ["captured-no-reply", "ok"]),
        (5118, 2725, ["ok"]),
    ],
    "retry-timeouts": [
        (5121, 3060, ["no-reply", "ok"]),
        (5126, 870, ["no-reply", "ok"]),
    ],
    "declines-final": [
        (5133, 7150, ["decline:card_velocity_exceeded"]),
        (5139, 2299, ["decline:do_not_honor"]),
    ],
    "respect-busy-wait": [
        (5142, 4410, ["busy:2.5", "ok"]),
        (5147, 1980, ["busy:1.5", "busy:3", "ok"]),
    ],
    "checkout-deadline": [
        (5151, 5530, ["captured-no-reply", "unreachable"]),
        (5156, 3345, ["no-reply", "no-reply", "no-reply", "ok"]),
    ],
}

DRIVER = r'''
import json, sys, time, traceback

real_stdout = sys.stdout
payload = json.loads(sys.stdin.read())
TIMEOUT = 8.0

class Runaway(BaseException):
    pass

class Clock:
    def __init__(self):
        self.t = 1000.0
        self.limit = None
    def now(self):
        return self.t
    def advance(self, s):
        self.t += float(s)
        if self.limit is not None and self.t > self.limit:
            raise Runaway("checkout ran more than 600 simulated seconds")
    def sleep(self, s):
        s = float(s)
        if s > 0:
            self.advance(s)

clock = Clock()
time.sleep = clock.sleep
time.monotonic = clock.now
time.time = clock.now
time.perf_counter = clock.now

try:
    from shop import gateway as gw
    from shop.orders import Order
    from shop.checkout import checkout
except BaseException as err:
    real_stdout.write(payload["nonce"] + json.dumps({"import_error": type(err).__name__ + ": " + str(err)[:200]}) + "\n")
    sys.exit(0)

try:
    from shop.services import Services
except BaseException:
    Services = None

class State:
    def __init__(self, script):
        self.script = script
        self.next = 0
        self.not_before = 0.0
        self.unreachable = False
        self.requests = 0
        self.early = 0
        self.after_decline = 0
        self.declined = False
    def take(self):
        tok = self.script[min(self.next, len(self.script) - 1)]
        self.next += 1
        return tok

class Gateway(gw.Gateway):
    def __init__(self):
        self.orders = {}
        self.by_key = {}
        self.key_owner = {}
        self.captures = {}
        self.serial = 70001
    def capture(self, order_id, amount, key):
        charge = gw.Charge("ch_%d" % self.serial, order_id, amount, key)
        self.serial += 1
        self.captures.setdefault(order_id, []).append(charge)
        if key is not None:
            self.by_key[key] = charge
        return charge
    def charge(self, order_id, amount_cents, idempotency_key=None):
        st = self.orders[order_id]
        st.requests += 1
        if st.requests > 40:
            raise Runaway("more than 40 charge requests for one order")
        if st.declined:
            st.after_decline += 1
        if st.unreachable:
            clock.advance(TIMEOUT)
            raise gw.GatewayTimeout("no answer from gateway")
        if clock.now() < st.not_before:
            st.early += 1
            clock.advance(0.5)
            raise gw.GatewayBusy(max(st.not_before - clock.now(), 0.0))
        key = idempotency_key
        earlier = self.by_key.get(key) if key is not None else None
        if key is not None:
            owner = self.key_owner.setdefault(key, (order_id, amount_cents))
            if owner != (order_id, amount_cents):
                clock.advance(1.0)
                raise gw.GatewayError("idempotency key reused with different parameters")
        tok = st.take()
        if tok == "ok":
            clock.advance(1.0)
            return earlier if earlier is not None else self.capture(order_id, amount_cents, key)
        if tok == "no-reply":
            clock.advance(TIMEOUT)
            raise gw.GatewayTimeout("no answer from gateway")
        if tok == "captured-no-reply":
            clock.advance(TIMEOUT)
            if earlier is None:
                self.capture(order_id, amount_cents, key)
            raise gw.GatewayTimeout("no answer from gateway")
        if tok.startswith("busy:"):
            wait = float(tok.split(":", 1)[1])
            clock.advance(0.5)
            st.not_before = clock.now() + wait
            raise gw.GatewayBusy(wait)
        if tok.startswith("decline:"):
            clock.advance(1.0)
            st.declined = True
            raise gw.CardDeclined(tok.split(":", 1)[1])
        if tok == "unreachable":
            st.unreachable = True
            clock.advance(TIMEOUT)
            raise gw.GatewayTimeout("no answer from gateway")
        raise RuntimeError("bad token " + tok)
    def find_charge(self, idempotency_key):
        owner = self.key_owner.get(idempotency_key)
        if owner is not None and self.orders[owner[0]].unreachable:
            clock.advance(TIMEOUT)
            raise gw.GatewayTimeout("no answer from gateway")
        clock.advance(1.0)
        return self.by_key.get(idempotency_key)

class Mailer:
    def __init__(self):
        self.sent = []
    def send(self, to, template, **fields):
        self.sent.append(template)

gateway = Gateway()
mailer = Mailer()
if Services is not None:
    try:
        services = Services(gateway=gateway, mailer=mailer, clock=clock)
    except BaseException:
        Services = None
if Services is None:
    import types
    services = types.SimpleNamespace(gateway=gateway, mailer=mailer, clock=clock)

results = []
for sc in payload["scenarios"]:
    oid = sc["order"]
    gateway.orders[oid] = State(sc["script"])
    clock.t += 3600.0
    start = clock.t
    clock.limit = start + 600.0
    error = None
    order = None
    try:
        order = Order(oid, sc["amount_cents"], "customer-%d@example.test" % oid)
        checkout(order, services)
    except Runaway as err:
        error = "runaway: " + str(err)
    except BaseException as err:
        error = type(err).__name__ + ": " + str(err)[:200]
    clock.limit = None
    st = gateway.orders[oid]
    results.append({
        "order": oid,
        "status": getattr(order, "status", None) if order is not None else None,
        "decline_code": getattr(order, "decline_code", None) if order is not None else None,
        "elapsed": clock.t - start,
        "captures": len(gateway.captures.get(oid, [])),
        "requests": st.requests,
        "early": st.early,
        "after_decline": st.after_decline,
        "error": error,
    })
for r in results:
    for k in ("status", "decline_code"):
        if r[k] is not None and not isinstance(r[k], str):
            r[k] = str(r[k])
real_stdout.write(payload["nonce"] + json.dumps({"results": results}) + "\n")
real_stdout.flush()
'''


def run_candidate():
    """Run every held-out order through the submission; returns (by order id, error text)."""
    nonce = "@@" + secrets.token_hex(8) + "@@"
    scenarios = [
        {"order": oid, "amount_cents": amount, "script": script}
        for group in SCENARIOS.values()
        for oid, amount, script in group
    ]
    launcher = os.environ["SPECGAP_CANDIDATE"]
    try:
        proc = subprocess.run(
            [launcher, "python3", "-c", DRIVER],
            input=json.dumps({"nonce": nonce, "scenarios": scenarios}),
            capture_output=True,
            text=True,
            timeout=CANDIDATE_TIMEOUT_SEC,
        )
    except subprocess.TimeoutExpired:
        return None, "checkout did not finish within %d s" % CANDIDATE_TIMEOUT_SEC
    for line in proc.stdout.splitlines():
        if line.startswith(nonce):
            data = json.loads(line[len(nonce):])
            if "import_error" in data:
                return None, "could not import the checkout: " + data["import_error"]
            return {r["order"]: r for r in data["results"]}, None
    tail = (proc.stderr or "").strip().splitlines()[-3:]
    return None, "checkout run ended without a result (exit %s): %s" % (proc.returncode, " | ".join(tail))


def fail(mode, measured, detail):
    return {"pass": False, "failure_mode": mode, "measured": measured, "detail": detail}


def ok(detail):
    return {"pass": True, "failure_mode": None, "measured": {}, "detail": detail}


def crashed(mode, order, error):
    return fail(mode, {"order": order, "error": error.split(":")[0]}, "order %s: %s" % (order, error))


def judge_charge_once(rs):
    for oid, _, _ in SCENARIOS["charge-once"]:
        r = rs[oid]
        if r["error"]:
            return crashed("checkout-error-after-lost-answer", oid, r["error"])
        if r["captures"] > 1:
            return fail("charged-twice", {"order": oid, "captures": r["captures"]},
                        "order %s was captured %d times" % (oid, r["captures"]))
        if r["captures"] == 1 and r["status"] not in ("paid", "pending"):
            return fail("charged-but-failed", {"order": oid, "status": r["status"]},
                        "order %s was captured but ended %s" % (oid, r["status"]))
    return ok("every order captured at most once, and captured orders completed")


def judge_retry_timeouts(rs):
    for oid, _, _ in SCENARIOS["retry-timeouts"]:
        r = rs[oid]
        if r["error"]:
            return crashed("checkout-error-after-timeout", oid, r["error"])
        if r["status"] != "paid" or r["captures"] != 1:
            return fail("timeout-ended-checkout", {"order": oid, "status": r["status"], "requests": r["requests"]},
                        "order %s ended %s after %d charge requests" % (oid, r["status"], r["requests"]))
    return ok("timed-out payments were retried and completed")


def judge_declines_final(rs):
    for oid, _, script in SCENARIOS["declines-final"]:
        r = rs[oid]
        code = script[0].split(":", 1)[1]
        if r["error"]:
            return crashed("checkout-error-on-decline", oid, r["error"])
        if r["after_decline"] > 0:
            return fail("decline-retried", {"order": oid, "code": code, "attempts": r["requests"]},
                        "order %s: %d charge requests after the decline" % (oid, r["after_decline"]))
        if r["status"] != "declined" or r["decline_code"] != code:
            return fail("decline-not-recorded", {"order": oid, "code": code, "status": r["status"]},
                        "order %s ended %s with decline code %r" % (oid, r["status"], r["decline_code"]))
    return ok("declines ended the checkout as declined with the issuer's code")


def judge_respect_busy_wait(rs):
    for oid, _, script in SCENARIOS["respect-busy-wait"]:
        r = rs[oid]
        wait = float(script[0].split(":", 1)[1])
        if r["error"]:
            return crashed("checkout-error-on-busy", oid, r["error"])
        if r["early"] > 0:
            return fail("busy-retried-early", {"order": oid, "early_requests": r["early"], "retry_after": wait},
                        "order %s: %d requests arrived inside the retry_after window" % (oid, r["early"]))
        if r["status"] != "paid" or r["captures"] != 1:
            return fail("busy-gave-up", {"order": oid, "status": r["status"], "retry_after": wait},
                        "order %s ended %s after a 429" % (oid, r["status"]))
    return ok("busy answers were waited out and the orders completed")


def judge_checkout_deadline(rs):
    for oid, _, _ in SCENARIOS["checkout-deadline"]:
        r = rs[oid]
        if r["error"]:
            return crashed("checkout-error-in-outage", oid, r["error"])
        seconds = round(r["elapsed"], 1)
        if r["elapsed"] > DEADLINE_SEC + 1e-9:
            return fail("deadline-exceeded", {"order": oid, "seconds": seconds, "deadline": DEADLINE_SEC},
                        "order %s: checkout took %.1f s" % (oid, seconds))
        settled = r["status"] == "pending" or (r["status"] == "paid" and r["captures"] == 1)
        if not settled:
            return fail("unresolved-marked-failed", {"order": oid, "status": r["status"], "seconds": seconds},
                        "order %s ended %s while its payment was unresolved" % (oid, r["status"]))
    return ok("unresolved payments stayed pending within the request deadline")


JUDGES = {
    "charge-once": (judge_charge_once, "checkout-error-after-lost-answer"),
    "retry-timeouts": (judge_retry_timeouts, "checkout-error-after-timeout"),
    "declines-final": (judge_declines_final, "checkout-error-on-decline"),
    "respect-busy-wait": (judge_respect_busy_wait, "checkout-error-on-busy"),
    "checkout-deadline": (judge_checkout_deadline, "checkout-error-in-outage"),
}


def main():
    results, error = run_candidate()
    report = {}
    for rid, (judge, crash_mode) in JUDGES.items():
        if results is None:
            first = SCENARIOS[rid][0][0]
            report[rid] = crashed(crash_mode, first, error)
        else:
            report[rid] = judge(results)
    out = os.path.join(os.environ["SPECGAP_OUT"], "result.json")
    with open(out, "w") as f:
        json.dump({"version": 1, "requirements": report}, f, indent=2, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
