"""Fencing a node daemon cut off from the broker: its runs live on a lease that only delivered
heartbeats renew.

The shard declares a node DOWN once no heartbeat of it has arrived for the node timeout ``T``
(``SLUICE_NODE_TIMEOUT``), counting each heartbeat at its send time but never earlier than a
tenth of ``T`` before its arrival (``agents.health_watch``, rule 0). So no node is declared
DOWN sooner than ``0.9 T`` after the send time of the newest heartbeat the broker took. A job
of the node starts elsewhere only when the shard requeues it, and not at once: the run's
``LaunchRun.restart_after_ms`` (its **fence horizon** ``H``, :func:`run_horizon_s`) says how
long after the DOWN it could — 0 with expedited requeue, the requeue delay (120 s by default)
for a requeueable job, never for a job that is not requeued. A daemon that runs on but whose
heartbeats no longer reach the broker (cut off, or its loop stalled) must have killed each run
before its ``0.9 T + H``.

:class:`HeartbeatLease` keeps the send time of the newest heartbeat whose delivery the broker
confirmed (librdkafka's delivery report: :meth:`HeartbeatLease.delivered`) and grants the runs'
supervisors a lease until that time plus the fence interval ``F`` (:func:`fence_interval_s`,
``0.7 T``): the daemon feeds each supervisor the seconds left (:meth:`HeartbeatLease.grant`),
the supervisor adds its run's horizon (``agents.node.supervised``), and a supervisor whose
lease runs out kills its run by itself, even when the daemon is stopped or hung
(``agents.node.supervise``); a run never fenced has no lease. The margin to the earliest start
elsewhere is ``0.2 T`` (2 s at the default 10 s timeout) for the supervisors' kill (0.3 to 0.6
s measured under heavy load, ``benchmarks/bench_supervisor.py``). So a broker outage for every
node, or a stalled daemon loop, kills only what could really run twice: after ``F`` the
expedited jobs, after ``F`` plus the requeue delay the requeueable ones, never the others. A
run whose deadline passed is fed no more (its supervisor is killing it; the daemon reports it
ended, ``FENCED``), even if a heartbeat's delivery comes later.

Times are ``time.monotonic()`` seconds, passed in (the tests pass their own).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["EARLIEST_DOWN_SHARE", "FENCED", "FENCE_SHARE", "MIN_FENCE_BEATS", "FenceConfigError",
           "HeartbeatLease", "fence_interval_s", "run_horizon_s"]

EARLIEST_DOWN_SHARE = 0.9
"""The earliest the shard can declare a node DOWN, as a share of the node timeout, after the
send time of the newest heartbeat the broker took (a heartbeat counts no earlier than a tenth of
the timeout before its arrival: ``agents.health_watch``, rule 0)."""
FENCE_SHARE = 0.7
"""The fence interval as a share of the node timeout: ``EARLIEST_DOWN_SHARE - FENCE_SHARE``
(a fifth of the timeout) is the margin for the supervisors' kill before the node can be DOWN."""
MIN_FENCE_BEATS = 2.0
"""A fence interval shorter than this many heartbeats is refused: one heartbeat late or lost
must not fence a healthy node."""
FENCED = "NodeFenced"
"""The reason (``kill_reason``, the ``ReportJobExit`` detail's head) of a run its supervisor
killed because no heartbeat of the daemon was delivered for the fence interval."""


class FenceConfigError(ValueError):
    """The node timeout and heartbeat interval leave no fence interval that is both shorter than
    the time the shard needs to declare the node DOWN and long enough to ride out a late
    heartbeat."""


def fence_interval_s(timeout_s: float, heartbeat_s: float) -> float:
    """The fence interval for a node timeout and heartbeat interval: ``FENCE_SHARE`` of the
    timeout; raises :class:`FenceConfigError` when that is shorter than ``MIN_FENCE_BEATS``
    heartbeats (the default heartbeat, a third of the timeout, gives 2.1)."""
    if not timeout_s > 0 or not heartbeat_s > 0:
        raise FenceConfigError(f"node timeout {timeout_s:g} s and heartbeat {heartbeat_s:g} s "
                               "must be positive")
    fence_s = FENCE_SHARE * timeout_s
    if fence_s < MIN_FENCE_BEATS * heartbeat_s:
        raise FenceConfigError(
            f"a heartbeat every {heartbeat_s:g} s is too slow for the node timeout of "
            f"{timeout_s:g} s (SLUICE_NODE_TIMEOUT): the runs are fenced {fence_s:g} s after "
            f"the last delivered heartbeat ({FENCE_SHARE:g} of the timeout, so they are killed "
            f"before the node can be declared DOWN), which must span at least "
            f"{MIN_FENCE_BEATS:g} heartbeats; heartbeat every "
            f"{fence_s / MIN_FENCE_BEATS:g} s or less (--heartbeat)")
    return fence_s


def run_horizon_s(launch: Mapping[str, Any]) -> float | None:
    """A run's fence horizon from its ``LaunchRun.restart_after_ms`` (seconds): how long after
    the shard declares the node DOWN the job could start elsewhere — its supervisor kills it
    that long after the fence interval, never sooner. None for a job that is not requeued
    (-1: it ends ``NODE_FAIL`` and never starts elsewhere, so it is never fenced); 0 for an
    expedited job and for a launch without the field (a shard from before it: fenced as
    before, the safe side)."""
    ms = launch.get("restart_after_ms", 0)
    if not isinstance(ms, int) or isinstance(ms, bool):
        return 0.0
    return None if ms < 0 else ms / 1000


@dataclass
class HeartbeatLease:
    """The daemon's lease: until ``fence_s`` after the send time of the newest delivered
    heartbeat; each run's lease is that plus its fence horizon (:func:`run_horizon_s`).

    ``basis`` starts at the daemon's start (a daemon that never gets a heartbeat through holds
    no run past ``fence_s`` plus its horizon); ``granted`` is the deadline last given to the
    supervisors (it never moves back); ``lapsed_at`` the deadline that passed, while no
    heartbeat sent since has been delivered (the runs with no horizon are being fenced)."""

    fence_s: float
    basis: float
    granted: float = 0.0
    lapsed_at: float | None = None

    def __post_init__(self) -> None:
        self.granted = self.basis + self.fence_s

    def delivered(self, sent_at: float) -> None:
        """The broker took the heartbeat sent at ``sent_at`` (a delivery report without error)."""
        self.basis = max(self.basis, sent_at)

    def grant(self, now: float) -> float:
        """The seconds of lease to give the supervisors now, before their horizons (≤ 0: the
        deadline has passed; the runs whose horizon has passed too are being fenced).

        The deadline moves to the basis plus ``fence_s``: any delivered heartbeat, even one sent
        before the deadline passed, moves it (the shard cannot declare the node DOWN sooner than
        ``0.9 T`` after the send time of any heartbeat the broker took), for the runs whose own
        deadline has not passed — the daemon feeds no more a run whose deadline passed: its
        supervisor is killing it (``RunTable.fence``)."""
        self.granted = max(self.granted, self.basis + self.fence_s)
        if self.lapsed_at is None and now >= self.granted:
            self.lapsed_at = self.granted
        elif self.lapsed_at is not None and now < self.granted:
            self.lapsed_at = None
        return self.granted - now

    def expired(self, now: float, horizon_s: float | None = 0.0) -> bool:
        """Whether the deadline last granted plus ``horizon_s`` has passed (None: never)."""
        return horizon_s is not None and now >= self.granted + horizon_s
