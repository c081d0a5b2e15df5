"""Orders and their payment state.

Status values:
  new       created, payment not attempted yet
  paid      payment captured; `charge_id` names the gateway charge
  declined  the card issuer refused; `decline_code` holds the issuer's reason
  failed    no payment was taken; the basket is released back to stock
  pending   the payment outcome is not known yet; `shop.reconcile` settles it overnight
"""

NEW = "new"
PAID = "paid"
DECLINED = "declined"
FAILED = "failed"
PENDING = "pending"


class Order:
    """One customer order. Amounts are in cents."""

    def __init__(self, order_id, amount_cents, email):
        self.id = order_id
        self.amount_cents = amount_cents
        self.email = email
        self.status = NEW
        self.charge_id = None
        self.decline_code = None
        self.payment_key = None
        self.note = ""

    def mark_paid(self, charge_id):
        self.status = PAID
        self.charge_id = charge_id

    def mark_declined(self, code):
        self.status = DECLINED
        self.decline_code = code

    def mark_failed(self, reason):
        self.status = FAILED
        self.note = reason

    def mark_pending(self, reason):
        self.status = PENDING
        self.note = reason

    def __repr__(self):
        return f"Order({self.id}, {self.amount_cents}, status={self.status})"
