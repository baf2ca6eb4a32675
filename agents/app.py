"""The faust worker: wires the intake, the shard scheduler and the clock into one app.

``create_app(settings)`` is the one place dependencies are wired (the agents themselves live in
their own modules). The worker consumes with at-least-once semantics; every agent is idempotent
on redelivery (see ``agents.shard_runner``).
"""

from __future__ import annotations

import logging
import os
from typing import Any

import faust

from agents import fetch_guard
from agents.clock import install_clock
from agents.forwarding import PRODUCER_MAX_REQUEST_BYTES
from agents.health import install_health
from agents.intake import install_intake
from agents.quiet_faust import QuietApp, QuietMonitor
from agents.shard_agent import install_shard_agent
from streams.security import faust_credentials
from streams.settings import Settings
from streams.topics import Topics

__all__ = ["WorkerContext", "create_app"]

log = logging.getLogger(__name__)


class WorkerContext:
    """What the agents of one worker share: settings, topics and faust topic handles."""

    def __init__(self, app: faust.App, settings: Settings) -> None:
        self.app = app
        self.settings = settings
        self.topics = Topics(settings)
        raw: dict[str, Any] = {
            "key_type": bytes, "value_type": bytes,
            "key_serializer": "raw", "value_serializer": "raw",
        }
        self.requests = app.topic(self.topics.requests, **raw)
        self.inbox = app.topic(self.topics.shard_inbox, **raw)
        self.dead_letters = app.topic(self.topics.dead_letters, **raw)


def create_app(settings: Settings, batch_max: int = 2000) -> faust.App:
    """The faust app of one Sluice worker process."""
    fetch_guard.install()  # an unreadable record batch becomes a dead letter, not a crash loop
    brokers = [f"kafka://{server}" for server in settings.bootstrap.split(",")]
    # How long the group waits before a silent worker's shards move (SIGKILL → takeover); the
    # broker's group.min.session.timeout.ms bounds it (6 s by default, 2 s on the bundled one).
    session_timeout_s = float(os.environ.get("SLUICE_WORKER_SESSION_TIMEOUT", "10"))
    datadir = settings.home / "worker" / "faust"
    datadir.mkdir(parents=True, exist_ok=True)
    app = QuietApp(
        f"{settings.prefix}-worker",
        broker=brokers,
        broker_credentials=faust_credentials(),
        store="rocksdb://",
        datadir=str(datadir),
        topic_partitions=settings.partitions,
        topic_replication_factor=settings.replication,
        processing_guarantee="at_least_once",
        consumer_auto_offset_reset="earliest",
        broker_session_timeout=session_timeout_s,
        # three heartbeats a session (Kafka's advice: at most a third of it), not five: the
        # session timeout, which is what moves a dead worker's clock, is unchanged
        broker_heartbeat_interval=max(0.5, session_timeout_s / 3),
        broker_commit_every=1000,
        # faust consumes no records (the intake, the shard inbox and the heartbeats have their
        # own readers; its group holds only the empty leader topic, ``agents.quiet_faust``):
        # its commit timer found nothing to commit, every 5 s; once a minute now.
        broker_commit_interval=60.0,
        web_enabled=False,
        producer_acks=-1,
        producer_partitioner=None,
        producer_max_request_size=PRODUCER_MAX_REQUEST_BYTES,
        monitor=QuietMonitor(),
    )
    context = WorkerContext(app, settings)
    install_intake(context, batch_max, session_timeout_s=session_timeout_s)
    install_shard_agent(context, batch_max, session_timeout_s=session_timeout_s)
    install_clock(context)
    install_health(context, session_timeout_s)
    return app
