"""Take payment for an order and tell the customer how it went."""

from shop.gateway import GatewayError

MAX_TRIES = 3


def checkout(order, services):
    """Charge `order` through `services.gateway`, trying again when the call fails."""
    for attempt in range(1, MAX_TRIES + 1):
        try:
            charge = services.gateway.charge(order.id, order.amount_cents)
        except GatewayError as err:
            if attempt < MAX_TRIES:
                continue
            order.mark_failed(str(err))
            services.mailer.send(order.email, "payment_failed", order_id=order.id)
            return order
        break
    order.mark_paid(charge.id)
    services.mailer.send(order.email, "order_confirmed", order_id=order.id)
    return order
