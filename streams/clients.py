"""confluent-kafka producers and consumers with Sluice's non-negotiable settings.

Every producer uses ``partitioner=murmur2_random`` (the Java and aiokafka partitioner: without it
one job's records land in different partitions depending on the client), ``acks=all`` and the
idempotent producer. Every ledger reader uses ``isolation.level=read_committed``, because the
shard scheduler writes each batch of facts in one transaction.
"""

from __future__ import annotations

from typing import Any

from confluent_kafka import Consumer, Producer

__all__ = ["consumer", "producer", "transactional_producer"]

_PRODUCER_BASE: dict[str, Any] = {
    "partitioner": "murmur2_random",
    "acks": "all",
    "enable.idempotence": True,
    "linger.ms": 2,
}


def producer(bootstrap: str, **overrides: Any) -> Producer:
    """An idempotent producer (``acks=all``, murmur2)."""
    return Producer({"bootstrap.servers": bootstrap, **_PRODUCER_BASE, **overrides})


def transactional_producer(bootstrap: str, transactional_id: str, **overrides: Any) -> Producer:
    """A transactional producer; ``init_transactions`` fences any older owner of the same id."""
    return Producer(
        {
            "bootstrap.servers": bootstrap,
            **_PRODUCER_BASE,
            "transactional.id": transactional_id,
            "transaction.timeout.ms": 60000,
            **overrides,
        }
    )


def consumer(
    bootstrap: str, group: str | None = None, overrides: dict[str, Any] | None = None
) -> Consumer:
    """A read-committed consumer; without a group it is for ``assign()`` reads only.

    ``overrides`` take librdkafka's dotted names, e.g. ``{"isolation.level": "read_uncommitted"}``.
    """
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group or "sluice-reader-unused",
        "isolation.level": "read_committed",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "enable.partition.eof": True,
    }
    config.update(overrides or {})
    return Consumer(config)
