"""Topic creation at start-up: idempotent, and loud when an existing topic does not fit."""

from __future__ import annotations

import logging
import time

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from streams.security import librdkafka_config
from streams.topics import TopicSpec

__all__ = [
    "BrokerProbe",
    "TopicMismatchError",
    "broker_count",
    "durability_config",
    "effective_replication",
    "ensure_topics",
    "wait_for_broker",
]

log = logging.getLogger(__name__)
_NOT_OURS = (KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED)


class TopicMismatchError(RuntimeError):
    """An existing topic has a different partition count than the catalogue says."""


def wait_for_broker(bootstrap: str, timeout_s: float = 60.0, quiet: bool = False) -> None:
    """Block until ``bootstrap`` answers a metadata request; raise TimeoutError if it never does.

    ``quiet`` silences librdkafka's connection-refused lines (for a probe that expects them).
    """
    config: dict[str, str | int | float | bool] = {
        "bootstrap.servers": bootstrap, **librdkafka_config()}
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


def broker_answers(bootstrap: str, timeout_s: float) -> bool:
    """Whether a new client at ``bootstrap`` is answered within ``timeout_s`` (a metadata
    request; librdkafka's refusal lines silenced)."""
    try:
        wait_for_broker(bootstrap, timeout_s=timeout_s, quiet=True)
    except TimeoutError:
        return False
    return True


class BrokerProbe:
    """Asks the broker for metadata again and again with ONE client, kept while it is answered.

    :func:`broker_answers` builds a client for every question; asked every few seconds over
    SASL_SSL that is a TLS handshake and a SCRAM exchange each time (the idle views spent ~60 ms
    of CPU a probe on it: four times their PLAINTEXT cost, docs/benchmarks.md). A kept client
    costs its librdkafka threads' one-second timers. When it is not answered it is dropped and
    the next question goes to a new client, so a client that librdkafka left with no broker
    (confluentinc/librdkafka#5301, ``agents.group_watch``) is never taken for a broker that is
    away: an unanswered probe is immediately followed by a new client's (the callers ask again
    at once after no answer)."""

    def __init__(self, bootstrap: str) -> None:
        self._config: dict[str, str | int | float | bool] = {
            "bootstrap.servers": bootstrap, **librdkafka_config(), "log_level": 0}
        self._client: AdminClient | None = None

    def __call__(self, timeout_s: float) -> bool:
        """Whether the broker answered a metadata request within ``timeout_s``."""
        if self._client is None:
            self._client = AdminClient(self._config)
        try:
            if self._client.list_topics(timeout=timeout_s).brokers:
                return True
        except KafkaException:
            pass
        self._client = None  # the next question goes to a new client
        return False


def broker_count(bootstrap: str, timeout_s: float = 10.0) -> int:
    """How many brokers the cluster at ``bootstrap`` has (from a metadata request)."""
    admin = AdminClient({"bootstrap.servers": bootstrap, **librdkafka_config()})
    return len(admin.list_topics(timeout=timeout_s).brokers)


def effective_replication(bootstrap: str, requested: int) -> int:
    """``requested`` if set (> 0), else ``min(3, brokers)``: durable by default on a cluster."""
    if requested > 0:
        return requested
    return max(1, min(3, broker_count(bootstrap)))


def durability_config(replication: int) -> dict[str, str]:
    """Topic settings that make ``acks=all`` mean what it says.

    With three or more replicas a write needs two in-sync copies (``min.insync.replicas=2``), so
    one broker can fail without losing an acknowledged record or refusing writes; an out-of-sync
    replica never becomes leader (``unclean.leader.election.enable=false``) whatever the count.
    """
    return {
        "min.insync.replicas": "2" if replication >= 3 else "1",
        "unclean.leader.election.enable": "false",
    }


def ensure_topics(bootstrap: str, specs: list[TopicSpec], replication: int = 0) -> list[str]:
    """Create the topics that do not exist yet; return the names created.

    ``replication`` 0 means ``min(3, brokers)``; new topics get :func:`durability_config`.
    Existing topics are checked for their partition count: faust's co-partitioning and the
    shard-to-partition mapping both break silently if it changed, so a mismatch raises.
    """
    replication = effective_replication(bootstrap, replication)
    admin = AdminClient({"bootstrap.servers": bootstrap, **librdkafka_config()})
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
            NewTopic(
                s.name, s.partitions, replication,
                config={**durability_config(replication), **s.config_dict()},
            )
            for s in missing
        ],
        operation_timeout=30,
    )
    created, refused = [], []
    for name, future in futures.items():
        try:
            future.result()
            created.append(name)
        except KafkaException as exc:
            code = exc.args[0].code()
            if code in _NOT_OURS:
                refused.append(name)
            elif code != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
    if refused:
        # A secured cluster (docs/security.md): a principal sees only the topics its ACLs name
        # and may create none; the topics are an administrator's (sluice up --secure makes them).
        log.info("not allowed to create %s (ACLs): left to the administrator", sorted(refused))
    _wait_for_leaders(admin, [s.name for s in missing if s.name not in refused])
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
