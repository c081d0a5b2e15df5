"""The gateway vendor's sandbox, for replaying recorded scenarios offline.

A scenario lists, per order, how the sandbox answers that order's successive charge
requests. Tokens:

  ok                     capture and answer normally
  no-reply               the request never reaches the gateway; the client times out
  captured-no-reply      the gateway captures, but its answer is lost; the client times out
  busy:<seconds>         answer 429 with that retry_after
  decline:<code>         the issuer declines with that reason code
  unreachable            from here on nothing for this order gets an answer

The last token repeats once a list runs out. Time is simulated: `SandboxClock` only moves
when the sandbox spends time answering or the caller sleeps.
"""

from shop.gateway import (
    GATEWAY_TIMEOUT_SEC,
    CardDeclined,
    Charge,
    Gateway,
    GatewayBusy,
    GatewayError,
    GatewayTimeout,
)

ANSWER_SEC = 1.0
BUSY_ANSWER_SEC = 0.5
RISK_HOLD_AFTER = 3


class SandboxClock:
    def __init__(self):
        self.t = 0.0

    def now(self):
        return self.t

    def sleep(self, seconds):
        if seconds > 0:
            self.t += float(seconds)

    def advance(self, seconds):
        self.t += seconds


class _OrderState:
    def __init__(self, script):
        self.script = list(script) or ["ok"]
        self.next = 0
        self.not_before = 0.0
        self.unreachable = False
        self.declines = 0
        self.requests = 0

    def take(self):
        token = self.script[min(self.next, len(self.script) - 1)]
        self.next += 1
        return token


class SandboxGateway(Gateway):
    """Answers charge requests from a scenario; keeps the gateway's own log in `events`."""

    def __init__(self, scenarios, clock, first_charge=1001):
        self.clock = clock
        self.orders = {int(k): _OrderState(v) for k, v in scenarios.items()}
        self.by_key = {}
        self.key_order = {}
        self.captures = {}
        self.events = []
        self._serial = first_charge

    def _log(self, order_id, text):
        self.events.append((self.clock.now(), order_id, text))

    def _capture(self, order_id, amount_cents, key):
        charge = Charge(f"ch_{self._serial}", order_id, amount_cents, key)
        self._serial += 1
        self.captures.setdefault(order_id, []).append(charge)
        if key is not None:
            self.by_key[key] = charge
        return charge

    def charge(self, order_id, amount_cents, idempotency_key=None):
        state = self.orders.setdefault(order_id, _OrderState(["ok"]))
        state.requests += 1
        key = idempotency_key
        self._log(order_id, f"charge request {state.requests} (" + (f"key {key}" if key else "no idempotency key") + ")")
        if state.unreachable:
            self.clock.advance(GATEWAY_TIMEOUT_SEC)
            self._log(order_id, f"no answer (gateway unreachable); client timed out after {GATEWAY_TIMEOUT_SEC:.1f}s")
            raise GatewayTimeout("no answer from gateway")
        if self.clock.now() < state.not_before:
            early = state.not_before - self.clock.now()
            self.clock.advance(BUSY_ANSWER_SEC)
            self._log(order_id, f"429 busy: request arrived {early:.1f}s before the retry_after window ended")
            raise GatewayBusy(max(state.not_before - self.clock.now(), 0.0))
        earlier = self.by_key.get(key) if key is not None else None
        if key is not None:
            owner = self.key_order.setdefault(key, (order_id, amount_cents))
            if owner != (order_id, amount_cents):
                self.clock.advance(ANSWER_SEC)
                self._log(order_id, f"refused: key {key} already used for another request")
                raise GatewayError("idempotency key reused with different parameters")
        token = state.take()
        if token == "ok":
            self.clock.advance(ANSWER_SEC)
            if earlier is not None:
                self._log(order_id, f"returned earlier charge {earlier.id} for key {key}; nothing captured")
                return earlier
            charge = self._capture(order_id, amount_cents, key)
            self._log(order_id, f"captured {charge.id} ({amount_cents / 100:.2f})")
            return charge
        if token == "no-reply":
            self.clock.advance(GATEWAY_TIMEOUT_SEC)
            self._log(order_id, f"request never reached the gateway; client timed out after {GATEWAY_TIMEOUT_SEC:.1f}s")
            raise GatewayTimeout("no answer from gateway")
        if token == "captured-no-reply":
            self.clock.advance(GATEWAY_TIMEOUT_SEC)
            if earlier is None:
                charge = self._capture(order_id, amount_cents, key)
                self._log(order_id, f"captured {charge.id} ({amount_cents / 100:.2f}); answer lost, client timed out after {GATEWAY_TIMEOUT_SEC:.1f}s")
            else:
                self._log(order_id, f"matched earlier charge {earlier.id}; answer lost, client timed out after {GATEWAY_TIMEOUT_SEC:.1f}s")
            raise GatewayTimeout("no answer from gateway")
        if token.startswith("busy:"):
            wait = float(token.split(":", 1)[1])
            self.clock.advance(BUSY_ANSWER_SEC)
            state.not_before = self.clock.now() + wait
            self._log(order_id, f"429 busy, retry_after={wait:.1f}s")
            raise GatewayBusy(wait)
        if token.startswith("decline:"):
            code = token.split(":", 1)[1]
            self.clock.advance(ANSWER_SEC)
            state.declines += 1
            self._log(order_id, f"declined by issuer: {code}")
            if state.declines == RISK_HOLD_AFTER:
                self._log(order_id, f"issuer put a risk hold on the card after {RISK_HOLD_AFTER} declined attempts")
            raise CardDeclined(code)
        if token == "unreachable":
            state.unreachable = True
            self.clock.advance(GATEWAY_TIMEOUT_SEC)
            self._log(order_id, f"no answer (gateway unreachable); client timed out after {GATEWAY_TIMEOUT_SEC:.1f}s")
            raise GatewayTimeout("no answer from gateway")
        raise ValueError(f"unknown sandbox token {token!r}")

    def find_charge(self, idempotency_key):
        owner = self.key_order.get(idempotency_key)
        if owner is not None and self.orders[owner[0]].unreachable:
            self.clock.advance(GATEWAY_TIMEOUT_SEC)
            self._log(owner[0], f"lookup of key {idempotency_key}: no answer; client timed out after {GATEWAY_TIMEOUT_SEC:.1f}s")
            raise GatewayTimeout("no answer from gateway")
        self.clock.advance(ANSWER_SEC)
        charge = self.by_key.get(idempotency_key)
        self._log(owner[0] if owner else None, f"lookup of key {idempotency_key}: " + (charge.id if charge else "nothing captured"))
        return charge

    def recover(self):
        """The next morning: the gateway answers everything again."""
        for state in self.orders.values():
            state.unreachable = False


class RecordingMailer:
    def __init__(self):
        self.sent = []

    def send(self, to, template, **fields):
        self.sent.append((to, template, fields))
