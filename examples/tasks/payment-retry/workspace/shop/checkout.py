"""Take payment for an order and tell the customer how it went."""

from shop.gateway import GatewayError


def checkout(order, services):
    """Charge `order` through `services.gateway` and record the outcome on the order."""
    try:
        charge = services.gateway.charge(order.id, order.amount_cents)
    except GatewayError as err:
        order.mark_failed(str(err))
        services.mailer.send(order.email, "payment_failed", order_id=order.id)
        return order
    order.mark_paid(charge.id)
    services.mailer.send(order.email, "order_confirmed", order_id=order.id)
    return order
