"""Readiness of a Kafka bootstrap address, checked the way a client will use it.

Ready means, in order: the AdminClient lists at least ``brokers`` brokers, then a probe topic
(replication ``min(3, brokers)``) can be created and deleted. Listing alone is not enough: a
KRaft broker answers metadata requests before it can host partitions.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from ._errors import BrokerNotReadyError

DeathCheck = Callable[[], str | None]
"""Called between polls; returns why a node has died (stops the wait at once), or None."""

_POLL_S = 0.2
_REQUEST_TIMEOUT_S = 5.0


Client = dict[str, str] | None
"""Extra librdkafka settings (SASL/TLS of a secured cluster), or None for PLAINTEXT."""


def admin_client(bootstrap: str, client: Client = None) -> AdminClient:
    """A quiet AdminClient that reconnects quickly (librdkafka backs off up to 10 s otherwise)."""
    return AdminClient(
        {
            "bootstrap.servers": bootstrap,
            **(client or {}),
            "reconnect.backoff.ms": 50,
            "reconnect.backoff.max.ms": 500,
            "socket.connection.setup.timeout.ms": 2000,
            "log_level": 0,  # "connection refused" while the broker boots is expected
        }
    )


def _broker_ids(admin: AdminClient) -> set[int]:
    try:
        return set(admin.list_topics(timeout=1.0).brokers)
    except KafkaException:
        return set()


def _probe_topic(admin: AdminClient, replication: int) -> str | None:
    """Create and delete a throw-away topic; the error text, or None when both worked."""
    name = f"sluice-probe-{uuid.uuid4().hex[:12]}"
    try:
        admin.create_topics([NewTopic(name, 1, replication)])[name].result(_REQUEST_TIMEOUT_S)
        admin.delete_topics([name])[name].result(_REQUEST_TIMEOUT_S)
    except (KafkaException, TimeoutError) as exc:
        return str(exc)
    return None


def wait_for_bootstrap(
    bootstrap: str,
    timeout: float = 60.0,
    *,
    brokers: int = 1,
    probe: bool = True,
    died: DeathCheck | None = None,
    node_ids: set[int] | None = None,
    client: Client = None,
) -> float:
    """Block until ``bootstrap`` is ready (see module doc); return the seconds it took.

    ``node_ids``, if given, must all be listed (used after restarting one node). Raises
    ``BrokerNotReadyError`` on timeout; an error from ``died`` is raised the same way at once.
    """
    started = time.monotonic()
    deadline = started + timeout
    admin = admin_client(bootstrap, client)
    last = "no broker listed yet"
    while time.monotonic() < deadline:
        if died is not None and (why := died()):
            raise BrokerNotReadyError(why)
        listed = _broker_ids(admin)
        wanted = node_ids or set()
        if len(listed) >= brokers and wanted <= listed:
            error = _probe_topic(admin, min(3, brokers)) if probe else None
            if error is None:
                return time.monotonic() - started
            last = f"probe topic failed: {error}"
        else:
            last = f"brokers listed: {sorted(listed)}, want {brokers} incl. {sorted(wanted)}"
        time.sleep(_POLL_S)
    raise BrokerNotReadyError(f"{bootstrap} not ready after {timeout:.0f}s ({last})")


def warm_up(bootstrap: str, timeout: float = 60.0, client: Client = None) -> float:
    """Create ``__consumer_offsets`` and ``__transaction_state`` now; return the seconds it took.

    Both are made on first use, which otherwise costs the first consumer group (a
    ``COORDINATOR_NOT_AVAILABLE`` round that aiokafka logs as an error) and the first
    transactional producer a few seconds. About 1 s here, paid once per fresh data dir.
    """
    started = time.monotonic()
    deadline = started + timeout
    admin = admin_client(bootstrap, client)
    while True:
        try:
            admin.describe_consumer_groups(["sluice-warm-up"])["sluice-warm-up"].result(5.0)
            break
        except (KafkaException, TimeoutError) as exc:
            if time.monotonic() >= deadline:
                raise BrokerNotReadyError(f"group coordinator not available: {exc}") from exc
            time.sleep(_POLL_S)
    producer = Producer({
        "bootstrap.servers": bootstrap,
        **(client or {}),
        "transactional.id": f"sluice-warm-up-{uuid.uuid4().hex}",
        "log_level": 0,
    })
    try:
        producer.init_transactions(max(1.0, deadline - time.monotonic()))
    except KafkaException as exc:
        raise BrokerNotReadyError(f"transaction coordinator not available: {exc}") from exc
    return time.monotonic() - started


def wait_in_sync(bootstrap: str, timeout: float = 60.0, client: Client = None) -> None:
    """Block until every partition's ISR equals its replica set (after a node came back)."""
    deadline = time.monotonic() + timeout
    admin = admin_client(bootstrap, client)
    lagging: list[str] = ["metadata not fetched"]
    while time.monotonic() < deadline:
        try:
            metadata = admin.list_topics(timeout=_REQUEST_TIMEOUT_S)
        except KafkaException as exc:
            lagging = [str(exc)]
        else:
            lagging = [
                f"{topic.topic}[{part.id}] isr={sorted(part.isrs)} replicas={sorted(part.replicas)}"
                for topic in metadata.topics.values()
                for part in topic.partitions.values()
                if sorted(part.isrs) != sorted(part.replicas)
            ]
            if not lagging:
                return
        time.sleep(_POLL_S)
    raise BrokerNotReadyError(f"partitions not in sync after {timeout:.0f}s: {lagging[:5]}")
