"""What checkout code gets to talk to: the gateway, the mailer and a clock."""

import time
from dataclasses import dataclass

from shop.messages import render


class SystemClock:
    """Wall-clock time in seconds; `sleep` blocks the calling request."""

    def now(self):
        return time.monotonic()

    def sleep(self, seconds):
        time.sleep(seconds)


class OutboxMailer:
    """Queues customer e-mails; the mail relay sends the outbox every minute."""

    def __init__(self):
        self.outbox = []

    def send(self, to, template, **fields):
        self.outbox.append((to, template, render(template, **fields)))


@dataclass
class Services:
    gateway: object
    mailer: object
    clock: object
