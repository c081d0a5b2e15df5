"""Client interface for the Paylane card gateway.

This module mirrors the vendor's SDK; keep it in step with their releases rather than
editing it here. Every call can raise one of the errors below. `HttpGateway` is the
production client; `shop.sim.SandboxGateway` plays the vendor's sandbox scenarios through
the same interface (see `python3 -m shop.replay`).
"""

from __future__ import annotations

from dataclasses import dataclass

#: Seconds the client waits for an answer before it gives up on a request.
GATEWAY_TIMEOUT_SEC = 8.0


class GatewayError(Exception):
    """Base class of every error the gateway client raises."""


class GatewayTimeout(GatewayError):
    """No answer arrived within GATEWAY_TIMEOUT_SEC.

    The client cannot tell what happened on the other side: the request may never have
    arrived, or the gateway may have processed it and its answer got lost on the way back.
    """


class GatewayBusy(GatewayError):
    """HTTP 429: the gateway is shedding load.

    `retry_after` is how many seconds the gateway wants the client to leave before its next
    request for the same order; a request that arrives sooner gets another 429.
    """

    def __init__(self, retry_after: float):
        super().__init__(f"gateway busy, retry after {float(retry_after):.1f}s")
        self.retry_after = float(retry_after)


class CardDeclined(GatewayError):
    """The card issuer refused the charge. `code` is the issuer's reason code."""

    def __init__(self, code: str):
        super().__init__(f"card declined: {code}")
        self.code = code


@dataclass(frozen=True)
class Charge:
    """A payment the gateway has captured."""

    id: str
    order_id: int
    amount_cents: int
    idempotency_key: str | None = None


class Gateway:
    """What the shop uses from the gateway."""

    def charge(self, order_id: int, amount_cents: int, idempotency_key: str | None = None) -> Charge:
        """Capture `amount_cents` for `order_id` and return the Charge.

        `idempotency_key` is an optional string the caller chooses. The gateway remembers
        keys for 24 hours: a request whose key it has already captured under gets that
        earlier Charge back, and no money moves a second time. Reusing a key for another
        order or another amount is refused with GatewayError.
        """
        raise NotImplementedError

    def find_charge(self, idempotency_key: str) -> Charge | None:
        """The Charge captured under `idempotency_key`, or None when there is none."""
        raise NotImplementedError


class HttpGateway(Gateway):
    """Production client. Credentials and network access come from the deployment."""

    def __init__(self, base_url: str, api_key: str):
        self.base_url = base_url
        self.api_key = api_key

    def charge(self, order_id, amount_cents, idempotency_key=None):
        raise GatewayError("HttpGateway needs the production network")

    def find_charge(self, idempotency_key):
        raise GatewayError("HttpGateway needs the production network")
