"""confluent-kafka producers and consumers with Sluice's non-negotiable settings.

Every producer uses ``partitioner=murmur2_random`` (the Java and aiokafka partitioner: without it
one job's records land in different partitions depending on the client), ``acks=all`` and the
idempotent producer; the exceptions are :func:`request_producer`, the short-lived producer
of a client that sends requests (the CLI), and :func:`node_producer`, a node daemon's: see
there why they are not idempotent. Every ledger
reader uses ``isolation.level=read_committed``, because the shard scheduler writes each batch
of facts in one transaction.

Every client also gets the SASL/TLS settings of :mod:`streams.security` (the process's
``SLUICE_KAFKA_*`` configuration): a caller cannot forget them.
"""

from __future__ import annotations

from typing import Any

from streams.kafka_native import Consumer, Producer
from streams.security import librdkafka_config

__all__ = ["consumer", "node_producer", "producer", "ready_messages", "request_producer",
           "transactional_producer"]

_RECONNECT: dict[str, Any] = {"reconnect.backoff.ms": 1000,
                              "api.version.request.timeout.ms": 120_000}
"""While the broker is away, librdkafka at its default (100 ms) retried the connection of each
client every 50 ms, logging each refusal: a worker wrote about 230 lines a second (its
librdkafka clients about 120), a node daemon 20, during a broker outage (2026-12-06). At 1 s a
client retries twice a second, and reconnects at most about 1.5 s after the broker is back.

``api.version.request.timeout.ms``: a broker that stalls (SIGSTOP, a long GC pause, a frozen
VM) after accepting a connection leaves its first request, the ApiVersionRequest, unanswered;
at librdkafka's default (10 s) it times out and the connection is dropped with "ApiVersionRequest
failed … probably due to broker version < 0.10"; the next one asks again (from 0.10 on, any
``broker.version.fallback`` only means "ask": nothing of 0.10's protocol is kept). Waiting up
to 2 minutes for the answer, a stalled broker's answer comes when it resumes; a broker that is
gone closes or refuses the connection long before. This line came with the worker's shard
consumer left out of its group for good after a 40 s stall, but did not cause it: a metadata
answer listing no broker made librdkafka forget them all (confluentinc/librdkafka#5301), which
``agents.group_watch`` and the views' ``projections.broker_watch`` make up for."""

_BOUNDED_PREFETCH: dict[str, Any] = {
    "fetch.max.bytes": 1_048_588,
    "max.partition.fetch.bytes": 1_048_588,
    "queued.max.messages.kbytes": 4096,
    "fetch.queue.backoff.ms": 10,
}
"""What a consumer fetches ahead, bounded against gzip bombs (red team, 7 Dec 2026).

librdkafka inflates a gzip record batch whole, without any bound (``rd_gz_decompress``: its
zstd and lz4 readers are bounded by ``receive.message.max.bytes``, gzip is not), and
confluent-kafka copies each record's value into a Python ``bytes`` when ``consume`` returns
it. The broker's ``message.max.bytes`` (1 MiB) bounds only the compressed batch, so a 1 MiB
gzip batch of zeros is a ~1 GB record (deflate's ratio is at most about 1,030:1). At
librdkafka's defaults one fetch answer carries up to 50 MB (``fetch.max.bytes``), 1 MiB a
partition: six such batches waiting on the requests topic (a worker restarting, or paused)
were fetched and inflated together, then copied into Python together, ~12 GB.

Here one answer carries at most one batch of Kafka's largest (``message.max.bytes``: 1,048,588
with its overhead; never less, or a legitimate batch that large would stall its partition), so
it inflates to at most ~1 GB, and no further fetch is sent while 4 MiB or more (inflated) wait
in the consumer's queue: a consumer holds at most the answer it is reading from (copied into
Python) and the next one (~2 GB), however many bombs wait. ``fetch.queue.backoff.ms``: how long
a fetch waits once that queue is over its bound (librdkafka's 1 s would stall a reader of a
long ledger each time its queue filled). Sluice's producers compress nothing, so a legitimate
batch inflates to about its own size."""

_PRODUCER_BASE: dict[str, Any] = {
    **_RECONNECT,
    "partitioner": "murmur2_random",
    "acks": "all",
    "enable.idempotence": True,
    "linger.ms": 2,
}


def producer(bootstrap: str, **overrides: Any) -> Producer:
    """An idempotent producer (``acks=all``, murmur2)."""
    return Producer({"bootstrap.servers": bootstrap, **librdkafka_config(), **_PRODUCER_BASE,
                     **overrides})


def node_producer(bootstrap: str, **overrides: Any) -> Producer:
    """A node daemon's producer: ``acks=all``, murmur2, one request in flight, not idempotent.

    An idempotent producer can fail for good (librdkafka's fatal errors: a broker that lost
    what it had acknowledged answers ``OUT_OF_ORDER_SEQUENCE_NUMBER`` or ``UNKNOWN_PRODUCER_ID``
    with requests in flight): every send after it is refused, so the daemon's heartbeats and
    reports would stop, its node be declared DOWN and its runs fenced, for as long as the
    daemon lived. A daemon needs neither guarantee idempotence adds: each record carries its
    own identity (a heartbeat is superseded by the next; a report written twice is decided as
    a report of a run already ended; a registration is one request, sent again by its caller),
    and one request in flight keeps its records in order across retries."""
    return Producer({"bootstrap.servers": bootstrap, **librdkafka_config(), **_PRODUCER_BASE,
                     "enable.idempotence": False,
                     "max.in.flight.requests.per.connection": 1, **overrides})


def request_producer(bootstrap: str, **overrides: Any) -> Producer:
    """The producer of a client that sends a few requests and exits (``sluice submit``).

    Not idempotent, on purpose: an idempotent producer's first send waits for an
    ``InitProducerId`` round trip (with a fresh connection, about 0.5 s of a 0.8 s
    ``sluice submit``; without it the first send takes about 10 ms). What idempotence would
    add is already given: each request carries its own identity, so a duplicate that a
    retry might write is harmless (a ``SubmitJob`` whose SLUID the shard knows decides
    nothing; a repeated request id is refused as a replay and changes nothing), and the
    order of independent requests from one call is no part of the contract. ``acks=all``
    and murmur2 stay. No linger: a request is sent as soon as it is produced; Nagle off.
    """
    return Producer({"bootstrap.servers": bootstrap, **librdkafka_config(), **_PRODUCER_BASE,
                     "enable.idempotence": False, "linger.ms": 0,
                     "socket.nagle.disable": True, **overrides})


def transactional_producer(bootstrap: str, transactional_id: str, **overrides: Any) -> Producer:
    """A transactional producer; ``init_transactions`` fences any older owner of the same id."""
    return Producer(
        {
            "bootstrap.servers": bootstrap,
            **librdkafka_config(),
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
        **librdkafka_config(),
        **_RECONNECT,
        **_BOUNDED_PREFETCH,
        "group.id": group or "sluice-reader-unused",
        "isolation.level": "read_committed",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "enable.partition.eof": True,
    }
    config.update(overrides or {})
    return Consumer(config)


def ready_messages(reader: Consumer, max_messages: int, timeout_s: float) -> list[Any]:
    """Up to ``max_messages`` from ``reader``: waits at most ``timeout_s`` for the first one,
    then takes only what has already been fetched.

    ``Consumer.consume(n, timeout)`` returns when it holds ``n`` messages or when the
    timeout has passed, so on a quiet topic every message waits for the timeout (a reader
    of one fact at a time always lags by it); this one returns as soon as there is a message.

    The first is waited for with ``consume(1, timeout)``, not ``poll(timeout)``: both return
    the moment a message (or a rebalance callback) is there, but confluent-kafka's ``poll``
    wakes its thread every 200 ms while it waits (5 wake-ups a second on an idle topic,
    0.33 ms of CPU a second measured, against 1 and 0.11 ms for ``consume``: issue 17).
    """
    first = reader.consume(1, timeout_s)
    if not first:
        return []
    return [*first, *reader.consume(num_messages=max_messages - 1, timeout=0)]
