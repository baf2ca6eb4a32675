"""What a node daemon sends: requests (signed) and heartbeats, and the reports whose delivery
failed sent again.

A request carries the daemon's credential (``RequestSigner``: docs/security.md). A report the
broker did not take in the end (librdkafka gave up after its own retries,
``message.timeout.ms``) is sent again, signed anew (a new request id and credential), up to
:data:`RESEND_TRIES` times: dropping it would leave its run RUNNING until the shard finds it
missing from the node's heartbeats. A report written twice is harmless: the shard decides the
second as a report of a run already ended.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from agents.auth.signer import RequestSigner
from schemas.writer import encode
from streams.topics import Topics

__all__ = ["RESEND_TRIES", "RESENT", "Outbox"]

log = logging.getLogger(__name__)

RESENT = frozenset({"ReportJobExit", "ReportProlog", "ReportEpilog", "ReportStepExit",
                    "ReportCommandRefused"})
"""The reports a failed delivery sends again (a registration is flushed and retried by its
caller; a heartbeat is superseded by the next)."""
RESEND_TRIES = 10
"""Sends of one report before it is dropped (each lasts librdkafka's ``message.timeout.ms``,
5 min by default)."""


class Outbox:
    """One daemon's sends through its producer (the daemon flushes and polls it)."""

    def __init__(self, producer: Any, signer: RequestSigner, topics: Topics, node: str) -> None:
        self._producer, self._signer, self._topics, self._node = producer, signer, topics, node
        # reports to send again: (key, record name, record, tries so far)
        self._undelivered: list[tuple[str, str, dict[str, Any], int]] = []

    def send(self, topic: str, key: str, name: str, record: dict[str, Any],
             tries: int = 0, delivered: Callable[[bool], None] | None = None) -> None:
        """Produce one record; a request is signed, a report watched for its delivery;
        ``delivered`` is called (from ``poll``/``flush``) with its delivery report: True once
        the broker has taken it, False when librdkafka gave up (a heartbeat: the runs' lease,
        ``agents.node.fence``)."""
        value = encode(name, record)
        headers: list[tuple[str, str | bytes | None]] = []
        extra: dict[str, Any] = {}
        if delivered is not None:
            extra["on_delivery"] = lambda error, _message: delivered(error is None)
        if topic == self._topics.requests:
            headers.extend(self._signer.headers(value))
            if name in RESENT:
                extra["on_delivery"] = self._on_delivery(key, name, record, tries)
        self._producer.produce(topic, value, key.encode(), headers=headers, **extra)
        self._producer.poll(0)

    def use(self, producer: Any) -> None:
        """Send through ``producer`` from now on (a replaced one: agents.node.link_watch)."""
        self._producer = producer

    def resend_undelivered(self) -> None:
        """Send again the reports whose delivery failed (once a pass, after ``poll``)."""
        waiting, self._undelivered = self._undelivered, []
        for key, name, record, tries in waiting:
            self.send(self._topics.requests, key, name, record, tries)

    def _on_delivery(self, key: str, name: str, record: dict[str, Any],
                     tries: int) -> Callable[[Any, Any], None]:
        def delivered(error: Any, _message: Any) -> None:
            if error is None:
                return
            if tries + 1 >= RESEND_TRIES:
                log.error("node %s: %s of run %s not delivered after %d tries, dropped: %s",
                          self._node, name, record.get("run_sluid"), tries + 1, error)
                return
            log.warning("node %s: %s of run %s not delivered (%s): sending it again",
                        self._node, name, record.get("run_sluid"), error)
            self._undelivered.append((key, name, record, tries + 1))

        return delivered
