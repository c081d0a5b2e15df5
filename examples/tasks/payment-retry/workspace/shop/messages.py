"""Customer e-mail templates, keyed by the name checkout code passes to the mailer."""

TEMPLATES = {
    "order_confirmed": "Thank you! Order {order_id} is confirmed and on its way to the kitchen.",
    "payment_failed": "We could not take your payment for order {order_id}. Please try again.",
    "card_declined": "Your bank declined the card for order {order_id} ({code}). Please use another card.",
    "payment_processing": "We are confirming the payment for order {order_id} and will e-mail you shortly.",
}


def render(template, **fields):
    return TEMPLATES[template].format(**fields)
