"""The *client*: a confluent-kafka producer that records what was acknowledged where.

One record per produce request (no batching, no retries, one request in flight), so a
scenario's ``produce m2`` is exactly one append on the leader and its delivery report is
exactly the acknowledgement the model reasons about. Record id = key = value, so the
segment parser can name every record it finds on disk.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.db.names import PARTITION, TOPIC


@dataclass
class Delivery:
    record: str
    status: str = "pending"  # pending | acked | failed | refused | sent
    offset: int = -1
    error: str = ""


REFUSED_ERRORS = ("NOT_ENOUGH_REPLICAS",)


class Producer:
    """Produce single records with the scenario's acks; keep every delivery report."""

    def __init__(
        self, bootstrap: str, acks: str, timeout_ms: int = 8000, topic: str = TOPIC
    ) -> None:
        from confluent_kafka import Producer as KafkaProducer

        self.acks = acks
        self.topic = topic  # the run's test topic (a reused cluster's is new per run)
        self.deliveries: dict[str, Delivery] = {}
        self._p: Any = KafkaProducer(
            {
                "bootstrap.servers": bootstrap,
                "acks": {"all": "-1"}.get(acks, acks),
                "enable.idempotence": False,
                "retries": 0,
                "max.in.flight.requests.per.connection": 1,
                "linger.ms": 0,
                "batch.num.messages": 1,
                "compression.type": "none",
                "request.timeout.ms": timeout_ms,
                "message.timeout.ms": timeout_ms,
                "socket.timeout.ms": timeout_ms,
                "metadata.max.age.ms": 1000,
                "topic.metadata.refresh.interval.ms": 500,
                "api.version.request": True,
                "broker.version.fallback": "0.10.0",
                "reconnect.backoff.max.ms": 500,
                "log_level": 0,  # refused connections to dead brokers are expected here
            }
        )

    def send(self, record: str) -> Delivery:
        d = Delivery(record)
        self.deliveries[record] = d

        def report(err: Any, msg: Any) -> None:
            if err is not None:
                name = err.name() if hasattr(err, "name") else str(err)
                d.status = "refused" if name in REFUSED_ERRORS else "failed"
                d.error = name
            elif self.acks == "0":
                d.status = "sent"
                d.offset = msg.offset() if msg.offset() is not None else -1
            else:
                d.status = "acked"
                d.offset = msg.offset()

        self._p.produce(
            self.topic,
            key=record.encode(),
            value=record.encode(),
            partition=PARTITION,
            on_delivery=report,
        )
        self._p.poll(0)
        return d

    def leader_id(self) -> int:
        """The partition leader in this producer's freshly fetched metadata (-1: none)."""
        try:
            md = self._p.list_topics(self.topic, timeout=2.0)
            part = md.topics[self.topic].partitions.get(PARTITION)
            ok = part is not None and md.topics[self.topic].error is None
            return int(part.leader) if ok else -1
        except Exception:  # no answer is an observation too
            return -1

    def poll(self, timeout: float = 0.05) -> None:
        self._p.poll(timeout)

    def outstanding(self) -> int:
        return sum(1 for d in self.deliveries.values() if d.status == "pending")

    def close(self, timeout: float = 10.0) -> None:
        """Wait for outstanding reports (bounded); what never answers stays pending."""
        self._p.flush(timeout)
