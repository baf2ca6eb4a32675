"""Which heartbeats the health agent forwards for the runs they list, without faust.

The shard ends a run its node no longer runs (``scheduler.nodes.missing_runs``) only when it is
told what the node runs: a ``NodeResponding`` carrying the heartbeat's ``runs`` and ``exited``.
Forwarding every heartbeat would cost a shard-inbox record and a core decision per node every
third of the node timeout (3,000 a second at 10,000 nodes); :class:`RunsForwarding` forwards
only these (times are the shell's wall-clock seconds, passed in):

1. **a run stuck after its exit**: the heartbeat lists a run as ``exited`` (the node reported
   its end and waits for the scheduler's ``TERMINATE``) that its heartbeats have listed so for
   ``stuck_s`` or more — the shard should have ended it by then, so its report may be lost;
   again every ``again_s`` while it stays so, so the shard sees it still missing after its grace
   (``MissingRunGrace``). Normally the ``TERMINATE`` arrives within a second of the report and
   nothing is forwarded;
2. **the periodic reconciliation**: every node at least every ``reconcile_s`` (Slurm's
   periodic node registration, ``validate_jobs_on_node``), for what only the shard can see:
   runs it holds on a node that the node never listed or has dropped (a lost ``ReportEpilog``,
   a launch that never arrived); the shard needs two such forwards a grace apart to end one.

The first heartbeat of a node this agent has not seen (a start, a failover) is remembered, not
forwarded: its reconciliation falls due ``reconcile_s`` later (a failover does not send one
record per node at once). What :meth:`RunsForwarding.forwarded` is told also counts (the
agent forwards a node that answers again, health_watch rule 4, whatever this says).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

__all__ = ["RunsForwarding", "reconcile_s"]

RECONCILE_FACTOR = 30
"""``reconcile_s`` = this many node timeouts by default (300 s for the default 10 s: Slurm's
default ``SlurmdTimeout``)."""


def reconcile_s(timeout_s: float) -> float:
    """``SLUICE_RUNS_RECONCILE_S``, else 30 node timeouts: how often every node's heartbeat is
    forwarded to its shard at least."""
    text = os.environ.get("SLUICE_RUNS_RECONCILE_S", "")
    try:
        value = float(text) if text else 0.0
    except ValueError:
        value = 0.0
    return value if value > 0 else RECONCILE_FACTOR * timeout_s


@dataclass(slots=True)
class _Seen:
    forwarded_s: float
    exited_since: dict[str, float] = field(default_factory=dict)


@dataclass(slots=True)
class RunsForwarding:
    """The forwarding rules of one health agent (see the module)."""

    stuck_s: float
    again_s: float
    reconcile_s: float
    _nodes: dict[str, _Seen] = field(default_factory=dict)

    def due(self, node: str, exited: list[str], now_s: float) -> bool:
        """Whether the heartbeat of ``node`` heard at ``now_s`` listing ``exited`` is forwarded
        (the caller then calls :meth:`forwarded`)."""
        seen = self._nodes.get(node)
        if seen is None:
            self._nodes[node] = _Seen(now_s, dict.fromkeys(exited, now_s))
            return False
        seen.exited_since = {run: seen.exited_since.get(run, now_s) for run in exited}
        if now_s - seen.forwarded_s >= self.reconcile_s:
            return True
        stuck = any(now_s - since >= self.stuck_s for since in seen.exited_since.values())
        return stuck and now_s - seen.forwarded_s >= self.again_s

    def forwarded(self, node: str, now_s: float) -> None:
        """The agent forwarded a heartbeat of ``node`` at ``now_s``."""
        seen = self._nodes.setdefault(node, _Seen(now_s))
        seen.forwarded_s = now_s

    def forget(self) -> None:
        """The agent's partitions changed: every node is new again."""
        self._nodes.clear()
