"""Topic creation at start-up: idempotent, and loud when an existing topic does not fit."""

from __future__ import annotations

import time

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from streams.topics import TopicSpec

__all__ = ["TopicMismatchError", "ensure_topics", "wait_for_broker"]


class TopicMismatchError(RuntimeError):
    """An existing topic has a different partition count than the catalogue says."""


def wait_for_broker(bootstrap: str, timeout_s: float = 60.0, quiet: bool = False) -> None:
    """Block until ``bootstrap`` answers a metadata request; raise TimeoutError if it never does.

    ``quiet`` silences librdkafka's connection-refused lines (for a probe that expects them).
    """
    config: dict[str, str | int | float | bool] = {"bootstrap.servers": bootstrap}
    if quiet:
        config["log_level"] = 0
    admin = AdminClient(config)
    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            if admin.list_topics(timeout=2).brokers:
                return
        except KafkaException as exc:
            last = exc
        time.sleep(0.2)
    raise TimeoutError(f"no Kafka broker answered at {bootstrap} within {timeout_s:.0f} s: {last}")


def ensure_topics(bootstrap: str, specs: list[TopicSpec], replication: int = 1) -> list[str]:
    """Create the topics that do not exist yet; return the names created.

    Existing topics are checked for their partition count: faust's co-partitioning and the
    shard-to-partition mapping both break silently if it changed, so a mismatch raises.
    """
    admin = AdminClient({"bootstrap.servers": bootstrap})
    existing = admin.list_topics(timeout=10).topics
    for spec in specs:
        found = existing.get(spec.name)
        if found is not None and len(found.partitions) != spec.partitions:
            raise TopicMismatchError(
                f"topic {spec.name} has {len(found.partitions)} partitions, "
                f"the catalogue says {spec.partitions}"
            )
    missing = [spec for spec in specs if spec.name not in existing]
    if not missing:
        return []
    futures = admin.create_topics(
        [
            NewTopic(s.name, s.partitions, replication, config=s.config_dict())
            for s in missing
        ],
        operation_timeout=30,
    )
    created = []
    for name, future in futures.items():
        try:
            future.result()
            created.append(name)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
    _wait_for_leaders(admin, [s.name for s in missing])
    return sorted(created)


def _wait_for_leaders(admin: AdminClient, names: list[str], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        topics = admin.list_topics(timeout=5).topics
        ready = all(
            name in topics
            and topics[name].partitions
            and all(p.leader >= 0 for p in topics[name].partitions.values())
            for name in names
        )
        if ready:
            return
        time.sleep(0.1)
    raise TimeoutError(f"topics {names} got no leaders within {timeout_s:.0f} s")
