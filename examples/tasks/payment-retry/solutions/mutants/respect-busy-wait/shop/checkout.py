"""Take payment for an order and tell the customer how it went.

A timed-out charge request may still have been captured, so every request for an order
carries the same idempotency key: a retry then returns the earlier charge instead of
capturing a second one. Attempts stop while there is still time to answer the customer
inside the load balancer's deadline; an order whose payment is still unknown then stays
pending for the overnight reconciliation, which looks the charge up by that key.
"""

from shop.gateway import GATEWAY_TIMEOUT_SEC, CardDeclined, GatewayBusy, GatewayError, GatewayTimeout
from shop.storefront import REQUEST_DEADLINE_SEC

MAX_ATTEMPTS = 4


def payment_key(order):
    """One idempotency key per order, the same on every attempt."""
    return f"kc-order-{order.id}"


def checkout(order, services):
    """Charge `order` through `services.gateway` and record the outcome on the order."""
    clock = services.clock
    started = clock.now()
    key = payment_key(order)
    order.payment_key = key

    def time_left():
        return REQUEST_DEADLINE_SEC - (clock.now() - started)

    for _ in range(MAX_ATTEMPTS):
        if time_left() < GATEWAY_TIMEOUT_SEC:
            break
        try:
            charge = services.gateway.charge(order.id, order.amount_cents, idempotency_key=key)
        except GatewayTimeout:
            continue
        except GatewayBusy as busy:
            if time_left() - busy.retry_after < GATEWAY_TIMEOUT_SEC:
                break
            continue
        except CardDeclined as declined:
            order.mark_declined(declined.code)
            services.mailer.send(order.email, "card_declined", order_id=order.id, code=declined.code)
            return order
        except GatewayError as err:
            order.mark_failed(str(err))
            services.mailer.send(order.email, "payment_failed", order_id=order.id)
            return order
        order.mark_paid(charge.id)
        services.mailer.send(order.email, "order_confirmed", order_id=order.id)
        return order
    order.mark_pending("payment outcome unknown when the request deadline came")
    services.mailer.send(order.email, "payment_processing", order_id=order.id)
    return order
