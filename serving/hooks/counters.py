"""The receiver's Prometheus counters (its own registry): deliveries by outcome, on its GET /metrics."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, generate_latest

# Every answer the receiver gives a delivery, one word each; all start at 0 so a scrape shows them.
OUTCOMES = ("accepted", "ignored", "replayed", "forged", "unsigned", "unknown_source", "too_large", "invalid")


class HookCounters:
    """Deliveries by outcome (the source is left out: an unknown source's name is the sender's choice)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.deliveries = Counter(
            "secrag_hook_deliveries", "Webhook deliveries by outcome", ["outcome"], registry=self.registry
        )
        for outcome in OUTCOMES:
            self.deliveries.labels(outcome=outcome)

    def count(self, outcome: str) -> None:
        self.deliveries.labels(outcome=outcome).inc()

    def scrape(self) -> bytes:
        return generate_latest(self.registry)
