"""The storefront's checkout endpoint: runs checkout and renders the page the customer sees."""

from shop import orders

# The load balancer in front of the storefront gives each customer request this many
# seconds. When a request runs longer it closes the connection and the customer gets the
# load balancer's own "504 Gateway Time-out" page instead of ours.
REQUEST_DEADLINE_SEC = 20.0

PAGES = {
    orders.PAID: "Thanks! Your order is confirmed.",
    orders.DECLINED: "Your bank declined this card. Please try another card.",
    orders.FAILED: "We could not take your payment. Please try again.",
    orders.PENDING: "We are confirming your payment and will e-mail you shortly.",
}


def handle_checkout(order, services):
    from shop.checkout import checkout  # late import keeps this module light to import

    checkout(order, services)
    return PAGES.get(order.status, "Something went wrong.")
