"""Replay a recorded sandbox scenario through the current checkout code.

    python3 -m shop.replay records/checkout-2024-06-14.json

Prints, per order, the gateway sandbox's log, the order's final status, the e-mails the
customer got and how long the storefront request took; then what the gateway captured
and what the overnight reconciliation did.
"""

import json
import sys

from shop.orders import Order
from shop.reconcile import reconcile
from shop.services import Services
from shop.sim import RecordingMailer, SandboxClock, SandboxGateway
from shop.storefront import REQUEST_DEADLINE_SEC, handle_checkout


def replay(path):
    try:
        with open(path) as f:
            record = json.load(f)
        record["orders"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        print(f"{path}: not a sandbox scenario ({type(err).__name__}); scenarios are records/checkout-*.json")
        return 1
    clock = SandboxClock()
    scenarios = {o["order"]: o["gateway"] for o in record["orders"]}
    gateway = SandboxGateway(scenarios, clock)
    mailer = RecordingMailer()
    services = Services(gateway=gateway, mailer=mailer, clock=clock)
    print(f"== {record['title']} ({record['night']}) ==")
    placed = []
    for spec in record["orders"]:
        order = Order(spec["order"], spec["amount_cents"], spec["email"])
        placed.append(order)
        clock.advance(60.0)
        start, seen, mails_before = clock.now(), len(gateway.events), len(mailer.sent)
        try:
            page = handle_checkout(order, services)
        except Exception as err:  # show the crash the customer would get as a 500 page
            page = f"500 Internal Server Error ({type(err).__name__}: {err})"
        took = clock.now() - start
        print(f"\norder {order.id}  {order.amount_cents / 100:.2f}  {order.email}")
        for at, _, text in gateway.events[seen:]:
            print(f"  +{at - start:5.1f}s  {text}")
        mails = ", ".join(t for _, t, _ in mailer.sent[mails_before:]) or "none"
        print(f"  order status: {order.status}   e-mails: {mails}")
        if took > REQUEST_DEADLINE_SEC:
            print(f"  storefront: load balancer sent its 504 page at {REQUEST_DEADLINE_SEC:.1f}s; checkout finished at {took:.1f}s")
        else:
            print(f"  storefront: answered after {took:.1f}s: {page}")
    print("\n== gateway captures ==")
    for order in placed:
        charges = gateway.captures.get(order.id, [])
        ids = ", ".join(c.id for c in charges) or "-"
        print(f"  order {order.id}: {len(charges)} captured ({ids}); order status {order.status}")
    print("\n== overnight reconciliation ==")
    gateway.recover()
    settled = reconcile(placed, services)
    if not settled:
        print("  nothing to settle")
    for order, outcome in settled:
        print(f"  order {order.id}: pending -> {outcome}")


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip())
        return 2
    return replay(argv[1]) or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
