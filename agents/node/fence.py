"""Fencing a node daemon cut off from the broker: its runs live on a lease that only delivered
heartbeats renew.

The shard declares a node DOWN once no heartbeat of it has arrived for the node timeout ``T``
(``SLUICE_NODE_TIMEOUT``), counting each heartbeat at its send time but never earlier than a
tenth of ``T`` before its arrival (``agents.health_watch``, rule 0). So no node is declared
DOWN sooner than ``0.9 T`` after the send time of the newest heartbeat the broker took, and
with expedited requeue its job may start elsewhere right then. A daemon that runs on but whose
heartbeats no longer reach the broker must have killed its runs before that.

:class:`HeartbeatLease` keeps the send time of the newest heartbeat whose delivery the broker
confirmed (librdkafka's delivery report: :meth:`HeartbeatLease.delivered`) and grants the runs'
supervisors a lease until that time plus the fence interval ``F`` (:func:`fence_interval_s`,
``0.7 T``): the daemon feeds each supervisor the seconds left (:meth:`HeartbeatLease.grant`),
and a supervisor whose lease runs out kills its run by itself, even when the daemon is stopped
or hung (``agents.node.supervise``). The margin to the earliest DOWN is ``0.2 T`` (2 s at the
default 10 s timeout) for the supervisors' kill (0.3 to 0.6 s measured under heavy load,
``benchmarks/bench_supervisor.py``). A delivery confirmed after the granted deadline passed
does not revive the runs: they are being killed (the daemon reports them ended, ``FENCED``).

Times are ``time.monotonic()`` seconds, passed in (the tests pass their own).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["EARLIEST_DOWN_SHARE", "FENCED", "FENCE_SHARE", "MIN_FENCE_BEATS", "FenceConfigError",
           "HeartbeatLease", "fence_interval_s"]

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


@dataclass
class HeartbeatLease:
    """The runs' lease: until ``fence_s`` after the send time of the newest delivered heartbeat.

    ``basis`` starts at the daemon's start (a daemon that never gets a heartbeat through holds
    no run past ``fence_s``); ``granted`` is the deadline last given to the supervisors;
    ``fenced_at`` the deadline that passed, while the daemon is fenced."""

    fence_s: float
    basis: float
    granted: float = 0.0
    fenced_at: float | None = None

    def __post_init__(self) -> None:
        self.granted = self.basis + self.fence_s

    def delivered(self, sent_at: float) -> None:
        """The broker took the heartbeat sent at ``sent_at`` (a delivery report without error)."""
        self.basis = max(self.basis, sent_at)

    def grant(self, now: float) -> float:
        """The seconds of lease to give the supervisors now (≤ 0: fenced, they kill their runs).

        While the deadline last granted has not passed, it moves to the basis plus ``fence_s``.
        Once it has, the supervisors are killing their runs and the daemon is fenced
        (``fenced_at``); a later delivery of a heartbeat sent before the fence does not undo
        that, and one sent after it ends the fence (the shard hears the node again): new runs,
        and the live ones, get the new deadline."""
        if self.fenced_at is None and now >= self.granted:
            self.fenced_at = self.granted
        if self.fenced_at is None:
            self.granted = max(self.granted, self.basis + self.fence_s)
        elif self.basis > self.fenced_at and now < self.basis + self.fence_s:
            self.fenced_at = None
            self.granted = self.basis + self.fence_s
        return self.granted - now

    def expired(self, now: float) -> bool:
        """Whether the deadline last granted has passed (the supervisors kill their runs)."""
        return now >= self.granted
