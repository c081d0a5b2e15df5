"""Overnight job: settle orders whose payment outcome was left open during the day."""

from shop import orders


def reconcile(open_orders, services):
    """Look up the charge of every pending order and settle it. Returns (order, outcome) pairs."""
    settled = []
    for order in open_orders:
        if order.status != orders.PENDING:
            continue
        charge = services.gateway.find_charge(order.payment_key) if order.payment_key else None
        if charge is not None:
            order.mark_paid(charge.id)
            services.mailer.send(order.email, "order_confirmed", order_id=order.id)
            settled.append((order, "paid"))
        else:
            order.mark_failed("no payment found overnight")
            services.mailer.send(order.email, "payment_failed", order_id=order.id)
            settled.append((order, "failed"))
    return settled
