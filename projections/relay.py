"""``POST /v1/requests``: a client's request produced by the API's warm producer, answered
with the decision about it in the same HTTP exchange.

A short-lived client (``sluice submit``) pays more for its own Kafka producer (importing the
client library, connecting, the metadata request) than the system takes to decide. The relay
lets it hand over the request exactly as it would have produced it instead:

- the body (``Content-Length`` required; with the key at most ``SLUICE_MAX_REQUEST_BYTES``):
  the encoded request value, in Avro single-object encoding (``C3 01``…);
- ``Sluice-Key``: the record key, the request's subject SLUID (ASCII);
- ``Sluice-Request-Id``, ``Sluice-Auth``: the ``sluice-request-id`` / ``sluice-auth`` Kafka
  headers (optional here: the intake decides what a missing one means);
- ``?wait=S[&array=1]``: for a ``SubmitJob`` (or a ``TestSubmitJob``, sbatch --test-only, or
  a ``PlanStarts``, squeue --start),
  hold the answer until the decision is folded, as ``GET /v1/decisions`` does (at most 60 s),
  the decision about this submission: the one carrying the record's nonce
  (``SubmitJob.nonce``), not another's under the same SLUID.

The relay produces the value, key and those two headers (no other) to ``<prefix>.requests``
with the same partitioner as every client (murmur2 of the key), waits until the broker has
the record, then waits for the decision (:func:`projections.decisions.decisions`) and answers
``{"sent": {"partition": p, "offset": o}, "decisions": {sluid: decision | null}}``.

It adds no trust. It never decodes the credential (a MUNGE credential decodes once: the intake
must be the one to decode it); the intake checks it against the bytes as for any other
producer, and a refused credential comes back as a ``{"denial": …}`` decision. Bad input
(no key, a body that is not a Sluice request, too large) is answered with a 4xx JSON
``{"error": …}`` and nothing is produced; a record the broker did not take is a 503.

Before producing, it refuses what costs the intake and the ledger for nothing
(``projections.relay_gate``): a credential bad on its face (none while ``AuthRequired`` is in
force, a malformed one, a JWT past its own ``exp``) is a ``401``
``{"error": …, "reason": <the intake's reason>}``, and a peer (local uid, or remote address)
past its budget a ``429`` with ``Retry-After``; neither is produced nor becomes a fact.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from projections.api_auth import Viewer
from projections.decisions import decisions
from projections.relay_gate import (
    Peer,
    PeerBudgets,
    budget_config,
    credential_refusal,
    relay_refusals,
    retry_after,
)
from projections.service import ProjectionService
from scheduler.records.names import REQUEST_NAMES
from schemas import DecodeError, decode
from streams.clients import producer as make_producer
from streams.settings import Settings
from streams.topics import Topics

__all__ = ["KEY_HEADER", "RelayRequest", "RequestRelay", "parse_relay"]

log = logging.getLogger(__name__)

KEY_HEADER = "Sluice-Key"
FORWARDED = {"Sluice-Request-Id": "sluice-request-id", "Sluice-Auth": "sluice-auth"}
"""The HTTP headers the relay passes on, and the Kafka header each becomes."""
DELIVERY_S = 30.0
"""How long the relay waits for the broker to confirm a record."""
_ANSWERED = frozenset({"SubmitJob", "TestSubmitJob", "PlanStarts", "PlanPriorities",
                       "PlanShares"})
"""The requests the relay answers with their decision (a test: its ``JobTestAnswered``; a
``squeue --start``: the shards' ``StartsPlanned``; an ``sprio``: their ``PrioritiesComputed``;
an ``sshare``: their ``SharesComputed``)."""
_IDLE_WAIT_S = 10.0
"""How long the relay's thread sleeps when no record is out before it serves librdkafka's
queue anyway (nothing is there but what a record's report would have brought in already)."""


@dataclass(frozen=True, slots=True)
class RelayRequest:
    """One request to produce, checked."""

    name: str
    key: bytes
    value: bytes
    headers: tuple[tuple[str, bytes], ...]
    nonce: int = 0  # a SubmitJob's (its client's answer is the decision with this nonce)


def parse_relay(headers: Mapping[str, str], body: bytes, limit: int,
                request_names: Callable[[str], bool]) -> RelayRequest | str:
    """The request an HTTP ``POST /v1/requests`` carries, or why it is refused (a 400's text).

    ``headers`` are the HTTP headers (any case), ``limit`` the largest key + value the intake
    accepts, ``request_names`` says whether a record name is a request.
    """
    lower = {k.lower(): v for k, v in headers.items()}
    key_text = lower.get(KEY_HEADER.lower(), "")
    if not key_text:
        return f"the {KEY_HEADER} header (the request's subject SLUID) is required"
    try:
        key = key_text.encode("ascii")
        forwarded = tuple((kafka, lower[http.lower()].encode("ascii"))
                          for http, kafka in FORWARDED.items() if http.lower() in lower)
    except UnicodeEncodeError:
        return f"the {KEY_HEADER}, Sluice-Request-Id and Sluice-Auth headers must be ASCII"
    if len(key) + len(body) > limit:
        return (f"the request is {len(key) + len(body)} bytes (key + value), more than the "
                f"limit of {limit} bytes (SLUICE_MAX_REQUEST_BYTES)")
    if body[:2] != b"\xc3\x01":
        return ("the body is not a Sluice record in single-object encoding (C3 01 …); "
                "Confluent-framed requests go to Kafka directly")
    try:
        name, record = decode(body)
    except DecodeError as exc:
        return f"the body is not a Sluice record: {exc}"
    if not request_names(name):
        return f"{name} is not a request"
    nonce = record.get("nonce", 0) if name in _ANSWERED else 0
    return RelayRequest(name, key, body, forwarded, nonce if type(nonce) is int else 0)


class _Delivery:
    """The broker's answer about one produced record."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.error = ""
        self.partition = -1
        self.offset = -1

    def __call__(self, err: Any, message: Any) -> None:
        if err is not None:
            self.error = str(err)
        else:
            self.partition, self.offset = message.partition(), message.offset()
        self.done.set()


class RequestRelay:
    """The route's handler: one long-lived idempotent producer, served by its own thread."""

    def __init__(self, service: ProjectionService, settings: Settings,
                 producer: Any = None, budgets: PeerBudgets | None = None) -> None:
        self.service = service
        self.budgets = budgets or PeerBudgets(budget_config(
            os.environ.get("SLUICE_RELAY_RATE_LIMIT", "")))
        self.refused = relay_refusals()
        self.limit = settings.max_request_bytes
        self.topic = Topics(settings).requests
        self._names = frozenset(REQUEST_NAMES)
        if producer is None:
            producer = make_producer(settings.bootstrap,
                                     **{"linger.ms": 0, "socket.nagle.disable": True})
        self.producer = producer
        self._stopping = threading.Event()
        self._sent = threading.Event()  # a record was produced: its report is to be served
        self._thread = threading.Thread(target=self._serve, name="relay-producer",
                                        daemon=True)

    @property
    def max_body(self) -> int:
        """The largest body the route reads (a larger one is refused unread)."""
        return self.limit

    def start(self) -> None:
        """Connect now (metadata of the requests topic), so the first request finds the
        producer warm; then serve its delivery reports."""
        self._thread.start()

    def stop(self) -> None:
        """Stop serving; records still queued get a few seconds to be delivered."""
        self._stopping.set()
        self._sent.set()
        self._thread.join(10)
        self.producer.flush(5)

    def _serve(self) -> None:
        """Serve the delivery reports while records are out; sleep while none is.

        confluent-kafka's ``Producer.poll(timeout)`` wakes its thread every 200 ms while it
        waits (5 wake-ups a second on an idle views process: issue 17), so the thread waits on
        ``_sent`` instead, which ``handle`` sets after each ``produce``, and polls only until
        the producer holds nothing more (``len``: records not yet acknowledged and reports not
        yet served). The event is cleared before the count is read: a record produced after
        the count was 0 sets it again."""
        try:
            self.producer.list_topics(self.topic, timeout=10)
        except Exception as exc:  # the broker may come later: produce() connects then
            log.warning("relay: no metadata for %s yet: %s", self.topic, exc)
        while not self._stopping.is_set():
            self._sent.wait(_IDLE_WAIT_S)
            self._sent.clear()
            self.producer.poll(0)  # anything else librdkafka queued meanwhile
            while len(self.producer) > 0 and not self._stopping.is_set():
                self.producer.poll(0.5)  # returns at once with a delivery report

    def handle(self, query: dict[str, list[str]], headers: Mapping[str, str], body: bytes,
               viewer: Viewer, peer: Peer | None = None) -> tuple[int, dict[str, Any]]:
        """Produce the request, wait for the broker, then (``wait``) for the decision."""
        parsed = parse_relay(headers, body, self.limit, self._names.__contains__)
        if isinstance(parsed, str):
            return 400, {"error": parsed}
        refusal = credential_refusal({k.lower(): v for k, v in headers.items()},
                                     self.service.views.private_jobs, time.time())
        if refusal is not None:
            self.refused.inc(refusal[0])
            return 401, {"error": f"{refusal[1]} [{refusal[0]}]; nothing was sent",
                         "reason": refusal[0]}
        wait = self.budgets.admit(peer)
        if wait > 0:
            self.refused.inc("RateLimited")
            return 429, {"error": "Rate limit exceeded, please retry momentarily "
                                  "[RateLimited]; nothing was sent (the relay's budget per "
                                  "user)", "reason": "RateLimited",
                         "retry_after_s": retry_after(wait)}
        delivery = _Delivery()
        try:
            self.producer.produce(self.topic, parsed.value, parsed.key,
                                  headers=list(parsed.headers), on_delivery=delivery)
        except BufferError:
            return 503, {"error": "the relay's producer queue is full; retry, or send to "
                                  "Kafka directly"}
        except Exception as exc:  # KafkaException: e.g. a message the broker cannot take
            return 503, {"error": f"could not produce the request: {exc}"}
        self._sent.set()  # the serving thread polls until its report is served
        if not delivery.done.wait(DELIVERY_S) or delivery.error:
            why = delivery.error or f"no acknowledgement within {DELIVERY_S:g} s"
            return 503, {"error": f"the broker did not take the request ({why}); it was not "
                                  "decided and may or may not arrive later"}
        sent = {"partition": delivery.partition, "offset": delivery.offset}
        if parsed.name not in _ANSWERED:
            return 200, {"sent": sent}
        ask = {"ids": [parsed.key.decode()], "nonces": [str(parsed.nonce)],
               **{k: v for k, v in query.items() if k in ("wait", "array")}}
        code, payload = decisions(self.service, ask, viewer)
        return code, {"sent": sent, **payload}
